"""Bounded descriptors (`kward.sessions.descriptors`) and presence locks that outlive them
(`kward.sessions.presence`). Two SessionManagers in one process have separate presence
tables: on Linux their locks conflict exactly as two processes' would."""

from __future__ import annotations

import errno
import os
import sys

import pytest
from lib.session_manager import new_manager
from lib.session_records import strict_records, user

from kward.errors import SessionFileGone, SessionInUse
from kward.sessions import store
from kward.sessions.descriptors import DescriptorPool, default_limit
from kward.sessions.fdretry import retrying
from kward.sessions.format import SessionHeader
from kward.sessions.opening import new_session_name
from kward.sessions.presence import PRESENCE_NAME, PresenceTable
from kward.sessions.store import SessionFile

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="two tables in one process act as two processes only with OFD locks")


@pytest.fixture
def pool(monkeypatch):
    small = DescriptorPool(limit=4)
    monkeypatch.setattr(store, "DEFAULT_POOL", small)
    return small


def new_file(directory, table=None) -> SessionFile:
    name, sid, stamp = new_session_name()
    return SessionFile.create(directory, name, SessionHeader(id=sid, timestamp=stamp, cwd="/w"),
                              *([table] if table else []))


def test_the_limit_is_a_quarter_of_the_soft_descriptor_limit():
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    expected = 1024 if soft == resource.RLIM_INFINITY else max(16, min(1024, soft // 4))
    assert default_limit() == expected


def test_idle_files_give_their_descriptors_back_and_reopen_on_use(tmp_path, pool):
    files = [new_file(tmp_path / "s") for _ in range(10)]
    assert len(pool) == 4 and sum(f.descriptor.holds_fd for f in files) == 4
    assert not files[0].descriptor.holds_fd and files[-1].descriptor.holds_fd
    files[0].append({"type": "message", "message": user("back")})  # reopens, another one gives way
    assert files[0].descriptor.holds_fd and len(pool) == 4
    assert [r["type"] for r in strict_records(files[0].path)] == ["session", "message"]
    assert files[1].descriptor.size() == files[1].path.stat().st_size  # a stat, no open
    assert not files[1].descriptor.holds_fd
    assert files[1].descriptor.state() == "present" and not files[1].descriptor.holds_fd
    for f in files[:6]:
        f.descriptor.pin()
    for f in files[:6]:
        f.append({"type": "message", "message": user("pinned")})
    assert all(f.descriptor.holds_fd for f in files[:6]) and len(pool) == 6  # pinned: kept over the limit
    for f in files[:6]:
        f.descriptor.unpin()
    files[9].append({"type": "message", "message": user("x")})
    assert len(pool) == 4
    for f in files:
        f.close()
    assert len(pool) == 0


@pytest.mark.parametrize("how", ["replace", "delete", "fifo"])
def test_a_released_file_reopens_only_if_it_is_still_the_same_file(tmp_path, pool, how):
    f = new_file(tmp_path / "s")
    assert f.descriptor.release() and not f.descriptor.holds_fd
    before = f.path.read_bytes()
    if how == "replace":
        other = tmp_path / "other.jsonl"
        other.write_bytes(before)
        os.replace(other, f.path)
    elif how == "delete":
        os.unlink(f.path)
    else:
        os.unlink(f.path)
        os.mkfifo(f.path)  # opening it for writing would block: it must never be opened
    state = "missing" if how == "delete" else "replaced"
    assert f.descriptor.state() == state
    with pytest.raises(SessionFileGone) as err:
        f.append({"type": "message", "message": user("lost")})
    assert err.value.data == {"path": str(f.path), "state": state}
    if how == "replace":
        assert f.path.read_bytes() == before  # nothing written to the file now at the path
    f.close()


def test_out_of_descriptors_gives_idle_ones_back_and_retries(tmp_path, pool):
    files = [new_file(tmp_path / "s") for _ in range(3)]
    files[0].descriptor.pin()
    calls = []

    def opener():
        calls.append(len(pool))
        if len(calls) == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        return "opened"

    assert retrying(opener, pool=pool) == "opened"
    assert calls == [3, 1]  # the two idle files gave theirs back; the pinned one kept it
    with pytest.raises(OSError) as err:  # nothing idle is left to give back: the error goes up
        retrying(lambda: (_ for _ in ()).throw(OSError(errno.EMFILE, "Too many open files")), pool=pool)
    assert err.value.errno == errno.EMFILE
    with pytest.raises(FileNotFoundError):  # other errors are not retried
        retrying(lambda: os.open(str(tmp_path / "missing"), os.O_RDONLY), pool=pool)
    for f in files:
        f.close()


@linux_only
def test_an_idle_session_without_a_descriptor_is_still_open_to_other_processes(tmp_path, pool):
    mine, _ = new_manager(tmp_path)
    other, _ = new_manager(tmp_path)
    sessions = [mine.create(name=f"s{i}") for i in range(8)]
    idle = sessions[0]
    assert not idle.shared._file.descriptor.holds_fd
    theirs = other.resume(idle.path)
    with pytest.raises(SessionInUse):
        other.delete(theirs.id)
    assert os.path.exists(idle.path)
    mine.close(idle.id)
    assert other.delete(theirs.id) == idle.path
    assert len(mine.presence) == 1  # one presence descriptor for the whole directory
    for s in sessions[1:]:
        mine.close(s.id)
    assert len(mine.presence) == 0


@linux_only
def test_a_removed_presence_file_is_replaced_and_the_locks_taken_again(tmp_path):
    mine, _ = new_manager(tmp_path)
    other, _ = new_manager(tmp_path)
    s = mine.create(name="kept")
    presence = os.path.join(os.path.dirname(s.path), PRESENCE_NAME)
    os.unlink(presence)  # someone tidied the directory
    mine.create(name="next")  # this process's next use of the directory moves its locks over
    assert os.path.exists(presence)
    theirs = other.resume(s.path)
    with pytest.raises(SessionInUse):
        other.delete(theirs.id)


def test_one_table_counts_holders_per_session(tmp_path):
    table = PresenceTable()
    f = new_file(tmp_path / "s", table)
    again = table.take(f.path)  # e.g. a replaced file reopened under the same name
    f.close()
    assert len(table) == 1  # still held by `again`
    again.release()
    again.release()  # idempotent
    assert len(table) == 0
