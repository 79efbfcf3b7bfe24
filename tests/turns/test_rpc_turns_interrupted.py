"""A cancelled (or failed) turn keeps what the user saw, over real `kward rpc` processes.

The text and reasoning a model call streamed before it was cancelled or failed are stored
as an assistant message marked `interrupted`; sessions/transcript, a resume in a new
process and an export show them, and the next model request (the fake Codex and the
fake OpenRouter record it) carries the text as ordinary assistant content. A call that
streamed nothing leaves nothing behind. Turns are held mid-stream by a scripted `delay`
(or a fake server that stops sending), which cancellation interrupts: no timing.
"""

from __future__ import annotations

import json

import pytest

from kward.agent.loop import interrupted_message
from kward.providers import chat_wire, codex_wire
from kward.providers.base import ModelRequest
from kward.sessions.codec import encode
from lib.session_records import typed
from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.turn_events import check_turn_events, deltas, failed_error, finished, types, wait_event
from lib.scripts import delay, reasoning, text, tool
from lib.scripted_kward import kward  # noqa: F401

TOKEN = make_jwt("acct_interrupted")
OR_KEY = "sk-or-v1-interrupted0123456789"


def wait_delta(k, turn_id, delta):
    """Wait until the turn streamed the assistantDelta `delta` (the last one before the hold)."""
    return k.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn_id
                      and n["params"]["type"] == "assistantDelta" and n["params"]["payload"]["delta"] == delta,
                      what=f"assistantDelta {delta!r}")


def cancel(k, turn_id):
    k.request("turns/cancel", {"turnId": turn_id})
    events = k.finish(turn_id)
    check_turn_events(events, "canceled")
    return events


def user_item(text_):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text_}]}


def assistant_item(text_):
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text_}]}


PARTIAL = [reasoning("Let me "), reasoning("think."), text("Partial "), text("answer"), delay(60), text(" never")]
INTERRUPTED = {"role": "assistant", "interrupted": True,
               "content": [{"type": "thinking", "thinking": "Let me think."}, {"type": "text", "text": "Partial answer"}]}


@pytest.mark.slow
def test_a_cancel_mid_stream_keeps_the_partial_answer_for_transcript_resume_export_and_the_next_request(
        kward, isolated_home):
    k = kward([PARTIAL])
    s = k.session()
    turn = k.start(s["id"], "first question")
    wait_delta(k, turn["id"], "answer")
    events = cancel(k, turn["id"])
    assert types(events)[-4:] == ["turnCancelRequested", "assistantMessage", "turnDiff", "turnFinished"]
    reported = events[-3]["payload"]["message"]
    assert (reported["content"], reported["reasoning_summary"], reported["interrupted"]) == \
        ("Partial answer", "Let me think.", True)
    assert "errorMessage" not in reported and "tool_calls" not in reported and "usage" not in reported

    # the file holds exactly what the event reported, as a v1 message record
    records = k.records(s)
    assert records[0]["type"] == "session" and records[0]["version"] == 1
    assert k.messages(s) == [{"role": "user", "content": "first question"}, reported]
    # the live view of this process
    live = k.request("sessions/transcript", {"sessionId": s["id"]})["messages"]
    assert live == [{"role": "user", "content": [{"type": "text", "text": "first question"}]}, INTERRUPTED]
    assert k.close() == 0

    # a new process (Codex this time) resumes it: same transcript, the export shows it, and
    # the next request carries the partial text as ordinary assistant content
    with FakeCodex() as fake, start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url,
                                          OPENAI_ACCESS_TOKEN=TOKEN) as b:
        r = b.request("sessions/resume", {"path": s["path"]})
        assert b.request("sessions/transcript", {"sessionId": r["id"]})["messages"] == live
        exported = b.request("sessions/export", {"sessionId": r["id"]})["path"]
        with open(exported, encoding="utf-8") as f:
            markdown = f.read()
        assert "## Assistant\n\n> Reasoning:\n> Let me think.\n\nPartial answer\n\n_(interrupted)_\n" in markdown
        fake.script("responses", fc.text(["Go", "ne on"]))
        assert finished(run_turn(b, r["id"], "go on"))["status"] == "completed"
        [req] = fake.requests("responses")
        assert req.json["input"] == [user_item("first question"), assistant_item("Partial answer"),
                                     user_item("go on")]
        assert b.protocol_errors == [] and b.stderr == ""


