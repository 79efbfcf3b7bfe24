"""What the runtime reports to its face besides turn events, through the `notify`
callable it was built with (the RPC face turns each into a notification).

A notice is sent from the thread where the thing happened (a turn's worker for a
question, a login's own thread for a finished login, the appending thread for a session
change). A `SessionEvent` may be reported under a session's lock: the callable must not
block for it (the RPC face queues it without waiting); for the other notices it may
block briefly (the face paces its output)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.hookruns import HookNotice
    from kward.auth.login import LoginState
    from kward.compaction.events import CompactionEnd, CompactionStart
    from kward.model import Usage


@dataclass(frozen=True)
class QuestionAsked:
    """A tool of a running turn asks the user; the turn waits for
    `Runtime.answer_question(session_id, request_id, answers)` or its cancellation."""

    session_id: str
    request_id: str
    questions: list[dict[str, Any]]


@dataclass(frozen=True)
class LoginFinished:
    """An OAuth login left ``pending`` (completed, failed or cancelled): its final state
    (never a secret)."""

    login: "LoginState"


@dataclass(frozen=True)
class SessionUpdate:
    """sessionUpdated: the session's name changed (`name` None: cleared); `path` is its file."""

    name: str | None
    path: str


#: The payload of a SessionEvent (by its type): compactionStart `CompactionStart`,
#: compactionEnd `CompactionEnd`, sessionUpdated `SessionUpdate`, usageUpdated `Usage`
#: (the session's cumulative usage, `OpenSession.spent`).
SessionPayload = Union["CompactionStart", "CompactionEnd", SessionUpdate, "Usage"]


@dataclass(frozen=True)
class SessionEvent:
    """Something happened to a session outside a turn's events: a compaction started
    (`type` compactionStart) or ended (compactionEnd), sent from the thread that compacts
    (a worker, or the turn's worker for an automatic compaction); this process changed its
    name (sessionUpdated) or its cumulative usage (usageUpdated: a model call or a
    compaction was stored), sent from the appending thread under the session's lock.
    `session_id` is one RPC id on the session's file (a change is reported once for each
    open id)."""

    session_id: str
    type: str
    payload: SessionPayload
    timestamp: str


@dataclass(frozen=True)
class RuntimeChanged:
    """What a face announced at start (`Runtime.info()`) may have changed: a model,
    provider or setting was set, config.json was updated through the runtime, credentials
    changed (a login or logout) or the runtime reloaded. Sent from the thread that changed
    it, after the change."""


#: What `notify` receives (a `HookNotice`: a command hook's run started or completed, from
#: the turn's thread: `kward.agent.hookruns`).
Notice = Union[QuestionAsked, LoginFinished, SessionEvent, RuntimeChanged, "HookNotice"]
