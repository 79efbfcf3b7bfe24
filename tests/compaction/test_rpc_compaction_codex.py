"""Compaction against the loopback fake Codex backend through the real `kward rpc`: what
the summarizer is sent, what the next request holds (in this process and after a resume
in a new one), automatic compaction at the threshold and after a context overflow, and
failures that leave the session as it was."""

from __future__ import annotations

import json
import threading

import pytest

from kward.compaction.prompt import SYSTEM_PROMPT
from lib import fake_codex as fc
from lib.compaction_helpers import compaction_records, session_events, wait_session_events, write_compaction_config
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_http import served
from lib.loopback_kward import create_session, run_turn, start_kward, start_turn
from lib.turn_events import failed_error, finished, wait_turn

TOKEN = make_jwt("acct_compaction")
PROVIDER_ERROR = -32005  # docs/protocol.md, Codes
BIG = "A" * 2999 + "\n"


fake = served(FakeCodex)


@pytest.fixture
def start(isolated_home, fake):
    started = []

    def go(**compaction):
        if compaction:
            write_compaction_config(isolated_home, **compaction)
        client = start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url, OPENAI_ACCESS_TOKEN=TOKEN)
        started.append(client)
        return client

    yield go
    for client in started:
        with client:
            client.close()
        assert client.protocol_errors == []


def user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text):
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def prompt_text(request) -> str:
    [item] = request.json["input"]
    assert item["role"] == "user"
    return item["content"][0]["text"]


def completed(client, session_id, text):
    events = run_turn(client, session_id, text)
    assert finished(events)["status"] == "completed", events[-2:]
    return events


def test_manual_compaction_request_result_next_request_and_resume(start, fake, isolated_home):
    (isolated_home / "ws").mkdir(exist_ok=True)
    client = start(keep_recent_tokens=50)
    (isolated_home / "ws" / "a.txt").write_text(BIG)
    session = create_session(client, isolated_home)
    sid = session["id"]
    fake.script("responses", fc.function_call("read_file", '{"path":"a.txt"}', "call_r"), fc.text(["read it"]),
                fc.function_call("write_file", json.dumps({"path": "b.txt", "content": "b" * 400}), "call_w"),
                fc.text(["wrote it"]), fc.text(["ok"]))
    completed(client, sid, "first: read a.txt")
    completed(client, sid, "second: write b.txt")
    completed(client, sid, "third")
    summary = "## Goal\n- Work on a and b\n\n## Files & Code\n### Read\n- wrong.txt\n\n### Modified\n\n## Next Steps\n1. more"
    fake.script("responses", fc.text([summary[:20], summary[20:]]))
    result = client.request("sessions/compact", {"sessionId": sid, "customInstructions": "mind b.txt"}, timeout=20)

    request = fake.requests("responses")[5]
    body = request.json
    assert body["instructions"] == SYSTEM_PROMPT and body["tools"] == []
    assert "max_output_tokens" not in body  # Codex rejects it
    prompt = prompt_text(request)
    conversation = prompt.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0]
    blocks = conversation.split("\n\n")
    assert blocks[0] == "[User]: first: read a.txt"
    assert blocks[1] == '[Assistant tool calls]: read_file(path="a.txt")'
    assert blocks[2].startswith("[Tool result read_file]: ") and "...[truncated " in blocks[2]
    assert len(blocks[2].split("\n...[truncated ")[0]) == len("[Tool result read_file]: ") + 2000
    assert blocks[3] == "[Assistant]: read it" and blocks[4] == "[User]: second: write b.txt"
    assert blocks[5] == '[Assistant tool calls]: write_file(path="b.txt", content="' + "b" * 400 + '")'
    assert blocks[6].startswith("[Tool result write_file]: ") and blocks[7] == "[Assistant]: wrote it"
    assert len(blocks) == 8  # the third turn is kept, not summarized
    template = prompt.split("</conversation>\n\n", 1)[1]
    for heading in ("## Goal", "## Project Context", "## Constraints & Preferences", "## Progress", "### Done",
                    "### In Progress", "### Blocked", "## Key Decisions", "## Files & Code", "### Read",
                    "### Modified", "### Important Code Objects", "## Commands & Results", "## Next Steps",
                    "## Critical Context"):
        assert f"\n{heading}\n" in template, heading
    assert template.endswith("\n\nAdditional focus: mind b.txt")

    assert result["firstKeptEntryId"] == "message:8"
    assert result["details"] == {"read_files": ["a.txt"], "modified_files": ["b.txt"]}
    assert "### Read\n- a.txt\n\n### Modified\n- b.txt\n\n## Next Steps" in result["summary"]
    assert "wrong.txt" not in result["summary"]
    [record] = compaction_records(session["path"])
    assert record["message"]["summary"] == result["summary"]

    fake.script("responses", fc.text(["four"]))
    completed(client, sid, "fourth")
    expected = [assistant(result["summary"]), user("third"), assistant("ok"), user("fourth")]
    assert fake.requests("responses")[6].json["input"] == expected
    with client:
        client.close()

    # a new process resumes the file and sends the same compacted context
    other = start()
    resumed = other.request("sessions/resume", {"path": session["path"]})
    fake.script("responses", fc.text(["five"]))
    completed(other, resumed["id"], "fifth")
    assert fake.requests("responses")[7].json["input"] == expected + [assistant("four"), user("fifth")]


