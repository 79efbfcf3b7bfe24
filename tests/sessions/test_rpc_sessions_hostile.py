"""Hostile session input (huge and odd values, paths, exports), over real `kward rpc` processes.

- Bounded work on hostile files: a file without newlines is refused after reading at most
  64 KiB; a huge line after a valid header is skipped in bounded memory; runs of blank
  lines cost C-speed scans, not a Python step per line; records nested too deeply are
  skipped. Memory is the child's peak RSS (``VmHWM``) before and after the request; the
  big files are sparse, so they cost no disk.
- Crashes leave no litter: ``.*.jsonl.<pid>.<hex>.creating`` files of dead processes are
  removed when the directory is listed or first written, and never listed as sessions.
- ``sessions/resume`` takes its workspace root from the client (or from a file kward filed
  for that root), never from a crafted header alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from lib.processes import dead_pid
from lib.rpc_sessions import TEXT_ONLY, start, workspace  # noqa: F401  (fixtures)
from lib.scripts import text, tool
from lib.session_records import header, message_record, user

MB = 1 << 20


def peak_rss(k) -> int:
    """The child's peak resident set size in bytes (Linux)."""
    for line in Path(f"/proc/{k.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/status")


def sparse(path: Path, head: bytes, size: int, tail: bytes = b"") -> Path:
    """`head`, then `size` NUL bytes (a hole: no disk used, no newline), then `tail`."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + size)
        f.seek(0, os.SEEK_END)
        f.write(tail)
    return path


def line(record: dict) -> bytes:
    return json.dumps(record).encode() + b"\n"


def texts(transcript: dict) -> list[str]:
    return [part["text"] for m in transcript["messages"] for part in m["content"] if part.get("type") == "text"]


# --- point 6: bounded work -----------------------------------------------------------------


@linux_only
def test_a_file_without_newlines_is_refused_after_a_bounded_read(start, tmp_path):
    k = start(TEXT_ONLY, KWARD_NO_WARMUP="1")  # no background import may be charged to the reads measured
    k.request("initialize")
    (tmp_path / "warm").mkdir()
    warm = sparse(tmp_path / "warm" / "warm.jsonl", line(header(cwd=str(tmp_path))), 0)
    k.resume(str(warm))  # the session modules are imported now, not charged to the bounded read below
    before = peak_rss(k)
    blob = sparse(tmp_path / "blob.jsonl", b"", 100 * MB)
    err = k.error("sessions/resume", {"path": str(blob)})
    assert peak_rss(k) - before < 8 * MB  # the old reader buffered the whole 100 MB line
    assert err.code == -32602 and "Not a Kward session file" in err.error["message"], err.error
    assert "no line break in its first 64 KiB" in err.error["message"]
    assert blob.stat().st_size == 100 * MB and not (tmp_path / ".kward-sessions.open").exists()  # untouched


@linux_only
@pytest.mark.slow
def test_a_huge_line_after_the_header_is_skipped_in_bounded_memory(start, tmp_path):
    k = start(TEXT_ONLY, KWARD_NO_WARMUP="1")  # no background import may be charged to the reads measured
    k.request("initialize")
    before = peak_rss(k)
    path = sparse(tmp_path / "huge.jsonl", line(header(cwd=str(tmp_path))), 200 * MB,
                  b"\n" + line(message_record(user("after the blob"))))
    s = k.resume(str(path))
    assert texts(k.transcript(s["id"])) == ["after the blob"]
    assert peak_rss(k) - before < 100 * MB  # at most one line cap (64 MiB) held, not 200 MB
    k.run_turn(s["id"], "more")
    assert texts(k.transcript(s["id"])) == ["after the blob", "more", "Done."]


@pytest.mark.slow
def test_a_session_ending_inside_a_huge_line_still_takes_turns(start, tmp_path):
    """The over-long line is still unterminated at the end: it is skipped, our first append
    terminates it, and a reload (here: another process) reads our records after it."""
    path = sparse(tmp_path / "torn.jsonl", line(header(cwd=str(tmp_path))) + line(message_record(user("before"))),
                  80 * MB)
    a = start(TEXT_ONLY)
    s = a.resume(str(path))
    assert texts(a.transcript(s["id"])) == ["before"]
    a.run_turn(s["id"], "after")
    b = start(TEXT_ONLY)
    assert texts(b.transcript(b.resume(str(path))["id"])) == ["before", "after", "Done."]
    assert texts(a.transcript(s["id"])) == ["before", "after", "Done."]


@pytest.mark.slow
def test_runs_of_blank_lines_are_scanned_at_c_speed(start, tmp_path):
    """50 MB of newlines: a reader that takes a Python step per line needs ~36 s for this
    file; the response must come within the 20 s wait."""
    blanks = b"\n" * (50 * MB)
    path = tmp_path / "blank.jsonl"
    path.write_bytes(line(header(cwd=str(tmp_path))) + blanks + line(message_record(user("found"))) + blanks)
    k = start(TEXT_ONLY)
    s = k.request("sessions/resume", {"path": str(path)}, timeout=20)
    assert texts(k.request("sessions/transcript", {"sessionId": s["id"]}, timeout=20)) == ["found"]
    listed = k.request("sessions/list", {}, timeout=20)  # (another workspace: just must not hang)
    assert listed == {"sessions": []}
    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(blanks)
    err = k.error("sessions/resume", {"path": str(headless)})
    assert err.code == -32602 and "Not a Kward session file" in err.error["message"]


def test_records_nested_too_deeply_are_skipped(start, tmp_path):
    deep = "[" * 900 + "]" * 900  # decodes, but recursive code further up would overflow
    path = tmp_path / "deep.jsonl"
    path.write_bytes(line(header(cwd=str(tmp_path)))
                     + f'{{"type":"message","timestamp":"t","message":{{"role":"user","content":{deep}}}}}\n'.encode()
                     + line(message_record(user("kept"))))
    k = start(TEXT_ONLY)
    s = k.resume(str(path))
    assert texts(k.transcript(s["id"])) == ["kept"]
    assert k.request("sessions/export", {"sessionId": s["id"]})["format"] == "markdown"
    k.run_turn(s["id"], "still fine")


# --- point 8: no litter ----------------------------------------------------------------------


def plant(directory: Path, name: str, pid: int, age: float) -> Path:
    """A temp file as `SessionFile.create` names it, holding a whole header, `age` seconds old."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f".{name}.jsonl.{pid}.{os.urandom(4).hex()}.creating"
    path.write_bytes(line(header(cwd="/x")))
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.mark.slow
def test_stale_creating_files_are_removed_and_never_listed(start, workspace, isolated_home, tmp_path):
    from kward.sessions.paths import workspace_session_dir

    sessions = isolated_home / ".kward" / "sessions"
    here = workspace_session_dir(sessions, str(workspace))
    stale = plant(here, "a", dead_pid(), 120)
    young = plant(here, "b", dead_pid(), 0)  # could still be another machine's write in progress
    live = plant(here, "c", os.getpid(), 120)  # its writer is alive
    k = start(TEXT_ONLY)
    s = k.create(name="real")
    assert [item["path"] for item in k.listing()] == [s["path"]]
    assert not stale.exists() and young.exists() and live.exists()

    elsewhere = (tmp_path / "other-ws").resolve()
    elsewhere.mkdir()
    there = workspace_session_dir(sessions, str(elsewhere))
    listed_only = plant(there, "d", dead_pid(), 120)
    assert k.listing(workspaceRoot=str(elsewhere)) == []  # listing it removes the dead one...
    assert not listed_only.exists()
    written = plant(there, "e", dead_pid(), 120)
    fresh_ws = (tmp_path / "fresh-ws").resolve()
    fresh_ws.mkdir()
    first_write = plant(workspace_session_dir(sessions, str(fresh_ws)), "f", dead_pid(), 120)
    created = k.create(workspaceRoot=str(fresh_ws), name="first here")  # ...and so does the first write
    assert not first_write.exists() and written.exists()  # (nothing listed or written there since)
    assert [item["path"] for item in k.listing(workspaceRoot=str(fresh_ws))] == [created["path"]]


