"""ask_user_question and the question contract shared with the RPC bridge.

`validate_questions` is the one validation of the spec's "UI question bridge": 1-4
questions, each with non-empty `question` and `header` and 2-4 options with non-empty
`label` and `description`; `multiSelect: true` and option `preview` are refused. It
raises `QuestionError` (an `InvalidParams`, so the RPC layer can answer -32602 with it)
with the original's messages, and returns the normalized questions
``[{question, header, options: [{label, description}]}]`` that go into ``ui/question``.

`normalize_answers` turns whatever the UI sent in ``ui/answerQuestion`` into
``[{question, answer}]`` strings. The tool answers ``Cancelled.`` when the bridge returns
None or ``[]`` (the user dismissed the questions).

The handler runs on the turn's worker thread and blocks inside `ctx.ask_user` until the UI
answers; the bridge must return (None) when the turn's cancel token fires. If the token
fired, the tool raises `kward.errors.Canceled` whatever the bridge returned.
"""

from __future__ import annotations

import logging
from typing import Any

from kward.errors import InvalidParams
from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec

log = logging.getLogger(__name__)

MIN_QUESTIONS, MAX_QUESTIONS = 1, 4
MIN_OPTIONS, MAX_OPTIONS = 2, 4


class QuestionError(InvalidParams):
    """A question request breaks the contract; the message is the original's text."""


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value).strip())


def validate_questions(questions: object) -> list[dict[str, Any]]:
    """Validate and normalize a question list (see the module doc)."""
    if not isinstance(questions, list):
        raise QuestionError("questions must be an array")
    if not MIN_QUESTIONS <= len(questions) <= MAX_QUESTIONS:
        raise QuestionError("ui/question requires 1-4 questions")
    out = []
    for qi, question in enumerate(questions, 1):
        if not isinstance(question, dict):
            raise QuestionError(f"question {qi} must be an object")
        if question.get("multiSelect") not in (None, False):
            raise QuestionError(f"question {qi} multiSelect is unsupported")
        text, header = _text(question, "question"), _text(question, "header")
        if not text or not header:
            raise QuestionError(f"question {qi} requires question and header")
        options = question.get("options")
        if not isinstance(options, list):
            raise QuestionError(f"question {qi} options must be an array")
        if not MIN_OPTIONS <= len(options) <= MAX_OPTIONS:
            raise QuestionError(f"question {qi} requires 2-4 options")
        normalized = []
        for oi, option in enumerate(options, 1):
            if not isinstance(option, dict):
                raise QuestionError(f"question {qi} option {oi} must be an object")
            if option.get("preview") is not None:
                raise QuestionError(f"question {qi} preview is unsupported")
            label, description = _text(option, "label"), _text(option, "description")
            if not label or not description:
                raise QuestionError(f"question {qi} option {oi} requires label and description")
            normalized.append({"label": label, "description": description})
        out.append({"question": text, "header": header, "options": normalized})
    return out


def tool_error_message(message: str) -> str:
    """The model-facing wording of a `QuestionError` message (the original's mapping)."""
    if message == "questions must be an array":
        return "ask_user_question requires questions"
    if message == "ui/question requires 1-4 questions":
        return "ask_user_question requires 1 to 4 questions"
    return (message.replace("2-4", "2 to 4")
            .replace("multiSelect is unsupported", "uses unsupported multiSelect")
            .replace("preview is unsupported", "uses unsupported preview"))


def normalize_answers(answers: object, questions: list[dict[str, Any]] | None = None) -> list[dict[str, str]] | None:
    """``[{question, answer}]`` strings from a UI answer list; None stays None.

    An entry may be a ``{question, answer}`` object or a bare string (then paired with
    the question at the same index, when `questions` is given).
    """
    if answers is None:
        return None
    if not isinstance(answers, list):
        answers = [answers]
    out = []
    for i, entry in enumerate(answers):
        asked = questions[i]["question"] if questions and i < len(questions) else ""
        if isinstance(entry, dict):
            question = entry.get("question")
            answer = entry.get("answer")
            out.append({"question": asked if question is None else str(question),
                        "answer": "" if answer is None else str(answer)})
        else:
            out.append({"question": asked, "answer": "" if entry is None else str(entry)})
    return out


def ask_user_question(args: Args, ctx: ToolContext) -> ToolResult:
    """Validate, ask through `ctx.ask_user`, and answer ``question: answer`` lines."""
    if ctx.ask_user is None:
        raise ToolError("ask_user_question requires interactive prompt support.")
    try:
        questions = validate_questions(args.data.get("questions"))
    except QuestionError as exc:
        raise ToolError(tool_error_message(exc.message) + ".") from exc
    ctx.cancel.raise_if_cancelled()
    answers = ctx.ask_user(questions)
    ctx.cancel.raise_if_cancelled()
    normalized = normalize_answers(answers, questions)
    if not normalized:
        return ToolResult.text("Cancelled.")
    return ToolResult.text("\n".join(f"{a['question']}: {a['answer']}" for a in normalized))


_OPTION = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "Choice explanation."},
        "label": {"type": "string", "description": "Choice label."},
    },
    "required": ["description", "label"],
    "additionalProperties": False,
}
_QUESTION = {
    "type": "object",
    "properties": {
        "header": {"type": "string", "description": "Short label shown in the overlay."},
        "options": {"type": "array", "minItems": MIN_OPTIONS, "maxItems": MAX_OPTIONS, "items": _OPTION},
        "question": {"type": "string", "description": "The question to ask."},
    },
    "required": ["header", "options", "question"],
    "additionalProperties": False,
}

SPECS = (
    ToolSpec(
        name="ask_user_question",
        description=(
            "Ask the user one to four structured clarification questions in interactive mode. "
            "Supports single-select choices and custom typed answers."
        ),
        properties={
            "questions": {"type": "array", "minItems": MIN_QUESTIONS, "maxItems": MAX_QUESTIONS, "items": _QUESTION},
        },
        required=("questions",),
        handler=ask_user_question,
        needs_ui=True,
        read_only=True,
    ),
)
