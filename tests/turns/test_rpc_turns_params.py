"""Bad params of the turn, question-bridge and runtime methods over the real `kward rpc`
(-32602 naming the problem, with a stable reason), image attachments (every violation, and a
valid image stored in the user message) and the input size limit."""

import base64

import pytest

from lib.rpc_client import RpcClient
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()
TEN_MIB = 10 * 1024 * 1024


def invalid(k, method, params, reason="invalid_params", contains=None):
    err = k.error(method, params)
    assert err.code == -32602, (method, params, err.error)
    assert err.reason == reason, (method, params, err.error)
    assert err.error["data"]["errorClass"]
    if contains is not None:
        assert contains in err.error["message"], (err.error["message"], contains)
    return err


def test_bad_params_of_every_turn_method(kward):
    k = kward([[text("ok")]])
    s = k.session()
    sid = s["id"]
    invalid(k, "turns/start", None, contains="'sessionId' is required")
    invalid(k, "turns/start", {"input": "hi"}, contains="'sessionId' is required")
    invalid(k, "turns/start", {"sessionId": 7, "input": "hi"}, contains="'sessionId' must be a string")
    invalid(k, "turns/start", {"sessionId": sid}, contains="'input' is required")
    invalid(k, "turns/start", {"sessionId": sid, "input": None}, contains="'input' is required")
    invalid(k, "turns/start", {"sessionId": sid, "input": ["hi"]}, contains="'input' must be a string")
    invalid(k, "turns/start", {"sessionId": sid, "input": "hi", "streamingBehavior": "sideways"},
            contains="streamingBehavior")
    invalid(k, "turns/start", {"sessionId": sid, "input": "hi", "streamingBehavior": 3}, contains="streamingBehavior")
    invalid(k, "turns/start", {"sessionId": sid, "input": "hi", "attachments": {"type": "image"}},
            contains="'attachments' must be an array")
    err = invalid(k, "turns/start", {"sessionId": "no-such-session", "input": "hi"}, reason="session_not_found")
    assert err.error["message"] == "Unknown session: no-such-session"
    # steer with nothing running is refused, not queued
    err = invalid(k, "turns/start", {"sessionId": sid, "input": "hi", "streamingBehavior": "steer"})
    assert err.error["message"] == "Unsupported streamingBehavior: steer"

    for method in ("turns/cancel", "turns/status", "turns/events"):
        invalid(k, method, None, contains="'turnId' is required")
        invalid(k, method, {"turnId": 12}, contains="'turnId' must be a string")
        err = invalid(k, method, {"turnId": "no-such-turn"}, reason="turn_not_found", contains="no-such-turn")
        assert err.error["data"]["turnId"] == "no-such-turn"
    turn, _ = k.run(sid, "real")
    invalid(k, "turns/events", {"turnId": turn["id"], "afterSequence": -1}, contains="afterSequence")
    invalid(k, "turns/events", {"turnId": turn["id"], "afterSequence": "3"}, contains="afterSequence")
    invalid(k, "turns/events", {"turnId": turn["id"], "afterSequence": 1.5}, contains="afterSequence")
    # nothing above started a turn: only the real one exists, and it is well formed
    assert {e["turnId"] for e in k.events()} == {turn["id"]}
    check_turn_events(k.events(turn["id"]), "completed")
    # unknown params are ignored, never rejected
    turn2, events2 = k.run(sid, "extra", resumeLast=True, currentSessionPath="/x", clientHint={"a": 1})
    check_turn_events(events2, "failed")  # the one-step script has no step for a second call


def test_bad_params_of_the_question_bridge_and_runtime_methods(kward):
    k = kward([[text("ok")]])
    sid = k.session()["id"]
    invalid(k, "ui/answerQuestion", None, contains="'sessionId' is required")
    invalid(k, "ui/answerQuestion", {"sessionId": sid, "answers": []}, contains="'questionRequestId' is required")
    invalid(k, "ui/answerQuestion", {"sessionId": sid, "questionRequestId": "q"}, contains="'answers' is required")
    invalid(k, "ui/answerQuestion", {"sessionId": sid, "questionRequestId": "q", "answers": "yes"},
            contains="'answers' must be an array")
    err = invalid(k, "ui/answerQuestion", {"sessionId": "nope", "questionRequestId": "q", "answers": []},
                  reason="session_not_found")
    assert err.error["message"] == "Unknown session: nope"
    err = invalid(k, "ui/answerQuestion", {"sessionId": sid, "questionRequestId": "q-unknown", "answers": []},
                  reason="question_not_found", contains="q-unknown")
    assert err.error["data"]["questionRequestId"] == "q-unknown"
    for method in ("runtime/state", "runtime/stats"):
        invalid(k, method, None, contains="'sessionId' is required")
        invalid(k, method, {"sessionId": 5}, contains="'sessionId' must be a string")
        err = invalid(k, method, {"sessionId": "gone"}, reason="session_not_found")
        assert err.error["message"] == "Unknown session: gone"


