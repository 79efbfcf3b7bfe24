"""The session file: creation, whole-line appends, locks, concurrency and crashes."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import stat
import threading
from pathlib import Path

import pytest
from lib.processes import child
from lib.session_records import recorded, strict_records

from kward.errors import SessionBusy
from kward.sessions import store as store_mod
from kward.sessions.format import SessionHeader
from kward.sessions.opening import load_session, new_session_name
from kward.sessions.paths import safe_cwd
from kward.sessions.presence import PRESENCE_NAME
from kward.sessions.store import SessionFile

NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z_[0-9a-f-]{36}\.jsonl$")


def new_file(tmp_path: Path) -> SessionFile:
    name, sid, stamp = new_session_name()
    return SessionFile.create(tmp_path / "sessions" / "--w--", name, SessionHeader(id=sid, timestamp=stamp, cwd="/w"))


def test_safe_cwd():
    assert safe_cwd("/home/u/proj") == "--home-u-proj--"
    assert safe_cwd("/a:b\\c/d") == "--a-b-c-d--"


def test_create_modes_name_and_header(tmp_path):
    f = new_file(tmp_path)
    assert NAME.match(f.path.name)
    assert stat.S_IMODE(os.stat(f.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(f.path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(f.path.with_name(PRESENCE_NAME)).st_mode) == 0o600
    assert sorted(os.listdir(f.path.parent)) == sorted([f.path.name, PRESENCE_NAME])  # no per-session sidecar
    [rec] = strict_records(f.path)
    assert rec["type"] == "session" and rec["version"] == 1 and rec["cwd"] == "/w"
    assert set(rec) == {"type", "version", "id", "timestamp", "cwd"}  # empty fields omitted
    with pytest.raises(FileExistsError):  # O_EXCL
        SessionFile.create(f.path.parent, f.path.name, SessionHeader(id="x", timestamp="t", cwd="/w"))
    f.close()


def test_append_is_written_before_return_and_reports_offsets(tmp_path):
    f = new_file(tmp_path)
    size = os.path.getsize(f.path)
    start, end = f.append({"type": "message", "message": {"role": "user", "content": "é"}})
    assert start == size and end == os.path.getsize(f.path)  # in the file, not in a buffer
    assert strict_records(f.path)[-1]["message"]["content"] == "é"
    f.close()
    with pytest.raises(ValueError):
        f.append({"type": "message", "message": {}})


def test_lone_surrogate_is_escaped_not_lost(tmp_path):
    f = new_file(tmp_path)
    f.append({"type": "message", "message": {"role": "user", "content": "a\ud800b"}})
    assert strict_records(f.path)[-1]["message"]["content"] == "a\ud800b"
    f.close()


def test_torn_line_is_terminated_before_the_next_append(tmp_path):
    f = new_file(tmp_path)
    with open(f.path, "ab") as raw:
        raw.write(b'{"type":"message","mess')  # a crashed writer's fragment
    f.append({"type": "message", "message": {"role": "user", "content": "after"}})
    lines = f.path.read_bytes().splitlines()
    assert lines[1] == b'{"type":"message","mess'
    assert json.loads(lines[2])["message"]["content"] == "after"
    f.close()


def test_sync_fsyncs_only_after_appends(tmp_path, monkeypatch):
    f = new_file(tmp_path)
    calls = []
    real = os.fsync
    monkeypatch.setattr(store_mod.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    f.descriptor.sync()
    assert calls == []
    f.append({"type": "memory_state", "sessionMemories": []})
    f.descriptor.sync()
    f.descriptor.sync()
    assert len(calls) == 1
    f.close()


def test_turn_lock_is_exclusive_and_released(tmp_path):
    f = new_file(tmp_path)
    other = SessionFile.open(f.path)
    with f.turn_lock():
        assert stat.S_IMODE(os.stat(f.lock_path).st_mode) == 0o600
        with pytest.raises(SessionBusy) as err:
            with other.turn_lock(label="session abc"):
                pass
        assert "session abc" in err.value.message and err.value.reason == "session_busy"
    with other.turn_lock():
        pass
    f.delete()
    assert not f.path.exists() and not f.lock_path.exists()
    other.close()


def test_turn_lock_held_by_another_process_fails_at_once(tmp_path):
    f = new_file(tmp_path)
    proc = child("""
        import sys
        from pathlib import Path
        from kward.sessions.store import SessionFile
        f = SessionFile.open(Path(sys.argv[1]))
        with f.turn_lock():
            print("locked", flush=True)
            sys.stdin.readline()
        print("released", flush=True)
    """, str(f.path), stdin=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(SessionBusy):
            with f.turn_lock():
                pass
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        with f.turn_lock():
            pass
    finally:
        proc.kill()
        proc.communicate()
    f.close()


APPENDER = """
    import json, sys
    from pathlib import Path
    from kward.sessions.store import SessionFile
    path, writer, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    f = SessionFile.open(path)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        f.append({"type": "message", "message": {"role": "user", "writer": writer, "seq": i,
                  "content": writer * ((i * 7919) % 70000)}})
    f.close()
