"""Turn events over the real `kward rpc` with the Scripted provider: every event type and its
payload, the lifecycle order, sequences, turns/status and the turns/events replay, and turns
that fail (a provider error, an invalid script, a script that runs out of steps)."""

import json
import re

import pytest

from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import model_error, reasoning, text, tool, wait_for_steer
from lib.turn_events import check_turn_events, payload, payloads

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_a_completed_turn_streams_every_progress_event_in_order(kward):
    k = kward([
        [reasoning("Let me "), reasoning("look."), text("Reading "), text("the file."),
         {"type": "retry", "delaySeconds": 0, "error": "429 Too Many Requests", "attempt": 2, "maxAttempts": 3},
         tool("read_file", {"path": "notes.txt"}, id="call_read")],
        {"events": [text("It says "), text("hello.")], "usage": {"input_tokens": 50, "output_tokens": 4}},
    ], files={"notes.txt": "hello\n"}, model="fake-model-1")
    s = k.session()
    turn, events = k.run(s["id"], "what is in notes.txt?")

    assert set(turn) >= {"id", "sessionId", "status", "cancelRequested", "createdAt"}
    assert turn["sessionId"] == s["id"] and turn["status"] in ("queued", "running")
    assert turn["cancelRequested"] is False and ISO.match(turn["createdAt"])
    check_turn_events(events, "completed")
    assert [e["type"] for e in events] == [
        "turnQueued", "turnStarted", "reasoningDelta", "reasoningDelta", "assistantDelta", "assistantDelta",
        "modelRetry", "assistantMessage", "toolCall", "toolResult", "assistantDelta", "assistantDelta",
        "assistantMessage", "answer", "turnDiff", "turnFinished"]
    assert all(e["sessionId"] == s["id"] and e["turnId"] == turn["id"] and ISO.match(e["timestamp"])
               for e in events)
    assert payloads(events, "reasoningDelta") == [{"delta": "Let me "}, {"delta": "look."}]
    assert payloads(events, "assistantDelta") == [{"delta": d} for d in ("Reading ", "the file.", "It says ", "hello.")]
    assert payloads(events, "modelRetry") == [{"provider": "Scripted", "model": "fake-model-1", "attempt": 2,
                                              "maxAttempts": 3, "delaySeconds": 0, "error": "429 Too Many Requests"}]
    first, second = payloads(events, "assistantMessage")
    assert first["message"]["role"] == "assistant" and first["message"]["content"] == "Reading the file."
    assert first["message"]["reasoning_summary"] == "Let me look."
    assert first["message"]["tool_calls"] == [{"id": "call_read", "type": "function", "function": {
        "name": "read_file", "arguments": '{"path": "notes.txt"}'}}]
    assert first["message"]["provider"] == "Scripted" and first["message"]["model"] == "fake-model-1"
    assert second["message"]["content"] == "It says hello." and "tool_calls" not in second["message"]
    assert second["message"]["usage"]["input_tokens"] == 50
    call, result = payloads(events, "toolCall")[0], payloads(events, "toolResult")[0]
    assert call["toolCallId"] == "call_read" and call["toolName"] == "read" and call["args"] == {"path": "notes.txt"}
    assert result["result"] == {"content": "hello\n", "isError": False, "images": []}
    assert payloads(events, "answer") == [{"content": "It says hello."}]
    assert payloads(events, "turnFinished") == [{"status": "completed"}]

    status = k.request("turns/status", {"turnId": turn["id"]})
    assert status["id"] == turn["id"] and status["status"] == "completed" and status["cancelRequested"] is False
    assert ISO.match(status["startedAt"]) and ISO.match(status["finishedAt"]) and "error" not in status
    assert status["createdAt"] <= status["startedAt"] <= status["finishedAt"]

    # what the events reported is in the session file, in the same order
    roles = [(m["role"], m.get("content")) for m in k.messages(s)]
    assert roles == [("user", "what is in notes.txt?"), ("assistant", "Reading the file."),
                     ("tool", "hello\n"), ("assistant", "It says hello.")]
    audit = [r for r in k.records(s) if r["type"] == "tool_execution_end"]
    assert len(audit) == 1 and audit[0]["toolCallId"] == "call_read" and audit[0]["isError"] is False


