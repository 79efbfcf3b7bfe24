"""The UI question broker: a tool asks, the UI answers through another request.

`ask` runs on a turn's worker thread: it registers the question, calls `notify(session_id,
request_id, questions)` (the RPC layer sends `ui/question`) and blocks until `answer` is
called from the dispatcher, or the turn's cancel token fires (then it returns None, which
the tool reports as cancelled and the turn ends canceled). `answer` validates that the
request is pending in that session. Thread-safe; `_cond` guards the pending table.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from kward.cancel import CancelToken
from kward.errors import InvalidParams
from kward.tools.question import normalize_answers


@dataclass
class _Pending:
    session_id: str
    questions: list[dict[str, Any]]
    answers: list[dict[str, str]] | None = None
    done: bool = False


class QuestionBroker:
    def __init__(self, notify: Callable[[str, str, list[dict[str, Any]]], None]):
        self._notify = notify
        self._cond = threading.Condition()
        self._pending: dict[str, _Pending] = {}

    def ask(self, session_id: str, questions: list[dict[str, Any]], cancel: CancelToken) -> list[dict[str, str]] | None:
        request_id = str(uuid.uuid4())
        pending = _Pending(session_id, questions)
        with self._cond:
            self._pending[request_id] = pending

        def wake() -> None:
            with self._cond:
                pending.done = True
                self._cond.notify_all()

        unregister = cancel.on_cancel(wake)
        try:
            self._notify(session_id, request_id, questions)
            with self._cond:
                while not pending.done:
                    self._cond.wait()
                return None if cancel.cancelled else pending.answers
        finally:
            unregister()
            with self._cond:
                self._pending.pop(request_id, None)

    def waiting(self) -> int:
        """How many questions wait for an answer now (their turns wait for the user)."""
        with self._cond:
            return sum(1 for p in self._pending.values() if not p.done)

    def pending(self, session_id: str) -> list[tuple[str, list[dict[str, Any]]]]:
        """The questions of `session_id` still waiting for an answer: (request id, questions)."""
        with self._cond:
            return [(rid, p.questions) for rid, p in self._pending.items()
                    if p.session_id == session_id and not p.done]

    def answer(self, session_id: str, request_id: str, answers: object) -> None:
        """Deliver the UI's answers; `[]` (or null) means the user dismissed the questions."""
        with self._cond:
            pending = self._pending.get(request_id)
            if pending is None or pending.session_id != session_id or pending.done:
                raise InvalidParams(f"Unknown question request: {request_id}", reason="question_not_found",
                                    data={"questionRequestId": request_id})
            pending.answers = normalize_answers(answers, pending.questions) or []
            pending.done = True
            self._cond.notify_all()
