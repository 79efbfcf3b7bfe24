"""Open sessions cannot exhaust file descriptors.

Every `kward rpc` here runs under ``ulimit -n 64``. Idle sessions give their descriptor
back (an LRU bounded by a quarter of the limit: 16 here) and reopen it on use; the presence
lock that tells other processes a session is open stays, on one descriptor per directory.
When the process runs out anyway, the request answers ``too_many_open_files`` and the next
ones work as soon as descriptors are free again. The descriptors are read from
``/proc/<pid>/fd`` (Linux).
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from lib.rpc_sessions import TEXT_ONLY, start, workspace  # noqa: F401  (fixtures)
from lib.session_records import messages_of, strict_records

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/fd")

LIMIT = 64
POOL = 16  # max(16, LIMIT // 4): session files that may hold a descriptor at once


def descriptors(k) -> list[str]:
    """What the child's open descriptors point at."""
    out = []
    for fd in os.listdir(f"/proc/{k.proc.pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{k.proc.pid}/fd/{fd}"))
        except FileNotFoundError:  # closed while we looked
            continue
    return out


def session_descriptors(k) -> list[str]:
    return [target for target in descriptors(k) if target.endswith(".jsonl")]


def texts(transcript: dict) -> list[str]:
    return [part["text"] for m in transcript["messages"] for part in m["content"] if part.get("type") == "text"]


@pytest.mark.slow
def test_200_open_sessions_under_a_64_descriptor_limit(start, workspace):
    a = start(TEXT_ONLY, nofile=LIMIT)
    created = [a.create(name=f"s{i}") for i in range(200)]
    assert len({s["id"] for s in created}) == 200
    held = session_descriptors(a)
    assert len(held) <= POOL and len(descriptors(a)) < LIMIT - 8, held
    first, last = created[0], created[-1]
    for s in (first, last):  # the first one's descriptor was given back long ago: it reopens
        a.run_turn(s["id"], f"hello {s['id']}")
        assert [m["content"] for m in messages_of(strict_records(s["path"]))] == [f"hello {s['id']}", "Done."]
    listed = a.listing(limit=500)
    assert len(listed) == 200 and {item["path"] for item in listed} == {s["path"] for s in created}
    again = a.resume(first["path"])  # another id on the same open session
    assert again["persistentId"] == first["persistentId"] and again["id"] != first["id"]
    assert [m["role"] for m in a.transcript(again["id"])["messages"]] == ["user", "assistant"]
    assert a.request("initialize")["serverName"] == "kward"

    idle = created[100]  # open in A, idle, its descriptor given back
    assert idle["path"] not in session_descriptors(a)
    b = start(TEXT_ONLY)  # Tauren's short-lived process
    rb = b.resume(idle["path"])
    err = b.error("sessions/delete", {"sessionId": rb["id"]})
    assert err.reason == "session_in_use" and err.error["data"]["path"] == idle["path"], err.error
    assert os.path.exists(idle["path"])
    b.run_turn(rb["id"], "from B")  # B may use it meanwhile; A folds that in on its next look
    assert texts(a.transcript(idle["id"])) == ["from B", "Done."]
    assert a.request("sessions/close", {"sessionId": idle["id"]}) == {"closed": True}
    assert b.request("sessions/delete", {"sessionId": rb["id"]})["deleted"] is True  # A closed it: free
    assert not os.path.exists(idle["path"])
    assert len(session_descriptors(a)) <= POOL and len(descriptors(a)) < LIMIT - 8
    assert a.request("initialize")["serverName"] == "kward"


@pytest.mark.slow
def test_running_out_of_descriptors_is_answered_and_recovered(start, workspace, tmp_path):
    """Sessions resumed from many directories each keep that directory's presence
    descriptor: enough of them exhaust 64 descriptors. The resume that finds none free
    answers too_many_open_files and leaves nothing behind; other methods keep working;
    closing sessions makes room again."""
    a = start(TEXT_ONLY, nofile=LIMIT)
    seed = a.create(name="seed")
    opened, refused = [], None
    for i in range(LIMIT):
        directory = tmp_path / f"dir{i}"
        directory.mkdir()
        copy = directory / "s.jsonl"
        shutil.copy(seed["path"], copy)
        reply = a.response(a.send("sessions/resume", {"path": str(copy)}))
        if "error" in reply:
            refused = (reply["error"], directory)
            break
        opened.append(reply["result"])
    assert refused is not None and len(opened) > LIMIT // 2, "the limit was never reached"
    error, directory = refused
    assert error["code"] == -32003 and error["data"]["reason"] == "too_many_open_files", error
    assert error["data"]["errno"] == "EMFILE"
    assert sorted(os.listdir(directory)) == ["s.jsonl"]  # no presence file, no sidecar left behind
    # the process goes on: what needs no new descriptor answers, the rest says why not
    assert a.request("initialize")["serverName"] == "kward"
    assert a.request("workspace/info")["root"] == str(workspace)
    assert a.request("config/read")["config"] == {}
    assert {s["id"] for s in a.listing()} == {seed["persistentId"]}
    for session in opened[:8]:
        assert a.request("sessions/close", {"sessionId": session["id"]}) == {"closed": True}
    retried = a.resume(str(directory / "s.jsonl"))  # room again: the same request now works
    assert retried["path"] == str(directory / "s.jsonl")
    a.run_turn(retried["id"], "works again")
    assert a.request("config/update", {"values": {"model": "m"}})["config"]["model"] == "m"
    assert a.create(name="new")["name"] == "new"