def test_sequences_restart_per_turn_and_turns_events_replays_after_a_sequence(kward):
    k = kward([[text("one")], [text("two "), text("three")]])
    s = k.session()
    t1, e1 = k.run(s["id"], "first")
    t2, e2 = k.run(s["id"], "second")
    check_turn_events(e1, "completed")
    check_turn_events(e2, "completed")
    assert e1[0]["sequence"] == e2[0]["sequence"] == 1 and t1["id"] != t2["id"]

    replay = k.request("turns/events", {"turnId": t2["id"]})
    assert replay["turn"]["id"] == t2["id"] and replay["turn"]["status"] == "completed"
    assert replay["events"] == e2
    assert (replay["truncated"], replay["firstSequence"]) == (False, 1)  # nothing was dropped
    after = k.request("turns/events", {"turnId": t2["id"], "afterSequence": 3})
    assert [e["sequence"] for e in after["events"]] == list(range(4, len(e2) + 1))
    assert after["events"] == e2[3:]
    assert k.request("turns/events", {"turnId": t2["id"], "afterSequence": len(e2)})["events"] == []
    assert k.request("turns/events", {"turnId": t2["id"], "afterSequence": 10_000})["events"] == []
    assert k.request("turns/events", {"turnId": t1["id"], "afterSequence": 0})["events"] == e1


def test_a_turn_of_more_than_1000_events_replays_only_the_last_1000_and_says_so(kward):
    k = kward([[text("x", repeat=1500)]])
    s = k.session()
    turn, events = k.run(s["id"], timeout=20)
    check_turn_events(events, "completed")
    total = len(events)
    assert total == 1500 + 6  # queued, started, 1500 deltas, assistantMessage, answer, turnDiff, finished
    first = total - 999  # the first sequence still kept
    answer = k.request("turns/events", {"turnId": turn["id"]})
    replay = answer["events"]
    assert [e["sequence"] for e in replay] == list(range(first, total + 1))
    assert replay == events[-1000:]
    assert (answer["truncated"], answer["firstSequence"]) == (True, first)  # events 1..first-1 were dropped
    tail = k.request("turns/events", {"turnId": turn["id"], "afterSequence": total - 3})
    assert [e["type"] for e in tail["events"]] == ["answer", "turnDiff", "turnFinished"]
    assert (tail["truncated"], tail["firstSequence"]) == (False, first)  # everything after it is kept
    # asking from before the kept window still answers what is kept, no more, and says so
    early = k.request("turns/events", {"turnId": turn["id"], "afterSequence": 10})
    assert len(early["events"]) == 1000 and early["truncated"] is True
    # right before the first kept one: nothing after it is missing
    edge = k.request("turns/events", {"turnId": turn["id"], "afterSequence": first - 1})
    assert len(edge["events"]) == 1000 and edge["truncated"] is False
    edge = k.request("turns/events", {"turnId": turn["id"], "afterSequence": first - 2})
    assert edge["truncated"] is True
    done = k.request("turns/events", {"turnId": turn["id"], "afterSequence": total})
    assert (done["events"], done["truncated"], done["firstSequence"]) == ([], False, first)


