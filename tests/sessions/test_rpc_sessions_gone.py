"""No silent loss when a session file goes away under a process that has it open.
Tauren deletes sessions from its list through a second, short-lived `kward rpc`:
that delete is refused (`session_in_use`) while another live process has the session open,
unless `force: true`; and a process whose open file was deleted, moved or replaced fails
what it would save (`session_file_gone`), never reporting a turn `completed` that nothing
saved."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.rpc_sessions import TEXT_ONLY, start, workspace  # noqa: F401 (fixtures)
from lib.scripts import text, wait_for_steer
from lib.session_records import messages_of, strict_records

#: A turn that streams, then waits until the client steers it, then answers.
WAIT_FOR_STEER = [
    [text("working"), wait_for_steer(30)],
    [text("done")],
]


def sidecars(path: str) -> list[str]:
    return [suffix for suffix in ("", ".lock", ".open") if os.path.exists(path + suffix)]


def completed(k, session_id: str) -> list[str]:
    """Turn ids of this session that finished `completed`."""
    with k._cond:
        return [n["params"]["turnId"] for n in k.notifications
                if n["method"] == "turn/event" and n["params"]["sessionId"] == session_id
                and n["params"]["type"] == "turnFinished" and n["params"]["payload"]["status"] == "completed"]


def assert_gone(err, path: str) -> None:
    assert err.code == -32602 and err.reason == "session_file_gone", err.error
    assert path in err.error["message"] and err.error["data"]["path"] == path
    assert err.error["data"]["errorClass"] == "SessionFileGone"


def settled(k, session_id: str) -> None:
    """Wait until every turn of the session has finished (a steer the failed turn could
    not take becomes a follow-up turn, which fails the same way)."""
    def done() -> bool:
        kinds = [n["params"]["type"] for n in k.notifications
                 if n["method"] == "turn/event" and n["params"]["sessionId"] == session_id]
        return kinds.count("turnQueued") == kinds.count("turnFinished")

    k.wait(done, 20, "every turn finished")


def assert_turn_failed_gone(k, turn_id: str, path: str) -> None:
    finished = k.wait_event(turn_id, "turnFinished")["payload"]
    assert finished["status"] == "failed", finished
    assert finished["error"]["reason"] == "session_file_gone" and path in finished["error"]["message"]
    kinds = [e["type"] for e in k.events(turn_id)]
    assert kinds.count("turnFinished") == 1 and "error" in kinds


@pytest.mark.slow
def test_delete_from_another_process_is_refused_while_one_has_it_open_unless_forced(start):
    a = start(TEXT_ONLY)
    s = a.create(name="open in A")
    a.run_turn(s["id"], "A's content")
    before = Path(s["path"]).read_bytes()

    b = start(TEXT_ONLY)  # Tauren's short-lived process
    rb = b.resume(s["path"])
    for params in ({"sessionId": rb["id"]}, {"sessionId": rb["id"], "force": False}):
        err = b.error("sessions/delete", params)
        assert err.code == -32602 and err.reason == "session_in_use", err.error
        assert err.error["data"]["path"] == s["path"] and "force" in err.error["message"]
    assert Path(s["path"]).read_bytes() == before and sidecars(s["path"]) == ["", ".lock"]
    assert b.transcript(rb["id"])["session"]["name"] == "open in A"  # B's id still works: nothing changed
    err = b.error("sessions/delete", {"sessionId": rb["id"], "force": "yes"})
    assert err.code == -32602 and err.error["data"]["param"] == "force"
    a.run_turn(s["id"], "A goes on")  # A is untouched

    # with force, B deletes it
    assert b.request("sessions/delete", {"sessionId": rb["id"], "force": True}) == {"deleted": True, "path": s["path"]}
    assert sidecars(s["path"]) == []
    assert b.close() == 0

    # A notices at once: no turn starts, nothing is renamed, nothing reports success
    done_before = completed(a, s["id"])
    assert_gone(a.error("turns/start", {"sessionId": s["id"], "input": "lost?"}), s["path"])
    assert_gone(a.error("sessions/rename", {"sessionId": s["id"], "name": "lost?"}), s["path"])
    assert completed(a, s["id"]) == done_before
    assert sidecars(s["path"]) == []  # A re-created nothing beside the deleted file
    # A's view still reads, and closing (or deleting) the id changes nothing on disk
    assert [m["role"] for m in a.transcript(s["id"])["messages"]] == ["user", "assistant"] * 2
    assert a.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    assert sidecars(s["path"]) == [] and a.listing() == []


@pytest.mark.slow
def test_a_forced_delete_from_another_process_fails_the_running_turn(start):
    a = start(WAIT_FOR_STEER)
    s = a.create(name="running in A")
    turn = a.start_turn(s["id"], "long job")
    a.wait_event(turn["id"], "assistantDelta")
    b = start(TEXT_ONLY)
    rb = b.resume(s["path"])
    err = b.error("sessions/delete", {"sessionId": rb["id"]})  # A runs a turn: in use
    assert err.reason == "session_in_use"
    err = a.error("sessions/delete", {"sessionId": s["id"]})  # B has it open: A may not either...
    assert err.reason == "session_in_use"
    assert a.request("runtime/state", {"sessionId": s["id"]})["isStreaming"] is True  # ...and A's turn runs on
    assert b.request("sessions/delete", {"sessionId": rb["id"], "force": True})["deleted"] is True
    assert b.close() == 0
    a.start_turn(s["id"], "go on", "steer")  # the turn goes on and tries to save
    assert_turn_failed_gone(a, turn["id"], s["path"])
    settled(a, s["id"])
    assert completed(a, s["id"]) == [] and sidecars(s["path"]) == []
    # the process is fine otherwise
    other = a.create(name="another")
    assert a.start_turn(other["id"], "fresh")["status"] == "queued"


def test_a_file_unlinked_under_the_process_fails_turns_and_writes(start, workspace):
    k = start(WAIT_FOR_STEER)
    s = k.create(name="unlinked")
    running = k.start_turn(s["id"], "long job")
    k.wait_event(running["id"], "assistantDelta")
    os.unlink(s["path"])  # by anything: a user's rm, a cleanup script
    k.start_turn(s["id"], "go on", "steer")
    assert_turn_failed_gone(k, running["id"], s["path"])
    settled(k, s["id"])
    assert_gone(k.error("turns/start", {"sessionId": s["id"], "input": "again"}), s["path"])
    assert_gone(k.error("sessions/rename", {"sessionId": s["id"], "name": "x"}), s["path"])
    assert completed(k, s["id"]) == [] and not os.path.exists(s["path"])
    # deleting it now closes the id and removes the sidecars the unlink left behind
    assert sidecars(s["path"]) == [".lock"]
    assert k.request("sessions/delete", {"sessionId": s["id"]}) == {"deleted": True, "path": s["path"]}
    assert sidecars(s["path"]) == []
    err = k.error("sessions/rename", {"sessionId": s["id"], "name": "x"})
    assert err.error["message"] == f"Unknown session: {s['id']}"


def test_a_file_replaced_under_the_process_is_left_alone_and_can_be_resumed(start, workspace):
    k = start(TEXT_ONLY)
    s = k.create(name="replaced")
    k.run_turn(s["id"], "original")
    copy = workspace / "copy.jsonl"
    copy.write_bytes(Path(s["path"]).read_bytes())
    os.replace(copy, s["path"])  # e.g. an editor's save, a restore from backup: a new inode
    replacement = Path(s["path"]).read_bytes()
    assert_gone(k.error("turns/start", {"sessionId": s["id"], "input": "into which file?"}), s["path"])
    err = k.error("sessions/delete", {"sessionId": s["id"], "force": True})
    assert_gone(err, s["path"])  # the file at the path now is not the one this id wrote
    assert Path(s["path"]).read_bytes() == replacement
    # resuming the path opens the file that is there now, under a new id
    r = k.resume(s["path"])
    k.run_turn(r["id"], "into the new file")
    assert [m["content"] for m in messages_of(strict_records(s["path"]))] == [
        "original", "Done.", "into the new file", "Done."]
    assert k.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    assert os.path.exists(s["path"]) and k.transcript(r["id"])["session"]["path"] == s["path"]
