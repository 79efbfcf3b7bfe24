"""What the runtime reports to its face besides turn events, through the `notify`
callable it was built with (the RPC face turns each into a notification).

A notice is sent from the thread where the thing happened (a turn's worker for a
question, a login's own thread for a finished login) and the callable may block briefly
(the face paces its output)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kward.auth.login import LoginState
    from kward.compaction.events import CompactionEvent


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
class SessionEvent:
    """Something happened to a session outside a turn's events: a compaction started
    (`type` compactionStart, payload `kward.compaction.run.CompactionStart`) or ended
    (compactionEnd, `CompactionEnd`). Sent from the thread that compacts (a worker, or
    the turn's worker for an automatic compaction)."""

    session_id: str
    type: str
    payload: CompactionEvent
    timestamp: str


#: What `notify` receives.
Notice = QuestionAsked | LoginFinished | SessionEvent
