"""ask_user_question: the contract's validation (before the UI is asked), answers,
dismissal ([] and None), turn cancellation while waiting, and no-UI behaviour."""

import threading

import pytest

from kward.errors import Canceled, InvalidParams
from kward.tools.question import QuestionError, normalize_answers, validate_questions
from kward.tools.registry import default_registry
from lib.tools_helpers import call, make_ctx


def q(text="Which DB?", header="DB", options=None, **extra):
    if options is None:
        options = [{"label": "pg", "description": "Postgres"}, {"label": "lite", "description": "SQLite"}]
    return {"question": text, "header": header, "options": options, **extra}


class Bridge:
    """A fake UI bridge recording what it was asked and returning a fixed answer."""

    def __init__(self, answers):
        self.answers = answers
        self.asked = []

    def __call__(self, questions):
        self.asked.append(questions)
        return self.answers


@pytest.fixture
def bridge():
    return Bridge([{"question": "Which DB?", "answer": "pg"}])


@pytest.fixture
def ctx(tmp_path, bridge):
    return make_ctx(tmp_path / "ws", ask_user=bridge)


def test_answered(ctx, bridge):
    r = call(ctx, "ask_user_question", questions=[q(text="  Which DB? ")])
    assert (r.content, r.is_error) == ("Which DB?: pg", False)
    assert bridge.asked == [[q()]]  # normalized (trimmed) questions reach the UI


def test_several_answers_and_bare_strings(ctx, bridge):
    bridge.answers = [{"question": "Which DB?", "answer": "pg"}, "blue"]
    r = call(ctx, "ask_user_question", questions=[q(), q(text="Color?", header="C")])
    assert r.content == "Which DB?: pg\nColor?: blue"


@pytest.mark.parametrize("answers", [[], None])
def test_dismissed_is_cancelled(ctx, bridge, answers):
    bridge.answers = answers
    r = call(ctx, "ask_user_question", questions=[q()])
    assert (r.content, r.is_error) == ("Cancelled.", True)


@pytest.mark.parametrize("questions, message", [
    (None, "Error: ask_user_question requires questions."),
    ("x", "Error: ask_user_question requires questions."),
    ([], "Error: ask_user_question requires 1 to 4 questions."),
    ([q()] * 5, "Error: ask_user_question requires 1 to 4 questions."),
    (["x"], "Error: question 1 must be an object."),
    ([q(), q(header="")], "Error: question 2 requires question and header."),
    ([q(options="x")], "Error: question 1 options must be an array."),
    ([q(options=[{"label": "a", "description": "b"}])], "Error: question 1 requires 2 to 4 options."),
    ([q(options=[{"label": "a", "description": "b"}] * 5)], "Error: question 1 requires 2 to 4 options."),
    ([q(options=["a", "b"])], "Error: question 1 option 1 must be an object."),
    ([q(options=[{"label": "a", "description": "b"}, {"label": "a"}])],
     "Error: question 1 option 2 requires label and description."),
    ([q(multiSelect=True)], "Error: question 1 uses unsupported multiSelect."),
    ([q(options=[{"label": "a", "description": "b", "preview": "x"}, {"label": "c", "description": "d"}])],
     "Error: question 1 uses unsupported preview."),
])
def test_validation_errors_before_asking(ctx, bridge, questions, message):
    r = call(ctx, "ask_user_question", questions=questions)
    assert (r.content, r.is_error) == (message, True)
    assert bridge.asked == []


def test_multiselect_false_is_accepted(ctx):
    assert not call(ctx, "ask_user_question", questions=[q(multiSelect=False)]).is_error


def test_validate_questions_for_the_rpc_layer():
    assert validate_questions([q(extra="ignored")]) == [q()]
    with pytest.raises(QuestionError) as info:
        validate_questions([q(multiSelect=True)])
    assert isinstance(info.value, InvalidParams)
    assert info.value.message == "question 1 multiSelect is unsupported"
    with pytest.raises(QuestionError, match="^ui/question requires 1-4 questions$"):
        validate_questions([])


def test_normalize_answers():
    qs = [q(), q(text="Color?")]
    assert normalize_answers(None, qs) is None
    assert normalize_answers([], qs) == []
    assert normalize_answers([{"question": "Which DB?", "answer": 3}, "red"], qs) == [
        {"question": "Which DB?", "answer": "3"}, {"question": "Color?", "answer": "red"}]
    assert normalize_answers([{"answer": "x"}], qs) == [{"question": "Which DB?", "answer": "x"}]


def test_turn_cancel_while_waiting_raises(tmp_path):
    waiting = threading.Event()

    def blocking_bridge(questions):
        # what the RPC bridge does: block until answered or the turn's token fires
        released = threading.Event()
        ctx.cancel.on_cancel(released.set)
        waiting.set()
        released.wait(10)
        return None

    ctx = make_ctx(tmp_path / "ws", ask_user=blocking_bridge)
    canceller = threading.Thread(target=lambda: waiting.wait(10) and ctx.cancel.cancel())
    canceller.start()
    try:
        with pytest.raises(Canceled):
            call(ctx, "ask_user_question", questions=[q()])
    finally:
        canceller.join(10)


def test_not_available_without_ui(tmp_path):
    ctx = make_ctx(tmp_path / "ws")
    r = call(ctx, "ask_user_question", questions=[q()])
    assert (r.content, r.is_error) == ("Unknown tool: ask_user_question", True)
    names = [s["function"]["name"] for s in default_registry().schemas(False)]
    assert "ask_user_question" not in names
    assert "ask_user_question" in [s["function"]["name"] for s in default_registry().schemas(True)]