def test_a_provider_error_fails_the_turn_with_a_sanitized_error(kward):
    k = kward([[text("partial "), model_error("upstream exploded (Bearer abcdef1234567890)", kind="server",
                                              status=500)]], loop=True)
    s = k.session()
    turn, events = k.run(s["id"], "go")
    finished = check_turn_events(events, "failed")
    assert [e["type"] for e in events] == ["turnQueued", "turnStarted", "assistantDelta", "assistantMessage",
                                           "turnDiff", "error", "turnFinished"]
    error = finished["error"]
    assert error["message"].startswith("upstream exploded") and "abcdef1234567890" not in error["message"]
    assert "[REDACTED]" in error["message"]
    assert error["fatal"] is False and error["code"] == "ProviderError" and error["reason"] == "provider_error"
    status = k.request("turns/status", {"turnId": turn["id"]})
    assert status["status"] == "failed" and status["error"]["message"] == error["message"]
    assert "finishedAt" in status
    # the user message stays, and so does the text streamed before the failure: marked
    # interrupted, with the error (redacted like the error event)
    user, partial = k.messages(s)
    assert user == {"role": "user", "content": "go"}
    assert partial["content"] == "partial " and partial["interrupted"] is True
    assert partial["errorMessage"].startswith("upstream exploded") and "[REDACTED]" in partial["errorMessage"]
    assert "abcdef1234567890" not in json.dumps(k.records(s))
    # the session goes on: the next turn plays the next model call (the same failing step
    # here: the script loops), and is reported the same way
    _, again = k.run(s["id"], "again")
    check_turn_events(again, "failed")


def test_an_invalid_json_script_fails_the_turn_naming_the_file(kward):
    k = kward(raw='{"steps": [[{"type": "text", "text": "hi"}]')
    s = k.session()
    turn, events = k.run(s["id"])
    finished = check_turn_events(events, "failed")
    assert [e["type"] for e in events] == ["turnQueued", "turnStarted", "error", "turnFinished"]
    assert "not valid JSON" in finished["error"]["message"] and "raw-1.json" in finished["error"]["message"]
    assert finished["error"]["reason"] == "invalid_config" and finished["error"]["code"] == "ScriptError"


@pytest.mark.slow
def test_an_unknown_script_event_and_a_script_out_of_steps_fail_the_turn(kward):
    bad = kward([[{"type": "dance"}]])
    s = bad.session()
    _, events = bad.run(s["id"])
    assert "unknown type 'dance'" in check_turn_events(events, "failed")["error"]["message"]

    short = kward([[text("only one step")]])
    s = short.session()
    _, first = short.run(s["id"], "one")
    check_turn_events(first, "completed")
    _, second = short.run(s["id"], "two")
    message = check_turn_events(second, "failed")["error"]["message"]
    assert "no step 2" in message and "loop" in message


@pytest.mark.slow
def test_a_script_field_of_the_wrong_type_fails_the_turn_naming_it(kward):
    cases = [
        ({"type": "text", "text": "x", "repeat": "many"}, '(text) "repeat" must be a positive integer'),
        ({"type": "reasoning", "text": "x", "repeat": 0}, '(reasoning) "repeat" must be a positive integer'),
        ({"type": "delay", "seconds": "soon"}, '(delay) "seconds" must be a number >= 0'),
        ({"type": "retry", "delaySeconds": -1}, '(retry) "delaySeconds" must be a number >= 0'),
        ({"type": "toolCall", "name": "read_file", "arguments": 5}, '(toolCall) "arguments" must be an object or a JSON string'),
        ({"type": "waitForSteer", "timeout": [1]}, '(waitForSteer) "timeout" must be a number >= 0'),
        ({"type": "error", "status": "500"}, '(error) "status" must be an integer'),
        ({"type": "text"}, '(text) needs a "text" string'),
        ({"type": "toolCall"}, '(toolCall) needs a "name"'),
    ]
    for event, problem in cases:
        k = kward([[text("fine")], [event]])
        s = k.session()
        _, events = k.run(s["id"])
        message = check_turn_events(events, "failed")["error"]["message"]
        assert "steps[1].events[0] " + problem in message and ".json" in message, (event, message)
        k.close()
    k = kward([{"events": [text("x")], "usage": {"input_tokens": "lots"}}])
    _, events = k.run(k.session()["id"])
    assert "steps[0].usage must be an object of numbers" in check_turn_events(events, "failed")["error"]["message"]
    # optional fields given as null count as absent
    k = kward([[{"type": "retry", "delaySeconds": None, "error": None}, text("ok", repeat=None)]])
    _, events = k.run(k.session()["id"])
    check_turn_events(events, "completed")
    assert [e["payload"]["error"] for e in events if e["type"] == "modelRetry"] == ["Scripted transient error"]