@pytest.mark.slow
def test_the_next_openrouter_request_carries_the_partial_answer(kward, isolated_home):
    k = kward([PARTIAL])
    s = k.session()
    turn = k.start(s["id"], "first question")
    wait_delta(k, turn["id"], "answer")
    cancel(k, turn["id"])
    assert k.close() == 0
    with FakeOpenRouter() as fake, start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url,
                                               OPENROUTER_API_KEY=OR_KEY) as b:
        r = b.request("sessions/resume", {"path": s["path"]})
        fake.script("chat", fo.text(["ok"]))
        assert finished(run_turn(b, r["id"], "go on"))["status"] == "completed"
        [req] = fake.requests("chat")
        assert req.json["messages"][1:] == [{"role": "user", "content": "first question"},
                                            {"role": "assistant", "content": "Partial answer"},
                                            {"role": "user", "content": "go on"}]
        assert b.protocol_errors == [] and b.stderr == ""


def test_a_cancel_during_the_model_call_after_tool_calls_keeps_that_calls_output(kward):
    k = kward([[reasoning("Look first."), tool("list_directory", {"path": "."}, id="ls")],
               [reasoning("Seen it."), text("The workspace has "), text("a.txt"), delay(60)],
               [text("next turn answer")]], files={"a.txt": "x\n"})
    s = k.session()
    turn = k.start(s["id"], "what is here?")
    wait_delta(k, turn["id"], "a.txt")
    events = cancel(k, turn["id"])
    assert types(events).count("assistantMessage") == 2 and types(events)[-3] == "assistantMessage"
    messages = k.messages(s)
    assert [(m["role"], m.get("interrupted")) for m in messages] == \
        [("user", None), ("assistant", None), ("tool", None), ("assistant", True)]
    assert messages[2]["tool_call_id"] == "ls" and messages[2]["content"] == "a.txt"
    assert (messages[3]["content"], messages[3]["reasoning_summary"]) == ("The workspace has a.txt", "Seen it.")
    transcript = k.request("sessions/transcript", {"sessionId": s["id"]})["messages"]
    assert transcript[-1] == {"role": "assistant", "interrupted": True,
                              "content": [{"type": "thinking", "thinking": "Seen it."},
                                          {"type": "text", "text": "The workspace has a.txt"}]}
    # the session goes on: the interrupted call counts as played, the next turn plays the next step
    _, again = k.run(s["id"], "and now?")
    check_turn_events(again, "completed")
    assert [m["role"] for m in k.messages(s)][-2:] == ["user", "assistant"]


def test_a_cancel_before_anything_streamed_persists_nothing(kward):
    k = kward([[{"type": "retry", "delaySeconds": 60, "error": "429 Too Many Requests"}, text("never")]])
    s = k.session()
    turn = k.start(s["id"], "hello?")
    k.wait_event(turn["id"], "modelRetry")  # inside the model call, nothing shown yet
    events = cancel(k, turn["id"])
    assert "assistantMessage" not in types(events)
    assert k.messages(s) == [{"role": "user", "content": "hello?"}]
    assert [m["role"] for m in k.request("sessions/transcript", {"sessionId": s["id"]})["messages"]] == ["user"]


@pytest.mark.slow
def test_reasoning_only_partial_is_kept_and_the_next_request_stays_valid(kward, isolated_home):
    k = kward([[reasoning("Only thinking so far"), delay(60)]])
    s = k.session()
    turn = k.start(s["id"], "think")
    k.wait_event(turn["id"], "reasoningDelta")
    cancel(k, turn["id"])
    assert k.messages(s)[-1] == {"role": "assistant", "content": "", "reasoning_summary": "Only thinking so far",
                                 "provider": "Scripted", "model": "scripted", "interrupted": True}
    assert k.close() == 0
    with FakeCodex() as fake, start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url,
                                          OPENAI_ACCESS_TOKEN=TOKEN) as b:
        r = b.request("sessions/resume", {"path": s["path"]})
        assert b.request("sessions/transcript", {"sessionId": r["id"]})["messages"][-1] == \
            {"role": "assistant", "interrupted": True,
             "content": [{"type": "thinking", "thinking": "Only thinking so far"}]}
        fake.script("responses", fc.text(["ok"]))
        assert finished(run_turn(b, r["id"], "go on"))["status"] == "completed"
        # no empty assistant item: reasoning summaries are never sent back as text
        assert fake.requests("responses")[0].json["input"] == [user_item("think"), user_item("go on")]


