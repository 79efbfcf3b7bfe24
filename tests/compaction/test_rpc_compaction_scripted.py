"""sessions/compact with the Scripted provider over the real `kward rpc`: the script plays
the summary, the record lands in the file, the next turn and a new process see the
compacted context, and the errors of a compaction that cannot run."""

from __future__ import annotations

from lib.compaction_helpers import compaction_records, session_events, wait_session_events, write_compaction_config
from lib.rpc_client import RpcClient
from lib.scripted_kward import kward  # noqa: F401 - fixture
from lib.scripts import delay, step, text, usage
from lib.session_records import read_records
from lib.turn_events import payload

LONG = "please look at the parser " * 8  # ~200 chars: ~51 estimated tokens
SUMMARY = "## Goal\n- Fix the parser\n\n## Files & Code\n### Read\n- stale.py\n\n### Modified\n- stale.py\n\n## Next Steps\n1. Go on"


def turn_texts(k, session_id, inputs):
    for value in inputs:
        _, events = k.run(session_id, value)
        assert events[-1]["payload"]["status"] == "completed", events[-2:]


def test_manual_compaction_with_a_scripted_summary(kward, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=100)
    k = kward([[text("one")], [text("two")], [text("three")], [text("four")]],
              compaction=[text(SUMMARY)])
    s = k.session()
    turn_texts(k, s["id"], [LONG + "1", LONG + "2", LONG + "3"])
    result = k.request("sessions/compact", {"sessionId": s["id"], "customInstructions": "keep the parser"})
    assert result["firstKeptEntryId"] == "message:4"  # the third user message: a turn boundary
    assert result["summary"].startswith("## Goal\n- Fix the parser")
    # Files & Code rewritten from the tracked tool calls (none here): the model's list is replaced
    assert "### Read\n- (none)\n\n### Modified\n- (none)" in result["summary"] and "stale.py" not in result["summary"]
    assert result["details"] == {"read_files": [], "modified_files": []}
    assert isinstance(result["tokensBefore"], int) and result["tokensBefore"] > 100

    start, end = wait_session_events(k.client, 2, s["id"])  # compactionEnd comes after the response
    assert (start["type"], start["payload"]) == ("compactionStart", {"reason": "manual"})
    assert end["type"] == "compactionEnd"
    after = end["payload"]["estimatedTokensAfter"]
    assert isinstance(after, int) and 0 < after < result["tokensBefore"]
    assert end["payload"] == {"result": result, "aborted": False, "willRetry": False, "errorMessage": None,
                              "estimatedTokensAfter": after}

    [record] = compaction_records(s["path"])
    message = record["message"]
    assert message["role"] == "compactionSummary" and message["summary"] == result["summary"]
    assert message["first_kept_entry_id"] == "message:4" and message["from_hook"] is False
    assert message["tokens_before"] == result["tokensBefore"] and message["details"] == result["details"]
    # the Scripted summarizer's usage is counted from the characters, and stored as such
    assert message["summarizer_usage"]["estimated"] is True and message["summarizer_usage"]["input_tokens"] > 0
    assert len([r for r in read_records(s["path"]) if r["type"] == "message"]) == 6  # history stays in the file

    transcript = k.request("sessions/transcript", {"sessionId": s["id"]})["messages"]
    assert [m["role"] for m in transcript] == ["compactionSummary", "user", "assistant"]
    # the script goes on where it was: the summary stands for the two assistant messages it replaced
    _, events = k.run(s["id"], "and now?")
    assert payload(events, "answer") == {"content": "four"}
    state = k.request("runtime/state", {"sessionId": s["id"]})
    assert state["autoCompactionEnabled"] is True and state["isCompacting"] is False
    assert k.request("runtime/stats", {"sessionId": s["id"]})["autoCompactionEnabled"] is True

    # a new process rebuilds the same context from the file
    k.close()
    other = RpcClient(isolated_home, cwd=k.ws, env=k.env)
    with other:
        resumed = other.request("sessions/resume", {"path": s["path"]})
        again = other.request("sessions/transcript", {"sessionId": resumed["id"]})["messages"]
        assert [m["role"] for m in again] == ["compactionSummary", "user", "assistant", "user", "assistant"]
        assert again[0]["summary"] == result["summary"] and again[1]["content"][0]["text"] == LONG + "3"
        other.close()


def test_the_builtin_scripted_checkpoint_and_the_refusals(kward, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=60)
    k = kward([[text("one")], [text("two")]])
    s = k.session()
    error = k.error("sessions/compact", {"sessionId": s["id"]})
    assert (error.code, error.reason, error.error["message"]) == (-32602, "nothing_to_compact", "Nothing to compact")
    turn_texts(k, s["id"], [LONG + "1", LONG + "2"])
    result = k.request("sessions/compact", {"sessionId": s["id"]})
    assert result["summary"].startswith("## Goal\n- " + " ".join((LONG + "1").split())[:60])
    assert "1 assistant entries summarized" in result["summary"]
    error = k.error("sessions/compact", {"sessionId": s["id"]})  # nothing new since: the kept part fits
    assert error.reason == "nothing_to_compact"
    assert [e["type"] for e in wait_session_events(k.client, 2)] == ["compactionStart", "compactionEnd"]
    assert len(session_events(k.client)) == 2  # refusals: none (their answers came after that compactionEnd)


