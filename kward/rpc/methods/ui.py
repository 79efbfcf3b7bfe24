"""ui/answerQuestion: the UI's answer to a `ui/question` notification."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.ui import UiAnswerQuestionResult


def answer_question(call: Call) -> UiAnswerQuestionResult:
    p = call.params
    session_id = p.text("sessionId", required=True)
    request_id = p.text("questionRequestId", required=True)
    if "answers" not in p.raw:
        p.array("answers", required=True)  # -32602 naming the param
    answers = p.array("answers", [])  # null, like [], means the user dismissed the questions
    call.runtime.answer_question(session_id, request_id, answers)
    return {"ok": True}
