"""Several `kward rpc` processes on one session (as a UI runs them: a long-lived process per chat
plus short-lived ones that resume, act, rename and close): the cross-process turn lock
(`session_busy`) and consistent views of a session renamed elsewhere."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from lib.rpc_sessions import TEXT_ONLY, start, workspace  # noqa: F401 (fixtures)
from lib.scripts import text, wait_for_steer
from lib.session_records import messages_of, names_of, recorded, session_files, strict_records, typed

#: A turn that streams, then waits until the client steers it, then answers.
WAIT_FOR_STEER = [
    [text("A is working"), wait_for_steer(30)],
    [text("A is done")],
]


@pytest.mark.slow
def test_turn_on_a_session_another_process_is_running_is_session_busy(start):
    a, b = start(WAIT_FOR_STEER), start(TEXT_ONLY)
    s = a.create(name="shared")
    turn = a.start_turn(s["id"], "long job")  # the lock is held once turns/start answers
    a.wait_event(turn["id"], "assistantDelta")
    r = b.resume(s["path"])                   # resuming a session another process runs is fine
    assert r["persistentId"] == s["persistentId"]
    for _ in range(2):
        err = b.error("turns/start", {"sessionId": r["id"], "input": "from B"})
        assert err.code == -32602 and err.reason == "session_busy", err.error
        assert err.error["data"]["errorClass"] == "SessionBusy" and err.error["data"]["path"] == s["path"]
    assert [n for n in b.notifications if n["method"] == "turn/event"] == []  # nothing was queued
    # B can still read and rename while A's turn runs
    assert [m["role"] for m in b.transcript(r["id"])["messages"]] == ["user"]
    assert b.request("sessions/rename", {"sessionId": r["id"], "name": "renamed during A's turn"})["name"]
    # A's turn is undisturbed: steer it to its end
    assert a.start_turn(s["id"], "go on", "steer")["id"] == turn["id"]
    assert a.outcome(turn["id"]) == "completed"
    assert a.wait_event(turn["id"], "answer")["payload"]["content"] == "A is done"
    b.run_turn(r["id"], "from B")  # at once: the lock was released before turnFinished went out
    texts = [m["content"] for m in messages_of(strict_records(s["path"]))]
    assert texts == ["long job", "A is working", "go on", "A is done", "from B", "Done."]
    # each process folds in what the other wrote
    assert [m["role"] for m in a.transcript(s["id"])["messages"]] == ["user", "assistant"] * 3
    assert a.transcript(s["id"])["session"]["name"] == "renamed during A's turn"
    assert names_of(strict_records(s["path"])) == ["shared", "renamed during A's turn"]
    a.run_turn(s["id"], "A again")  # and A may run one again after B's
    assert len(messages_of(strict_records(s["path"]))) == 8


@pytest.mark.slow
def test_turn_finished_means_the_session_is_free_for_another_process(start):
    """Another process may start a turn the moment it sees turnFinished (the lock is
    released before turnFinished is sent)."""
    a, b = start(TEXT_ONLY), start(TEXT_ONLY)
    s = a.create(name="ping-pong")
    r = b.resume(s["path"])
    for i in range(20):
        for client, sid in ((a, s["id"]), (b, r["id"])):
            # right after the other process's turnFinished
            msg = client.response(client.send("turns/start", {"sessionId": sid, "input": f"turn {i}"}))
            assert "error" not in msg, (i, msg)  # session_busy here: the lock outlived turnFinished
            assert client.outcome(msg["result"]["id"]) == "completed"
    assert len(messages_of(strict_records(s["path"]))) == 80


@pytest.mark.slow
def test_short_lived_process_resumes_renames_and_closes_a_session_a_long_lived_one_has_open(start, isolated_home):
    a = start()
    s = a.create()
    a.run_turn(s["id"], "long-lived content")
    empty_named = a.create(name="empty but named")
    files_before = session_files(isolated_home)
    bytes_before = {p: Path(p).read_bytes() for p in (s["path"], empty_named["path"])}
    transcript_before = a.transcript(s["id"])["messages"]

    b = start()
    rb = b.resume(s["path"])
    assert rb["name"] == "long-lived content" and rb["persistentId"] == s["persistentId"] and rb["id"] != s["id"]
    assert b.transcript(rb["id"])["messages"] == transcript_before
    assert b.request("sessions/rename", {"sessionId": rb["id"], "name": "Renamed by B"})["name"] == "Renamed by B"
    assert b.request("sessions/close", {"sessionId": rb["id"]}) == {"closed": True}
    eb = b.resume(empty_named["path"])
    assert b.request("sessions/rename", {"sessionId": eb["id"], "name": ""}).get("name") is None  # now unused...
    assert b.request("sessions/close", {"sessionId": eb["id"]}) == {"closed": True}
    assert b.close() == 0

    # nothing deleted (A still has both open); each file only grew by the one rename record
    assert session_files(isolated_home) == files_before
    for path, before in bytes_before.items():
        now = Path(path).read_bytes()
        assert now.startswith(before) and now[len(before):].count(b"\n") == 1
        strict_records(path)
    # A's views show the new names
    assert a.transcript(s["id"])["session"]["name"] == "Renamed by B"
    assert a.transcript(s["id"])["messages"] == transcript_before
    assert a.request("runtime/state", {"sessionId": s["id"]})["sessionName"] == "Renamed by B"
    assert a.request("runtime/stats", {"sessionId": s["id"]})["sessionName"] == "Renamed by B"
    assert a.request("runtime/state", {"sessionId": empty_named["id"]})["sessionName"] is None
    listed = {i["path"]: i.get("name") for i in a.listing()}
    assert listed[s["path"]] == "Renamed by B"
    # A goes on writing; a fresh process sees one consistent history
    a.run_turn(s["id"], "after the rename")
    assert a.request("runtime/state", {"sessionId": s["id"]})["messageCount"] == 8
    c = start()
    rc = c.resume(s["path"])
    assert rc["name"] == "Renamed by B"
    assert c.transcript(rc["id"])["messages"] == a.transcript(s["id"])["messages"]
    assert c.close() == 0
    # A now has the only handle on the unused session: its shutdown removes it, keeps the other
    assert a.close() == 0
    assert os.path.exists(s["path"]) and not os.path.exists(empty_named["path"])


@pytest.mark.slow
def test_a_turn_run_elsewhere_shows_up_in_the_long_lived_view(start):
    a, b = start(), start()
    s = a.create(name="shared")
    a.run_turn(s["id"], "from A")
    rb = b.resume(s["path"])
    b.run_turn(rb["id"], "from B")
    assert b.close() == 0
    state = a.request("runtime/state", {"sessionId": s["id"]})
    assert state["messageCount"] == 8 and state["sessionName"] == "shared"
    assert a.request("runtime/stats", {"sessionId": s["id"]})["totalMessages"] == 8
    assert [m["content"][0]["text"] for m in a.transcript(s["id"])["messages"] if m["role"] == "user"] == \
        ["from A", "from B"]
    assert a.request("sessions/forkMessages", {"sessionId": s["id"]})["messages"][1] == \
        {"entryId": "message:4", "text": "from B"}


# --- the turn-lock hand-off of kward/agent/scheduler.py, reproduced deterministically ----------
# These drive the real TurnManager over real sessions (one SessionManager per simulated
# process: flock conflicts between open file descriptions, so that is the cross-process
# situation) at the two moments where the lock used to be handed off wrongly: a turn
# started by another process the moment turnFinished is published, and a turn started in
# this process while the lane is still releasing the lock.


def _turn_manager(execute, publish=lambda event: None):
    from kward.agent.scheduler import TurnManager

    threads: list[threading.Thread] = []

    def submit(job) -> bool:
        thread = threading.Thread(target=job, daemon=True)
        thread.start()
        threads.append(thread)
        return True

    return TurnManager(submit=submit, publish=publish, make_room=lambda: None, execute=execute,
                       steering_supported=lambda: False), threads


def _execute(turn, session) -> None:
    session.append_message(typed({"role": "user", "content": turn.input}))


def test_the_turn_lock_is_free_when_turn_finished_is_published(tmp_path):
    """Another process starting a turn from inside the publish of turnFinished succeeds."""
    from kward.sessions.manager import SessionManager

    ws = tmp_path / "ws"
    ws.mkdir()
    first = SessionManager(tmp_path / "sessions", default_workspace=str(ws))
    second = SessionManager(tmp_path / "sessions", default_workspace=str(ws))
    a = first.create(name="shared")
    b = second.resume(a.path)
    b_turns, b_threads = _turn_manager(_execute)
    outcome: list[Any] = []

    def publish(event) -> None:  # the other process acts the moment it sees turnFinished
        if event.type == "turnFinished" and not outcome:
            try:
                outcome.append(b_turns.start(b, "from the other process", []))
            except Exception as exc:  # noqa: BLE001 - reported below
                outcome.append(exc)

    a_turns, a_threads = _turn_manager(_execute, publish)
    a_turns.start(a, "from A", [])
    for thread in a_threads:
        thread.join(10)
    for thread in b_threads:
        thread.join(10)
    try:
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        assert [m["content"] for m in recorded(b.entry_messages())] == ["from A", "from the other process"]
    finally:
        first.shutdown_all()
        second.shutdown_all()


@pytest.mark.slow
def test_a_turn_started_while_the_lane_releases_its_lock_is_queued(tmp_path):
    """A turn started while the lane is releasing the lock (fsync, close) waits for the
    release and runs, instead of failing session_busy on this process's own lock."""
    from kward.sessions.manager import SessionManager

    ws = tmp_path / "ws"
    ws.mkdir()
    manager = SessionManager(tmp_path / "sessions", default_workspace=str(ws))
    session = manager.create(name="lane")
    real_turn_lock = session.shared.turn_lock
    releasing, proceed = threading.Event(), threading.Event()

    @contextlib.contextmanager
    def turn_lock():  # pauses the lane in the middle of releasing the lock
        with real_turn_lock():
            yield session
            if not proceed.is_set():
                releasing.set()
                proceed.wait(10)

    session.shared.turn_lock = turn_lock
    turns, threads = _turn_manager(_execute)
    turns.start(session, "one", [])
    assert releasing.wait(10)  # the queue is empty and the lane is releasing its lock
    outcome: list[Any] = []
    starter = threading.Thread(target=lambda: outcome.append(_start_or_error(turns, session, "two")))
    starter.start()
    starter.join(1)  # the start waits for the release (a faulty lane fails it at once): let it go
    proceed.set()
    starter.join(10)
    for thread in threads:
        thread.join(10)
    try:
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        assert turns.get(outcome[0].id).status == "completed"
        assert [m["content"] for m in recorded(session.entry_messages())] == ["one", "two"]
    finally:
        manager.shutdown_all()


def _start_or_error(turns, session, text):
    try:
        return turns.start(session, text, [])
    except Exception as exc:  # noqa: BLE001 - the test re-raises it
        return exc