def test_a_split_turn_keeps_tool_calls_with_their_results(start, fake, isolated_home):
    client = start(keep_recent_tokens=1000)
    (isolated_home / "ws" / "a.txt").write_text(BIG)
    sid = create_session(client, isolated_home)["id"]
    fake.script("responses", fc.text(["hello"]))
    completed(client, sid, "hi")
    fake.script("responses", *[fc.function_call("read_file", '{"path":"a.txt"}', f"call_{i}") for i in range(3)],
                fc.text(["all read"]))
    completed(client, sid, "read a.txt three times")
    fake.script("responses", fc.text(["## Goal\n- greet"]), fc.text(["## Original Request\n- read thrice"]))
    result = client.request("sessions/compact", {"sessionId": sid}, timeout=20)
    main, split = fake.requests("responses")[5:7]
    assert prompt_text(main).startswith("<conversation>\n[User]: hi\n\n[Assistant]: hello\n</conversation>")
    split_prompt = prompt_text(split)
    assert split_prompt.startswith("<conversation>\n[User]: read a.txt three times\n\n[Assistant tool calls]: ")
    assert "This is the PREFIX of a turn" in split_prompt and "\n## Code Context for Suffix\n" in split_prompt
    assert "**Turn Context (split turn):**\n\n## Original Request\n- read thrice" in result["summary"]
    assert result["firstKeptEntryId"] == "message:7"  # the assistant message of the last call

    fake.script("responses", fc.text(["next"]))
    completed(client, sid, "go on")
    items = fake.requests("responses")[7].json["input"]
    assert items[0] == assistant(result["summary"])
    assert [i.get("type") for i in items[1:]] == ["function_call", "function_call_output", "message", "message"]
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    assert {i["call_id"] for i in items if i.get("type") == "function_call_output"} <= calls


def test_the_compact_response_is_written_before_its_compaction_end_which_carries_the_estimate(
        start, fake, isolated_home):
    client = start(keep_recent_tokens=10)
    sid = create_session(client, isolated_home)["id"]
    fake.script("responses", fc.text([BIG]), fc.text(["two"]))
    completed(client, sid, "first")
    completed(client, sid, "second")
    fake.script("responses", fc.text(["## Goal\n- short"]))
    rid = client.send("sessions/compact", {"sessionId": sid})
    result = client.response(rid, timeout=20)["result"]
    client.wait_notification(lambda n: n["method"] == "session/event" and n["params"]["type"] == "compactionEnd")
    frames = [json.loads(body) for body in list(client.bodies)]
    answered = next(i for i, m in enumerate(frames) if m.get("id") == rid)
    [ended] = [i for i, m in enumerate(frames)
               if m.get("method") == "session/event" and m["params"]["type"] == "compactionEnd"]
    [started] = [i for i, m in enumerate(frames)
                 if m.get("method") == "session/event" and m["params"]["type"] == "compactionStart"]
    assert started < answered < ended  # a client closing the reply on compactionEnd has the answer already
    payload = frames[ended]["params"]["payload"]
    assert payload["result"] == result and payload["aborted"] is False
    assert 0 < payload["estimatedTokensAfter"] < result["tokensBefore"]


def usage_of(input_tokens, output_tokens):
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens}