def test_a_looping_script_starts_over(kward):
    k = kward([[text("a")], [text("b")]], loop=True)
    s = k.session()
    answers = []
    for i in range(3):
        _, events = k.run(s["id"], f"turn {i}")
        check_turn_events(events, "completed")
        answers.append(payload(events, "answer")["content"])
    assert answers == ["a", "b", "a"]


def test_the_first_input_names_the_session(kward):
    k = kward([[text("hi")], [text("again")]])
    s = k.session()
    k.run(s["id"], "  Fix   the\nflaky test in parser.py  ")
    state = k.request("runtime/state", {"sessionId": s["id"]})
    assert state["sessionName"] == "Fix the flaky test in parser.py"
    k.run(s["id"], "something else")
    assert k.request("runtime/state", {"sessionId": s["id"]})["sessionName"] == "Fix the flaky test in parser.py"
    info = [r for r in k.records(s) if r["type"] == "session_info"]
    assert [r["name"] for r in info] == ["Fix the flaky test in parser.py"]


def test_cancel_after_the_turn_finished_changes_nothing(kward):
    k = kward([[text("done")]])
    s = k.session()
    turn, events = k.run(s["id"])
    after = k.request("turns/cancel", {"turnId": turn["id"]})
    assert after["status"] == "completed" and after["cancelRequested"] is False
    assert k.request("turns/events", {"turnId": turn["id"]})["events"] == events
    assert k.events(turn["id"]) == events


def test_the_steer_event_shape(kward):
    k = kward([[wait_for_steer(10), text("noted")], [text("steered answer")]])
    s = k.session()
    turn = k.start(s["id"], "start")
    k.wait_event(turn["id"], "turnStarted")
    k.start(s["id"], "also do this", streamingBehavior="steer")
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    (steered,) = payloads(events, "turnSteered")
    assert steered["input"] == "also do this" and ISO.match(steered["createdAt"])


def test_a_model_that_never_answers_stops_at_the_step_limit(kward):
    k = kward([[tool("list_directory", {"path": "."})]], loop=True)
    s = k.session()
    _, events = k.run(s["id"], "loop forever", timeout=30)
    finished = check_turn_events(events, "failed")
    assert finished["error"]["message"] == "The turn stopped after 50 model calls without a final answer"
    assert [e["type"] for e in events].count("toolResult") == 50
    stats = k.request("runtime/stats", {"sessionId": s["id"]})
    assert stats["assistantMessages"] == stats["toolResults"] == 50


def test_without_a_script_the_demo_explores_the_workspace_with_the_real_tools(kward):
    k = kward(demo=True, files={"README.md": "# Widget\nA tiny widget library.\n", "src/widget.py": "x = 1\n"})
    s = k.session()
    _, events = k.run(s["id"], "what is this project?")
    check_turn_events(events, "completed")
    calls = [(e["payload"]["toolName"], e["payload"]["args"]) for e in events if e["type"] == "toolCall"]
    assert calls == [("list_directory", {"path": "."}), ("read", {"path": "README.md", "limit": 40})]
    results = [e["payload"]["result"] for e in events if e["type"] == "toolResult"]
    assert results[0]["content"] == "README.md\nsrc/" and results[1]["content"].startswith("# Widget")
    assert "reasoningDelta" in [e["type"] for e in events]
    answer = payload(events, "answer")["content"]
    assert "1 file and 1 directory" in answer and 'begins: "Widget"' in answer
    assert "".join(e["payload"]["delta"] for e in events if e["type"] == "assistantDelta").endswith(answer)
    assert k.request("runtime/state", {"sessionId": s["id"]})["model"]["id"] == "scripted-demo"