# --- the HTTP providers: a real stream cut by cancel, a stream that fails after output ----

@pytest.fixture
def codex(isolated_home):
    with FakeCodex() as fake, start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url,
                                          OPENAI_ACCESS_TOKEN=TOKEN) as client:
        client.fake = fake
        client.session = create_session(client, isolated_home)
        yield client
    assert client.protocol_errors == [] and client.stderr == ""


def test_codex_stream_cancelled_mid_stream_keeps_its_text(codex):
    sid = codex.session["id"]
    codex.fake.script("responses", fc.hang(["Hel", "lo"]), fc.text(["fine"]))
    turn = codex.request("turns/start", {"sessionId": sid, "input": "hi"})
    codex.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]
                            and n["params"].get("payload", {}).get("delta") == "lo")
    codex.request("turns/cancel", {"turnId": turn["id"]})
    wait_event(codex, turn["id"], "turnFinished")
    events = [n["params"] for n in codex.notifications if n["params"].get("turnId") == turn["id"]]
    assert finished(events)["status"] == "canceled" and deltas(events) == ["Hel", "lo"]
    message = [e for e in events if e["type"] == "assistantMessage"][0]["payload"]["message"]
    assert message == {"role": "assistant", "content": "Hello", "provider": "Codex", "model": "gpt-5.5",
                       "interrupted": True}
    assert finished(run_turn(codex, sid, "again"))["status"] == "completed"
    assert codex.fake.requests("responses")[1].json["input"] == [user_item("hi"), assistant_item("Hello"),
                                                                 user_item("again")]


@pytest.mark.slow
def test_codex_failure_after_output_keeps_the_partial_with_its_error(codex):
    sid = codex.session["id"]
    codex.fake.script("responses", fc.failed_mid_stream("server_error", "The upstream crashed.", ["Partial"]),
                      fc.text(["recovered"]))
    events = run_turn(codex, sid, "hi")
    error = failed_error(events)
    assert types(events)[-4:] == ["assistantMessage", "turnDiff", "error", "turnFinished"]
    message = [e for e in events if e["type"] == "assistantMessage"][0]["payload"]["message"]
    assert (message["content"], message["interrupted"], message["errorMessage"]) == \
        ("Partial", True, error["message"])
    transcript = codex.request("sessions/transcript", {"sessionId": sid})["messages"]
    assert transcript[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Partial"}],
                              "errorMessage": error["message"], "interrupted": True}
    assert finished(run_turn(codex, sid, "again"))["status"] == "completed"
    assert codex.fake.requests("responses")[1].json["input"] == [user_item("hi"), assistant_item("Partial"),
                                                                 user_item("again")]


def test_codex_failure_before_output_persists_nothing(codex):
    sid = codex.session["id"]
    codex.fake.script("responses", fc.usage_limit())
    failed_error(run_turn(codex, sid, "hi"))
    assert [m["role"] for m in codex.request("sessions/transcript", {"sessionId": sid})["messages"]] == ["user"]


# --- the wire encoders, on the stored shape ------------------------------------------------

def test_wire_encoders_send_an_interrupted_message_as_ordinary_assistant_content():
    partial = interrupted_message("Half an answer", "some thoughts", "Codex", "gpt-5.5", error="Codex failed.")
    stored = encode(partial)
    assert json.loads(json.dumps(stored)) == stored  # plain JSON, as stored
    messages = [typed({"role": "user", "content": "q"}), partial, typed({"role": "user", "content": "go on"})]
    request = ModelRequest(instructions="sys", messages=messages, tools=[], model="gpt-5.5")
    _, items = codex_wire.build_input(messages, "gpt-5.5")
    assert items == [user_item("q"), assistant_item("Half an answer"), user_item("go on")]
    assert chat_wire.build_messages(request) == [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Half an answer"}, {"role": "user", "content": "go on"}]
