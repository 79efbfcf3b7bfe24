"""One session file under several RPC ids in one `kward rpc`: resuming a
file the process has open answers a new id on the same open session, turns through every
id queue FIFO on one lane, closing one id leaves the others working, deleting through one
closes them all; and opening answers are complete even when pipelined."""

from __future__ import annotations

import os
import re

import pytest

from lib.rpc_sessions import TEXT_ONLY, start, workspace  # noqa: F401 (fixtures)
from lib.scripts import text, tool, wait_for_steer
from lib.session_records import messages_of, strict_records

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SESSION_KEYS = {"id", "persistentId", "path", "workspaceRoot", "cwd", "createdAt", "modifiedAt"}

#: The first turn streams and waits until it is steered; every later model call answers at once.
FIRST_WAITS = [
    [text("working"), wait_for_steer(30)],
    [text("first done")],
    [text("second done")],
    [text("third done")],
    [text("fourth done")],
]

#: The first turn streams, then asks a question (it runs until it is answered); every later
#: model call answers at once.
FIRST_ASKS = [
    [text("working"), tool("ask_user_question", {"questions": [{
        "question": "Which color?", "header": "Color",
        "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}]}, id="ask")],
    [text("first done")],
    [text("second done")],
    [text("third done")],
    [text("fourth done")],
    [text("fifth done")],
]


def complete(payload: dict) -> bool:
    return (SESSION_KEYS <= set(payload) and bool(ISO.match(payload["createdAt"]))
            and bool(ISO.match(payload["modifiedAt"])) and payload["createdAt"] <= payload["modifiedAt"])


def turn_events(k, session_id: str) -> list[tuple[str, str]]:
    """(turnId, type) of every turn/event carrying `session_id`, in arrival order."""
    with k._cond:
        return [(n["params"]["turnId"], n["params"]["type"]) for n in k.notifications
                if n["method"] == "turn/event" and n["params"]["sessionId"] == session_id]


def unknown(k, session_id: str, method: str = "turns/start", **params) -> bool:
    if method == "turns/start":  # (params that fit: those that do not are refused before the session is looked up)
        params.setdefault("input", "hi")
    err = k.error(method, {"sessionId": session_id, **params})
    return err.error["message"] == f"Unknown session: {session_id}" and err.reason == "session_not_found"


@pytest.mark.slow
def test_resume_of_an_open_file_answers_a_new_id_on_the_same_session(start, workspace):
    k = start(TEXT_ONLY)
    s = k.create(name="shared")
    os.symlink(s["path"], workspace / "alias.jsonl")
    ids = {s["id"]}
    for path in (s["path"], "alias.jsonl", os.path.relpath(s["path"], workspace)):
        r = k.resume(path)
        assert complete(r) and r["id"] not in ids, path
        assert (r["persistentId"], r["path"], r["name"]) == (s["persistentId"], s["path"], "shared")
        ids.add(r["id"])
    first, *others = sorted(ids)
    k.run_turn(first, "hello")
    for other in others:  # one live state: every id sees the turn at once
        assert [m["role"] for m in k.transcript(other)["messages"]] == ["user", "assistant"]
        assert k.transcript(other)["session"]["id"] == other
    renamed = k.request("sessions/rename", {"sessionId": others[0], "name": "renamed"})
    assert renamed["id"] == others[0] and k.request("runtime/state", {"sessionId": first})["sessionName"] == "renamed"
    assert [r["type"] for r in strict_records(s["path"])] == ["session", "session_info", "message", "message",
                                                              "session_info"]  # one writer, no duplicates
    assert len(k.listing()) == 1


def test_turns_through_two_ids_run_one_at_a_time_in_start_order(start):
    k = start(FIRST_ASKS, loop=False)
    a = k.create(name="fifo")
    b = k.resume(a["path"])
    t1 = k.start_turn(a["id"], "one")
    q = k.question()
    assert k.start_turn(b["id"], "go on", "steer")["id"] == t1["id"]  # steering reaches the running turn
    t2 = k.start_turn(b["id"], "two", "followUp")
    t3 = k.start_turn(a["id"], "three", "followUp")
    t4 = k.start_turn(b["id"], "four", "newTurn")
    assert (t2["status"], t3["status"], t4["status"]) == ("queued",) * 3
    assert (t1["sessionId"], t2["sessionId"], t3["sessionId"], t4["sessionId"]) == (a["id"], b["id"], a["id"], b["id"])
    for sid in (a["id"], b["id"]):  # either id sees the running turn and the queue
        state = k.request("runtime/state", {"sessionId": sid})
        assert state["isStreaming"] is True and state["pendingMessageCount"] == 3, sid
    t5 = k.start_turn(a["id"], "five", "steer")  # turns are queued: it queues behind them, never ahead
    assert t5["id"] not in (t1["id"], t2["id"], t3["id"], t4["id"]) and t5["status"] == "queued"
    k.request("ui/answerQuestion", {"sessionId": a["id"], "questionRequestId": q["questionRequestId"],
                                    "answers": ["Red"]})
    for turn in (t1, t2, t3, t4, t5):
        assert k.outcome(turn["id"]) == "completed"
    # each turn's events carry the id it was started through, and the turns did not overlap
    with k._cond:
        arrival = [(n["params"]["turnId"], n["params"]["type"]) for n in k.notifications
                   if n["method"] == "turn/event" and n["params"]["type"] in ("turnStarted", "turnFinished")]
    assert arrival == [(t["id"], kind) for t in (t1, t2, t3, t4, t5) for kind in ("turnStarted", "turnFinished")]
    assert {t for t, _ in turn_events(k, a["id"])} == {t1["id"], t3["id"], t5["id"]}
    assert {t for t, _ in turn_events(k, b["id"])} == {t2["id"], t4["id"]}
    texts = [m["content"] for m in messages_of(strict_records(a["path"]))]
    assert texts == ["one", "working", "Which color?: Red", "go on", "first done", "two", "second done",
                     "three", "third done", "four", "fourth done", "five", "fifth done"]
    assert k.request("runtime/state", {"sessionId": b["id"]})["isStreaming"] is False


@pytest.mark.slow
def test_closing_one_id_cancels_only_its_turns_and_leaves_the_other_working(start):
    k = start(FIRST_WAITS, loop=False)
    a = k.create(name="two ids")
    b = k.resume(a["path"])
    running = k.start_turn(b["id"], "b runs", "newTurn")
    k.wait_event(running["id"], "assistantDelta")
    queued = k.start_turn(a["id"], "a waits", "followUp")
    assert k.request("sessions/close", {"sessionId": a["id"]}) == {"closed": True}
    assert k.outcome(queued["id"]) == "canceled"  # a's queued turn goes with its id
    assert "turnStarted" not in [kind for t, kind in turn_events(k, a["id"]) if t == queued["id"]]
    assert unknown(k, a["id"]) and unknown(k, a["id"], "runtime/state")
    # b's running turn was not touched: steer it to its end, then b goes on
    assert k.request("runtime/state", {"sessionId": b["id"]})["isStreaming"] is True
    k.start_turn(b["id"], "go on", "steer")
    assert k.outcome(running["id"]) == "completed"
    k.run_turn(b["id"], "b again")
    assert k.request("sessions/rename", {"sessionId": b["id"], "name": "still b"})["name"] == "still b"
    assert [m["content"] for m in messages_of(strict_records(a["path"]))] == [
        "b runs", "working", "go on", "first done", "b again", "second done"]
    # a new id on the file while b is open, then closing b leaves the new one working
    c = k.resume(a["path"])
    assert k.request("sessions/close", {"sessionId": b["id"]}) == {"closed": True}
    k.run_turn(c["id"], "c now")
    assert k.transcript(c["id"])["session"]["name"] == "still b"
    assert k.request("sessions/close", {"sessionId": c["id"]}) == {"closed": True}
    assert os.path.exists(a["path"])  # the last id closed the file; content is kept
    assert len(messages_of(strict_records(a["path"]))) == 8
    assert k.resume(a["path"])["persistentId"] == a["persistentId"]


@pytest.mark.slow
def test_delete_through_one_id_deletes_the_file_and_closes_every_id(start):
    k = start(FIRST_WAITS, loop=False)
    a = k.create(name="doomed")
    b, c = k.resume(a["path"]), k.resume(a["path"])
    running = k.start_turn(b["id"], "b runs")
    k.wait_event(running["id"], "assistantDelta")
    assert k.request("sessions/delete", {"sessionId": a["id"]}) == {"deleted": True, "path": a["path"]}
    assert k.outcome(running["id"]) == "canceled"
    for suffix in ("", ".lock", ".open"):
        assert not os.path.exists(a["path"] + suffix), suffix
    for sid in (a["id"], b["id"], c["id"]):
        assert unknown(k, sid) and unknown(k, sid, "sessions/rename", name="x"), sid
        assert unknown(k, sid, "runtime/state") and unknown(k, sid, "sessions/delete"), sid
    assert k.listing() == []
    nxt = k.create(name="next")  # the process goes on
    assert [i["path"] for i in k.listing()] == [nxt["path"]]


@pytest.mark.slow
def test_cleanup_counts_a_file_open_under_several_ids_as_one_session(start):
    k = start(TEXT_ONLY)
    empty = k.create()
    again = k.resume(empty["path"])
    # closing one of the ids of an unused session keeps the file for the other
    assert k.request("sessions/close", {"sessionId": empty["id"]}) == {"closed": True}
    assert os.path.exists(empty["path"]) and k.transcript(again["id"])["messages"] == []
    third = k.resume(empty["path"])
    k.create(name="moving on")  # the unused session goes, with every id on it
    assert not os.path.exists(empty["path"])
    assert unknown(k, again["id"]) and unknown(k, third["id"])
    # one with content is kept however its ids come and go
    kept = k.create()
    k.run_turn(kept["id"], "content")
    other = k.resume(kept["path"])
    k.create()
    for sid in (kept["id"], other["id"]):
        assert k.transcript(sid)["session"]["path"] == kept["path"]


@pytest.mark.slow
def test_pipelined_opening_requests_each_answer_a_complete_payload(start):
    """Pipelined creates clean each other's unused files up at once; every answer is still
    the complete payload of a session that existed (createdAt <= modifiedAt). Pipelined
    resumes of one file share it."""
    k = start(TEXT_ONLY)
    for _ in range(3):
        ids = k.send_many([("sessions/create", {})] * 16)
        answers = [k.response(i) for i in ids]
        assert [a for a in answers if "error" in a] == []
        assert [a["result"] for a in answers if not complete(a["result"])] == []
        assert len({a["result"]["id"] for a in answers}) == 16
    named = k.create(name="resumed by many")
    ids = k.send_many([("sessions/resume", {"path": named["path"]})] * 12)
    answers = [k.response(i)["result"] for i in ids]
    assert all(complete(r) and r["persistentId"] == named["persistentId"] for r in answers)
    assert len({r["id"] for r in answers} | {named["id"]}) == 13
    k.run_turn(answers[-1]["id"], "through the last id")
    assert [m["role"] for m in k.transcript(answers[0]["id"])["messages"]] == ["user", "assistant"]