def test_stats_are_cumulative_across_a_compaction_and_a_resume_summarizer_included(start, fake, isolated_home):
    client = start(keep_recent_tokens=10)
    session = create_session(client, isolated_home)
    sid = session["id"]
    fake.script("responses", fc.text([BIG], usage=usage_of(1000, 100)), fc.text(["two"], usage=usage_of(2000, 20)))
    completed(client, sid, "first")
    completed(client, sid, "second")
    before = client.request("runtime/stats", {"sessionId": sid})["tokens"]
    assert (before["input"], before["output"], before["total"]) == (3000, 120, 3120)

    fake.script("responses", fc.text(["## Goal\n- short"], usage=usage_of(700, 7)))  # the summarizer's call
    client.request("sessions/compact", {"sessionId": sid}, timeout=20)
    after = client.request("runtime/stats", {"sessionId": sid})["tokens"]
    assert (after["input"], after["output"], after["total"]) == (3700, 127, 3827)

    fake.script("responses", fc.text(["three"], usage=usage_of(400, 4)))
    completed(client, sid, "third")
    live = client.request("runtime/stats", {"sessionId": sid})["tokens"]
    assert (live["input"], live["output"], live["total"]) == (4100, 131, 4231)
    [record] = compaction_records(session["path"])
    assert record["message"]["summarizer_usage"]["input_tokens"] == 700  # kept in the file
    with client:
        client.close()

    other = start()  # a new process resumes the file: the same totals
    resumed = other.request("sessions/resume", {"path": session["path"]})
    assert other.request("runtime/stats", {"sessionId": resumed["id"]})["tokens"] == live


def test_automatic_compaction_before_a_turn(start, fake, isolated_home):
    client = start(context_window=13_000, reserve_tokens=1_000, keep_recent_tokens=5)
    sid = create_session(client, isolated_home)["id"]
    fake.script("responses", fc.text(["one"], usage={"input_tokens": 4000, "output_tokens": 10, "total_tokens": 5000}))
    completed(client, sid, "first")
    assert session_events(client) == []  # nothing older than the kept part yet
    (isolated_home / "ws" / "pyproject.toml").write_text("[project]\n")  # the workspace's language
    fake.script("responses", fc.text(["## Goal\n- auto"]), fc.text(["two"]))
    completed(client, sid, "second")
    summary_request, turn_request = fake.requests("responses")[1:3]
    assert summary_request.json["tools"] == [] and "[User]: first\n\n[Assistant]: one" in prompt_text(summary_request)
    assert "## Python Project Context" in prompt_text(summary_request)
    path = client.request("runtime/state", {"sessionId": sid})["sessionFile"]
    [summary] = [r["message"] for r in compaction_records(path)]
    assert turn_request.json["input"] == [assistant(summary["summary"]), user("second")]
    start_event, end_event = session_events(client, sid)
    assert start_event["payload"] == {"reason": "threshold"}
    assert end_event["payload"]["aborted"] is False and end_event["payload"]["willRetry"] is False
    assert end_event["payload"]["result"]["firstKeptEntryId"] == "message:2"
    assert 0 < end_event["payload"]["estimatedTokensAfter"] < end_event["payload"]["result"]["tokensBefore"]
    # the usage of the new answer describes the compacted context: no compaction again
    fake.script("responses", fc.text(["three"]))
    completed(client, sid, "third")
    assert len(session_events(client)) == 2 and len(fake.requests("responses")) == 4


def test_runtime_state_is_compacting_during_an_automatic_compaction(start, fake, isolated_home):
    client = start(context_window=13_000, reserve_tokens=1_000, keep_recent_tokens=5)
    sid = create_session(client, isolated_home)["id"]
    fake.script("responses", fc.text(["one"], usage={"input_tokens": 4000, "output_tokens": 10, "total_tokens": 5000}))
    completed(client, sid, "first")
    assert client.request("runtime/state", {"sessionId": sid})["isCompacting"] is False
    arrived, release = threading.Event(), threading.Event()

    def summary(record):  # the summary request: held until the test has read runtime/state
        arrived.set()
        release.wait(30)
        return fc.text(["## Goal\n- auto"])

    fake.script("responses", summary, fc.text(["two"]))
    try:
        turn = start_turn(client, sid, "second")
        assert arrived.wait(30)
        during = client.request("runtime/state", {"sessionId": sid})
    finally:
        release.set()
    assert during["isCompacting"] is True and during["isStreaming"] is True
    assert finished(wait_turn(client, turn["id"], timeout=30))["status"] == "completed"
    assert [e["type"] for e in session_events(client, sid)] == ["compactionStart", "compactionEnd"]
    assert client.request("runtime/state", {"sessionId": sid})["isCompacting"] is False