ATTACHMENT_VIOLATIONS = [
    ("not an object", "must be an object"),
    ({"type": "file", "data": PNG, "mimeType": "image/png"}, "'attachments[1].type' must be 'image'"),
    ({"data": PNG, "mimeType": "image/png"}, "'attachments[1].type' is required"),
    ({"type": "image", "data": PNG, "mimeType": "image/bmp"}, "unsupported MIME type 'image/bmp'"),
    ({"type": "image", "data": PNG, "mimeType": "application/pdf"}, "unsupported MIME type"),
    ({"type": "image", "data": PNG}, "unsupported MIME type None"),
    ({"type": "image", "data": "data:image/png;base64," + PNG, "mimeType": "image/png"}, "data: URL prefix"),
    ({"type": "image", "data": "not base64 at all!", "mimeType": "image/png"}, "not valid base64"),
    ({"type": "image", "data": PNG[:-3], "mimeType": "image/png"}, "not valid base64"),
    ({"type": "image", "data": "", "mimeType": "image/png"}, "'attachments[1].data' must not be empty"),
    ({"type": "image", "mimeType": "image/png"}, "'attachments[1].data' is required"),
    ({"type": "image", "data": PNG, "mimeType": "image/png", "sizeBytes": TEN_MIB + 1}, f"<= {TEN_MIB}"),
    ({"type": "image", "data": PNG, "mimeType": "image/png", "sizeBytes": -1}, "sizeBytes"),
    ({"type": "image", "data": PNG, "mimeType": "image/png", "sizeBytes": "12"}, "sizeBytes"),
]


def test_each_attachment_violation_is_refused(kward):
    k = kward([[text("ok")]])
    sid = k.session()["id"]
    good = {"type": "image", "data": PNG, "mimeType": "image/png"}
    for attachment, problem in ATTACHMENT_VIOLATIONS:
        err = invalid(k, "turns/start", {"sessionId": sid, "input": "look", "attachments": [good, attachment]},
                      contains="attachments[1]")
        assert problem in err.error["message"], (attachment, err.error["message"])
        assert err.error["data"]["param"].startswith("attachments[1]")  # (the item, or the field of it)
    assert k.events() == []


@pytest.mark.slow
def test_oversized_images_are_refused_and_limit_sized_ones_accepted(kward):
    k = kward([[text("big")]])
    sid = k.session()["id"]
    over = base64.b64encode(b"\0" * (TEN_MIB + 1)).decode()
    err = invalid(k, "turns/start", {"sessionId": sid, "input": "x",
                                     "attachments": [{"type": "image", "data": over, "mimeType": "image/png"}]},
                  contains="attachments[0]")
    assert f"too large ({TEN_MIB + 1} bytes" in err.error["message"]
    huge = over + "AAAA" * 10
    err = invalid(k, "turns/start", {"sessionId": sid, "input": "x",
                                     "attachments": [{"type": "image", "data": huge, "mimeType": "image/png"}]})
    assert "too large" in err.error["message"]
    exact = base64.b64encode(b"\0" * TEN_MIB).decode()
    turn = k.start(sid, "x", attachments=[{"type": "image", "data": exact, "mimeType": "image/png",
                                           "sizeBytes": TEN_MIB}])
    check_turn_events(k.finish(turn["id"], timeout=30), "completed")


def test_a_valid_image_is_stored_in_the_user_message(kward):
    k = kward([[text("I see a pixel.")]])
    s = k.session()
    turn, events = k.run(s["id"], "what is this?", attachments=[
        {"type": "image", "data": PNG, "mimeType": "IMAGE/PNG", "name": "pixel.png", "sizeBytes": 70},
        {"type": "image", "data": PNG, "mimeType": "image/webp"}])
    check_turn_events(events, "completed")
    user = k.messages(s)[0]
    assert user["role"] == "user"
    assert user["content"] == [{"type": "text", "text": "what is this?"},
                               {"type": "image", "data": PNG, "mimeType": "image/png", "alt": "pixel.png"},
                               {"type": "image", "data": PNG, "mimeType": "image/webp"}]
    assert k.request("runtime/state", {"sessionId": s["id"]})["sessionName"] == "what is this?"


def test_input_over_the_configured_maximum_is_refused(kward):
    k = kward([[text("fits")]], env={"KWARD_MAX_INPUT_CHARS": "100"})
    sid = k.session()["id"]
    err = invalid(k, "turns/start", {"sessionId": sid, "input": "é" * 101}, reason="input_too_large")
    assert err.error["data"]["input_error_code"] == "input_too_large"
    assert err.error["data"]["max_chars"] == 100 and err.error["data"]["actual_chars"] == 101
    assert k.events() == []
    _, events = k.run(sid, "é" * 100)
    check_turn_events(events, "completed")


@pytest.mark.slow
def test_a_session_another_process_is_running_answers_session_busy(kward):
    k = kward([[tool("ask_user_question", {"questions": [{
        "question": "Wait?", "header": "Wait", "options": [{"label": "A", "description": "a"},
                                                          {"label": "B", "description": "b"}]}]})],
        [text("done")]])
    s = k.session()
    turn = k.start(s["id"], "hold the session")
    q = k.question()
    other = RpcClient(k.home, cwd=k.ws, env=k.env)
    with other:
        resumed = other.request("sessions/resume", {"path": s["path"], "workspaceRoot": str(k.ws)})
        err = other.error("turns/start", {"sessionId": resumed["id"], "input": "me too"})
        assert err.code == -32602 and err.reason == "session_busy"
        assert other.notifications == []
        k.request("ui/answerQuestion", {"sessionId": s["id"], "questionRequestId": q["questionRequestId"],
                                        "answers": ["A"]})
        check_turn_events(k.finish(turn["id"]), "completed")
        # turnFinished is announced once the lock is released: the other process may run one now
        retry = other.request("turns/start", {"sessionId": resumed["id"], "input": "now me"})
        assert retry["sessionId"] == resumed["id"]
        other.wait_notification(lambda n: n["params"].get("type") == "turnFinished")
        assert other.close() == 0