# --- point 9: whose workspace ------------------------------------------------------------------

PLANT = [
    [tool("write_file", path="planted.txt", content="x")],
    [text("written")],
]


@pytest.mark.slow
def test_a_crafted_header_never_decides_where_tools_write(start, workspace, tmp_path):
    victim = (tmp_path / "victim").resolve()
    victim.mkdir()
    crafted = tmp_path / "downloads" / "crafted.jsonl"
    crafted.parent.mkdir()
    crafted.write_bytes(line(header(cwd=str(victim))) + line(message_record(user("hi"))))
    k = start(PLANT)
    s = k.resume(str(crafted))  # no workspaceRoot: the launch directory
    assert s["workspaceRoot"] == str(workspace) and s["cwd"] == str(victim)
    k.run_turn(s["id"], "write it")
    assert (workspace / "planted.txt").exists() and not (victim / "planted.txt").exists()
    assert k.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    chosen = k.resume(str(crafted), workspaceRoot=str(victim))  # the client may choose it
    assert chosen["workspaceRoot"] == str(victim)
    k.run_turn(chosen["id"], "write it there")
    assert (victim / "planted.txt").exists()


@pytest.mark.slow
def test_tauren_resumes_its_sessions_in_their_workspace(start, workspace, tmp_path):
    """Tauren's short-lived processes start anywhere and resume files from kward's session
    directory, passing workspaceRoot; a resume without it uses the header's cwd, since
    kward filed the file for that cwd."""
    a = start(PLANT)
    s = a.create(name="chat")
    a.run_turn(s["id"], "first")
    (workspace / "planted.txt").unlink()
    launched_elsewhere = tmp_path / "elsewhere"
    launched_elsewhere.mkdir()
    b = start(PLANT, cwd=launched_elsewhere)
    rb = b.resume(s["path"], workspaceRoot=str(workspace))
    assert rb["workspaceRoot"] == str(workspace)
    assert b.request("sessions/close", {"sessionId": rb["id"]}) == {"closed": True}
    rb = b.resume(s["path"])
    assert rb["workspaceRoot"] == str(workspace)
    a.request("sessions/close", {"sessionId": s["id"]})
    b.run_turn(rb["id"], "again")
    assert (workspace / "planted.txt").exists() and not (launched_elsewhere / "planted.txt").exists()


