"""Cleanup of idle, empty, unnamed sessions over the real `kward rpc`:
removed when the client creates/resumes/clones/forks into another session, on
sessions/close and at shutdown; never a named one or one with content, never one another
process has open; sessions/list never deletes."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from lib.rpc_sessions import start, workspace  # noqa: F401  (fixtures)
from lib.session_records import strict_records


def gone(session: dict) -> bool:
    return not any(os.path.exists(session["path"] + suffix) for suffix in ("", ".lock", ".open"))


def unknown(k, session: dict) -> bool:
    err = k.error("sessions/transcript", {"sessionId": session["id"]})
    return err.error["message"] == f"Unknown session: {session['id']}" and err.reason == "session_not_found"


def with_content(k, name: str | None = None) -> dict:
    """A session with one turn of content (unnamed unless `name`: the turn names it, we clear it)."""
    s = k.create()
    k.run_turn(s["id"], f"content for {name}")
    k.request("sessions/rename", {"sessionId": s["id"], "name": name})
    return s


@pytest.mark.slow
def test_moving_to_another_session_removes_the_idle_empty_unnamed_ones(start):
    k = start()
    source = with_content(k, "source")
    kept = [source, with_content(k), k.create(name="named but empty")]
    closed = with_content(k, "to resume")
    k.request("sessions/close", {"sessionId": closed["id"]})

    moves = [
        ("create", lambda: k.create(name="next")),
        ("resume", lambda: k.resume(closed["path"])),
        ("clone", lambda: k.request("sessions/clone", {"sessionId": source["id"]})),
        ("fork", lambda: k.request("sessions/fork", {"sessionId": source["id"], "entryId": "message:0"})["session"]),
        ("create unnamed", lambda: k.create()),
    ]
    first_fork = None  # a fork at the first message is empty and unnamed: unused until it gets content
    for what, move in moves:
        empty = k.create()
        assert os.path.exists(empty["path"])
        new = move()
        assert gone(empty) and unknown(k, empty), what
        assert os.path.exists(new["path"]), what
        if what == "fork":
            first_fork = new
        else:
            kept.append(new)
    assert first_fork is not None and gone(first_fork) and unknown(k, first_fork)
    *older, last_unnamed = kept
    for s in older:
        assert os.path.exists(s["path"]) and k.transcript(s["id"])["session"]["id"] == s["id"]
    # a session that was named and then cleared, with no content, is unused again
    k.request("sessions/rename", {"sessionId": last_unnamed["id"], "name": "x"})
    k.request("sessions/rename", {"sessionId": last_unnamed["id"], "name": ""})
    k.create(name="after")
    assert gone(last_unnamed)


@pytest.mark.slow
def test_close_removes_only_unused_sessions(start):
    k = start()
    named, content = k.create(name="named"), with_content(k)
    empty = k.create()  # the last one: creating another would remove it
    for s in (empty, named, content):
        assert k.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    assert gone(empty)
    assert os.path.exists(named["path"]) and os.path.exists(content["path"])
    assert [r["type"] for r in strict_records(content["path"])].count("message") == 4


@pytest.mark.slow
def test_shutdown_removes_unused_sessions(start):
    for end in ("eof", "shutdown", "sigterm"):
        k = start()
        named, content = k.create(name=f"named {end}"), with_content(k)
        empty = k.create()
        if end == "eof":
            assert k.close() == 0
        elif end == "shutdown":
            assert k.request("shutdown") == {"ok": True}
            assert k.wait_exit() == 0
        else:
            k.proc.send_signal(signal.SIGTERM)
            assert k.wait_exit() == 0
        assert gone(empty), end
        assert os.path.exists(named["path"]) and os.path.exists(content["path"]), end
        assert k.stderr == "", end


@pytest.mark.slow
def test_never_removes_a_session_another_process_has_open(start):
    a, b = start(), start()
    shared = a.create()
    in_b = b.resume(shared["path"])
    assert in_b.get("name") is None
    a.create(name="a moves on")        # A's cleanup: B has it open
    b.create(name="b moves on")        # B's cleanup: A has it open
    assert os.path.exists(shared["path"])
    assert b.request("sessions/close", {"sessionId": in_b["id"]}) == {"closed": True}
    assert os.path.exists(shared["path"])  # B's close leaves it: A has it open
    assert b.close() == 0
    assert os.path.exists(shared["path"])
    # A kept it open and usable; now alone, A removes it when it moves on
    assert a.transcript(shared["id"])["messages"] == []
    a.create(name="a moves on again")
    assert gone(shared)


@pytest.mark.slow
def test_another_process_closing_it_keeps_our_session_usable(start):
    a, b = start(), start()
    shared = a.create()
    in_b = b.resume(shared["path"])
    b.request("sessions/close", {"sessionId": in_b["id"]})
    assert b.close() == 0
    a.run_turn(shared["id"], "still here")
    assert [m["role"] for m in a.transcript(shared["id"])["messages"]] == ["user", "assistant", "toolResult", "assistant"]
    assert a.close() == 0
    assert os.path.exists(shared["path"])


@pytest.mark.slow
def test_listing_never_deletes(start, isolated_home, workspace):
    a, b = start(), start()
    mine, theirs = a.create(), b.create()
    session_dir = Path(mine["path"]).parent
    foreign = session_dir / "2020-01-01T00-00-00.000Z_00000000-0000-4000-8000-000000000000.jsonl"
    foreign.write_text(json.dumps({"type": "session", "version": 1, "id": "00000000-0000-4000-8000-000000000000",
                                   "timestamp": "2020-01-01T00:00:00.000Z", "cwd": str(workspace)}) + "\n")
    listed = [i["path"] for i in a.listing()]
    # A leaves its own unused session out of the list, but shows B's and the foreign one
    assert mine["path"] not in listed and theirs["path"] in listed and str(foreign) in listed
    for _ in range(2):
        a.listing()
        b.listing(limit=1)
    assert all(os.path.exists(p) for p in (mine["path"], theirs["path"], foreign))
    # a file nobody opened is never cleaned up by anyone
    a.create(name="a moves on")
    assert b.close() == 0 and a.close() == 0
    assert gone(mine) and gone(theirs) and foreign.exists()


def test_a_resumed_unused_session_is_removed_when_the_client_moves_on(start, workspace):
    k = start()
    e = k.create()
    k.request("sessions/close", {"sessionId": e["id"]})  # removed already: it was unused
    assert gone(e)
    header = {"type": "session", "version": 1, "id": "11111111-2222-4333-8444-555555555555",
              "timestamp": "2021-01-01T00:00:00.000Z", "cwd": str(workspace)}
    path = workspace / "old-empty.jsonl"
    path.write_text(json.dumps(header) + "\n")
    r = k.resume(str(path))
    assert r["persistentId"] == header["id"] and r["createdAt"] == header["timestamp"]
    k.create(name="next")
    assert not path.exists() and unknown(k, r)