def test_bad_params_and_unknown_sessions(kward):
    k = kward([[text("one")]])
    s = k.session()
    for params in ({}, {"sessionId": 5}, {"sessionId": s["id"], "customInstructions": 7},
                   {"sessionId": s["id"], "customInstructions": ["x"]}):
        error = k.error("sessions/compact", params)
        assert (error.code, error.reason) == (-32602, "invalid_params"), params
    error = k.error("sessions/compact", {"sessionId": "nope", "customInstructions": 7})  # params first
    assert (error.reason, error.error["message"]) == ("invalid_params", "Invalid params: 'customInstructions' must be a string")
    error = k.error("sessions/compact", {"sessionId": "nope", "customInstructions": "x"})
    assert (error.reason, error.error["message"]) == ("session_not_found", "Unknown session: nope")
    caps = k.request("initialize")["capabilities"]["sessions"]
    assert caps["compact"]["supported"] is True and "sessions/compact" in caps["methods"]
    assert read_records(s["path"])[-1]["type"] == "session"  # nothing was written


def test_compaction_refuses_during_a_turn_and_turns_wait_for_a_compaction(kward, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=60)
    k = kward([[text("one")], [text("tick"), delay(30), text("never")], [text("three")]],
              compaction=[delay(1.0), text("## Goal\n- slow summary")])
    s = k.session()
    turn_texts(k, s["id"], [LONG + "1"])
    running = k.start(s["id"], LONG + "2")
    k.wait_event(running["id"], "assistantDelta")
    error = k.error("sessions/compact", {"sessionId": s["id"]})
    assert (error.code, error.reason) == (-32602, "turn_in_progress")
    k.request("turns/cancel", {"turnId": running["id"]})
    assert k.finish(running["id"])[-1]["payload"]["status"] == "canceled"

    pending = k.client.send("sessions/compact", {"sessionId": s["id"]})
    k.wait_notification(lambda n: n["method"] == "session/event" and n["params"]["type"] == "compactionStart")
    queued = k.start(s["id"], "after the compaction")  # queued behind it, runs once it ended
    events = k.finish(queued["id"])
    result = k.client.response(pending)["result"]
    assert payload(events, "answer") == {"content": "three"}
    order = [n["params"]["type"] for n in k.client.notifications if n["method"] == "session/event"
             or (n["method"] == "turn/event" and n["params"]["turnId"] == queued["id"])]
    assert order.index("compactionEnd") < order.index("turnStarted")  # the turn waited for the compaction
    assert result["summary"].startswith("## Goal\n- slow summary")
    assert k.request("runtime/state", {"sessionId": s["id"]})["isCompacting"] is False


def test_cost_and_tokens_never_go_down_across_a_compaction_and_a_resume(kward, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=60)
    k = kward([step(text("one"), usage=usage(100, 10, cost=0.25)), step(text("two"), usage=usage(200, 20, cost=0.5)),
               step(text("three"), usage=usage(300, 30, cost=1.0))], compaction=[text(SUMMARY)])
    s = k.session()
    turn_texts(k, s["id"], [LONG + "1", LONG + "2"])
    seen = [k.request("runtime/stats", {"sessionId": s["id"]})]
    assert seen[0]["cost"] == 0.75 and seen[0]["tokens"]["input"] == 300
    k.request("sessions/compact", {"sessionId": s["id"]})
    seen.append(k.request("runtime/stats", {"sessionId": s["id"]}))
    summarizer = seen[1]["tokens"]["input"] - 300  # the Scripted summarizer's estimated usage, counted
    assert summarizer > 0 and seen[1]["cost"] == 0.75
    turn_texts(k, s["id"], ["and on"])
    seen.append(k.request("runtime/stats", {"sessionId": s["id"]}))
    assert seen[2]["cost"] == 1.75 and seen[2]["tokens"]["input"] == 600 + summarizer
    k.close()
    other = RpcClient(isolated_home, cwd=k.ws, env=k.env)
    with other:
        resumed = other.request("sessions/resume", {"path": s["path"]})
        seen.append(other.request("runtime/stats", {"sessionId": resumed["id"]}))
        other.close()
    assert (seen[3]["cost"], seen[3]["tokens"]) == (seen[2]["cost"], seen[2]["tokens"])
    for earlier, later in zip(seen, seen[1:]):
        assert later["cost"] >= earlier["cost"]
        assert all(later["tokens"][key] >= earlier["tokens"][key] for key in earlier["tokens"])


def test_a_compaction_in_flight_at_shutdown_is_answered_shutting_down(kward, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=60)
    k = kward([[text("one")], [text("two")]], compaction=[delay(30), text("## Goal\n- never")])
    s = k.session()
    turn_texts(k, s["id"], [LONG + "1", LONG + "2"])
    pending = k.client.send("sessions/compact", {"sessionId": s["id"]})
    k.wait_notification(lambda n: n["method"] == "session/event" and n["params"]["type"] == "compactionStart")
    assert k.request("shutdown") == {"ok": True}
    assert k.wait_exit(10) == 0
    err = k.client.response(pending, timeout=0)["error"]
    assert (err["code"], err["data"]["reason"], err["data"]["method"]) == (-32600, "shutting_down",
                                                                           "sessions/compact"), err
    assert [r["type"] for r in read_records(s["path"])].count("compaction") == 0