def test_a_turn_lock_that_is_a_link_or_a_fifo_is_refused_and_nothing_is_written_through_it(start, tmp_path):
    k = start(TEXT_ONLY)
    s = k.create(name="locked")
    lock = Path(s["path"] + ".lock")
    target = tmp_path / "victim"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)  # O_CREAT through the link would create the victim
    err = k.error("turns/start", {"sessionId": s["id"], "input": "hi"})
    assert (err.code, err.reason, err.data["path"]) == (-32003, "unusable_file", str(lock))
    assert "symbolic link" in err.message and not os.path.lexists(target)
    lock.unlink()
    os.mkfifo(lock)
    err = k.error("turns/start", {"sessionId": s["id"], "input": "hi"})  # the open never waits on the FIFO
    assert err.reason == "unusable_file" and "not a regular file" in err.message
    lock.unlink()
    k.run_turn(s["id"], "hi")


def test_usage_numbers_out_of_range_count_as_zero(start, tmp_path):
    """Numbers JSON allows but no count can be (1e999 decodes as infinity, 10**400 is no
    float): a usage holding them is read with those fields at zero (a cost: none)."""
    huge = "1" + "0" * 400
    usage = '{"input_tokens":1e999,"output_tokens":%s,"total_tokens":-1e999,"cost":%s}' % (huge, huge)
    path = tmp_path / "huge-usage.jsonl"
    path.write_bytes(
        line(header(cwd=str(tmp_path))) + line(message_record(user("before")))
        + ('{"type":"message","timestamp":"t","message":{"role":"assistant","content":"reply",'
           '"usage":%s}}\n' % usage).encode()
        + line(message_record(user("again")))
        + ('{"type":"compaction","timestamp":"t","message":{"role":"compactionSummary","summary":"s",'
           '"summarizer_usage":{"input_tokens":%s,"output_tokens":7,"cost":1e999}}}\n' % huge).encode())
    k = start(TEXT_ONLY)
    s = k.resume(str(path))
    tokens = k.request("runtime/stats", {"sessionId": s["id"]})["tokens"]
    assert (tokens["input"], tokens["output"], tokens["total"]) == (0, 7, 0), tokens


def test_a_presence_file_that_is_a_link_is_refused_and_nothing_is_written_through_it(start, workspace, isolated_home,
                                                                                      tmp_path):
    from kward.sessions.paths import workspace_session_dir
    from kward.sessions.presence import PRESENCE_NAME

    here = Path(workspace_session_dir(isolated_home / ".kward" / "sessions", str(workspace)))
    here.mkdir(parents=True)
    victim = tmp_path / "victim"
    (here / PRESENCE_NAME).symlink_to(victim)
    k = start(TEXT_ONLY)
    err = k.error("sessions/create", {"name": "x"})
    assert (err.code, err.reason) == (-32003, "unusable_file") and "symbolic link" in err.message
    assert not os.path.lexists(victim)
    (here / PRESENCE_NAME).unlink()
    assert k.create(name="then")["name"] == "then"