"""


@pytest.mark.slow
def test_16_threads_and_4_processes_append_without_interleaving(tmp_path):
    f = new_file(tmp_path)
    per_thread, per_proc = 150, 150
    procs = [child(APPENDER, str(f.path), f"p{n}", str(per_proc), stdin=True) for n in range(4)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        go = threading.Event()
        errors = []

        def run(n: int) -> None:
            target = f if n % 2 else SessionFile.open(f.path)  # shared object and own descriptors
            go.wait(10)
            try:
                for i in range(per_thread):
                    target.append({"type": "message", "message": {"role": "user", "writer": f"t{n}", "seq": i,
                                                                  "content": "x" * ((i * 104729) % 66000)}})
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)
            if target is not f:
                target.close()

        threads = [threading.Thread(target=run, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        go.set()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for t in threads:
            t.join(60)
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
        assert not errors
    finally:
        for p in procs:
            p.kill()
    records = strict_records(f.path)[1:]  # every line valid JSON, none interleaved
    seen: dict[str, list[int]] = {}
    for rec in records:
        seen.setdefault(rec["message"]["writer"], []).append(rec["message"]["seq"])
    assert len(records) == 16 * per_thread + 4 * per_proc
    for writer, seqs in seen.items():  # none lost, each writer's order kept
        expected = per_proc if writer.startswith("p") else per_thread
        assert seqs == list(range(expected)), writer
    f.close()


CRASHER = """
    import sys
    from kward.sessions.codec import decode as typed
    from kward.sessions.opening import load_session
    session = load_session(sys.argv[1], sys.argv[3])
    i = int(sys.argv[2])
    while True:
        session.append_message(typed({"role": "user", "content": "y" * (i % 5000), "id": "r%d" % i}))
        sys.stdout.write("%d\\n" % i)
        sys.stdout.flush()
        i += 1
"""


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing_acknowledged(tmp_path):
    rng = random.Random(1234)
    f = new_file(tmp_path)
    f.close()
    acknowledged: list[int] = []
    next_id = 0
    for _ in range(25):
        proc = child(CRASHER, str(f.path), str(next_id), str(tmp_path))
        try:
            for _ in range(rng.randint(1, 250)):
                line = proc.stdout.readline()
                assert line.endswith("\n"), proc.stderr.read()
                acknowledged.append(int(line))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        session = load_session(str(f.path), str(tmp_path))  # always reloads
        ids = {m.get("id") for m in recorded(session.conversation)}
        missing = [i for i in acknowledged if f"r{i}" not in ids]
        assert not missing
        next_id = max(int(m["id"][1:]) for m in recorded(session.conversation)) + 1
        session.close(delete_if_unused=False)
    # A SIGKILL can cut a big write() short (the kernel checks for fatal signals between
    # pages): such a fragment was never acknowledged, sits on its own line (the next append
    # terminated it) and is skipped by the reader; every other line is a whole record.
    for line in f.path.read_bytes().splitlines():
        try:
            json.loads(line)
        except ValueError:
            assert line.startswith(b'{"type":"message"')


def test_opening_a_session_deleted_meanwhile_leaves_no_sidecar(tmp_path, monkeypatch):
    from kward.errors import InvalidParams
    from kward.sessions.presence import PresenceTable

    f = new_file(tmp_path)
    path = f.path
    f.close()
    table = PresenceTable()
    real_take = table.take

    def delete_then_take(p):
        store_mod.remove_session_files(p)  # removed as unused by another process right now
        return real_take(p)

    monkeypatch.setattr(table, "take", delete_then_take)
    with pytest.raises(InvalidParams):
        SessionFile.open(path, presence=table)
    assert os.listdir(path.parent) == [PRESENCE_NAME] and len(table) == 0  # nothing held any more