def test_context_overflow_compacts_once_then_retries(start, fake, isolated_home):
    client = start(keep_recent_tokens=5)
    sid = create_session(client, isolated_home)["id"]
    overflow = fc.failed_mid_stream("context_length_exceeded", "Your input exceeds the context window.", [])
    fake.script("responses", fc.text(["one"]))
    completed(client, sid, "first")
    fake.script("responses", overflow, fc.text(["## Goal\n- overflowed"]), fc.text(["two"]))
    events = completed(client, sid, "second")
    assert [e["payload"]["delta"] for e in events if e["type"] == "assistantDelta"] == ["two"]
    requests = fake.requests("responses")
    assert requests[1].json["input"] == [user("first"), assistant("one"), user("second")]  # overflowed
    assert requests[2].json["tools"] == [] and "[User]: first" in prompt_text(requests[2])
    assert requests[3].json["input"] == [assistant("## Goal\n- overflowed\n\n## Files & Code\n### Read\n- (none)\n\n"
                                                   "### Modified\n- (none)"), user("second")]
    start_event, end_event = session_events(client, sid)
    assert start_event["payload"] == {"reason": "overflow"}
    assert end_event["payload"]["willRetry"] is True and end_event["payload"]["aborted"] is False

    # a second overflow in the same turn is not compacted again: the turn fails with it
    fake.script("responses", overflow, fc.text(["## Goal\n- again"]), overflow)
    error = failed_error(run_turn(client, sid, "third"))
    assert error["reason"] == "context_overflow"
    assert len(fake.requests("responses")) == 7 and len(session_events(client, sid)) == 4


def test_a_failed_compaction_changes_nothing(start, fake, isolated_home):
    client = start(keep_recent_tokens=10)
    session = create_session(client, isolated_home)
    sid = session["id"]
    fake.script("responses", fc.text(["one"]), fc.text(["two"]))
    completed(client, sid, "first")
    completed(client, sid, "second")
    before = open(session["path"], "rb").read()

    fake.script("responses", fc.http_error(400, {"error": {"message": "no summaries today"}}))
    error = client.error("sessions/compact", {"sessionId": sid})
    assert error.reason == "provider_error" and "no summaries today" in error.error["message"]
    assert error.code == PROVIDER_ERROR  # the provider's failure, not -32603 (a bug)
    assert error.error["data"]["provider"] == "Codex" and error.error["data"]["status"] == 400
    fake.script("responses", fc.text([]))
    error = client.error("sessions/compact", {"sessionId": sid})
    assert (error.code, error.reason, error.error["message"]) == (
        PROVIDER_ERROR, "empty_summary", "Compaction produced an empty summary; context was not changed.")
    assert open(session["path"], "rb").read() == before

    events = wait_session_events(client, 4, sid)
    assert [e["type"] for e in events] == ["compactionStart", "compactionEnd"] * 2
    for end, failure in ((events[1], "provider_error"), (events[3], "empty_summary")):
        p = end["payload"]
        assert p["aborted"] is True and p["willRetry"] is False and p["result"] == {}
        assert p["error"]["data"]["reason"] == failure and p["errorMessage"] == p["error"]["message"]
        assert p["error"]["code"] == PROVIDER_ERROR

    fake.script("responses", fc.text(["three"]))
    completed(client, sid, "third")
    assert fake.requests("responses")[-1].json["input"] == [user("first"), assistant("one"), user("second"),
                                                           assistant("two"), user("third")]


def test_openrouter_honours_the_settings_and_caps_the_summary(isolated_home):
    from lib import fake_openrouter as fo
    from lib.fake_openrouter import FakeOpenRouter

    write_compaction_config(isolated_home, context_window=13_000, reserve_tokens=1_000, keep_recent_tokens=5)
    with FakeOpenRouter() as fake, start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url,
                                               OPENROUTER_API_KEY="sk-or-v1-compaction") as client:
        sid = create_session(client, isolated_home)["id"]
        usage = {"prompt_tokens": 5000, "completion_tokens": 10, "total_tokens": 5010}
        fake.script("chat", fo.text(["one"], usage=usage), fo.text(["## Goal\n- routed"]), fo.text(["two"]))
        completed(client, sid, "first")
        completed(client, sid, "second")
        summary_body, turn_body = [r.json for r in fake.requests("chat")[1:3]]
        assert summary_body["max_tokens"] == 800 and "tools" not in summary_body  # 0.8 x reserve_tokens
        assert summary_body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert summary_body["messages"][1]["content"].startswith("<conversation>\n[User]: first\n\n[Assistant]: one")
        assert "max_tokens" not in turn_body
        assert [m["role"] for m in turn_body["messages"]][1:] == ["assistant", "user"]
        assert turn_body["messages"][1]["content"].startswith("## Goal\n- routed")
        assert [e["payload"].get("reason") for e in session_events(client, sid)][:1] == ["threshold"]
        client.close()
    assert client.protocol_errors == []
