"""One turn: what it was started with, its state, its events (`Turn`), and the error a
failed turn reports (`turn_error`). Scheduled by `kward.agent.scheduler.TurnManager`.

Thread contract: the status fields change under `Turn.lock` (the manager's dispatcher
and the turn's worker both touch them); `emit` may be called from any thread (the
EventLog sequences).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal

from kward.agent.eventlog import EventLog
from kward.cancel import CancelToken
from kward.errors import as_kward_error
from kward.model import EventPayload, ImagePart, TurnError, TurnEvent
from kward.steering import SteeringInbox

if TYPE_CHECKING:  # pragma: no cover
    from kward.sessions.handle import SessionHandle

#: A turn's status: queued, then running, then one of TERMINAL.
TurnStatus = Literal["queued", "running", "completed", "failed", "canceled"]
TERMINAL: tuple[TurnStatus, ...] = ("completed", "failed", "canceled")


@dataclass
class Turn:
    id: str
    session_id: str  # the RPC id the turn was started through
    input: str
    attachments: list[ImagePart]
    created_at: str
    events: EventLog
    session: SessionHandle = field(repr=False)  # what it was started through
    publish: Callable[[TurnEvent], None] = field(repr=False)  # its event sink
    status: TurnStatus = "queued"
    started_at: str | None = None
    finished_at: str | None = None
    cancel_requested: bool = False
    error: TurnError | None = None
    cancel: CancelToken = field(default_factory=CancelToken)
    steering: SteeringInbox | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. traceparent for model requests
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    compacting: bool = False  # an automatic compaction runs in it now (set by its worker, read by any thread)
    announced: bool = False  # turnFinished was emitted (set under TurnManager._lock)
    display: str | None = None  # what the user typed, when `input` is its expansion (a prompt template)

    def emit(self, type_: str, payload: EventPayload, *, wait: bool = True) -> None:
        """One event of the turn: `payload` is the typed payload of `type_` (kward.model)."""
        self.events.emit(type_, payload, wait=wait)


def turn_error(exc: BaseException) -> TurnError:
    """A failed turn's error: converted like an RPC error (`errors.as_kward_error`), so an
    OSError says what the OS said about which path; `data` holds the error's extra fields."""
    err = as_kward_error(exc)
    if err is None:
        return TurnError(f"Internal error: {type(exc).__name__}", type(exc).__name__, "internal_error")
    return TurnError(err.message, type(err).__name__, err.reason, dict(err.data) if err.data else None)
