"""The ctypes binding of Linux inotify (`kward.tools.inotify`) on real directories: the events
of creating, writing, renaming and deleting; a read with nothing queued returns at once;
watching through /proc/self/fd; errors carry the kernel's errno; a queue that overflows
says so; the parser on hand-made buffers; elsewhere than Linux it is unavailable."""

import errno
import os
import struct
import sys
from pathlib import Path

import pytest

from kward.tools import inotify
from kward.tools.inotify import (
    DIR_EVENTS,
    IN_CREATE,
    IN_DELETE,
    IN_ISDIR,
    IN_MODIFY,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
    IN_Q_OVERFLOW,
    Event,
    Inotify,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


@pytest.fixture
def ino():
    instance = Inotify()
    yield instance
    instance.close()


def kinds(events, wd):
    return [(e.name, e.mask & ~IN_ISDIR, bool(e.mask & IN_ISDIR)) for e in events if e.wd == wd]


def test_events_of_each_change_in_order(ino, tmp_path):
    wd = ino.add(str(tmp_path), DIR_EVENTS | IN_ONLYDIR)
    assert ino.read() == []  # nothing yet, and no blocking
    (tmp_path / "a.txt").write_bytes(b"x")
    os.mkdir(tmp_path / "sub")
    os.rename(tmp_path / "a.txt", tmp_path / "b.txt")
    (tmp_path / "b.txt").unlink()
    got = kinds(ino.read(), wd)
    assert got == [(b"a.txt", IN_CREATE, False), (b"a.txt", IN_MODIFY, False), (b"sub", IN_CREATE, True),
                   (b"a.txt", IN_MOVED_FROM, False), (b"b.txt", IN_MOVED_TO, False), (b"b.txt", IN_DELETE, False)]
    assert ino.read() == []


def test_a_rename_pairs_by_cookie_and_a_name_round_trips(ino, tmp_path):
    wd = ino.add(os.fsencode(tmp_path), DIR_EVENTS)
    name = b"caf\xe9 \n.txt"
    (tmp_path / os.fsdecode(name)).write_bytes(b"")
    os.rename(tmp_path / os.fsdecode(name), tmp_path / "plain")
    events = [e for e in ino.read() if e.wd == wd]
    assert events[0].name == name
    moved = [e for e in events if e.mask & (IN_MOVED_FROM | IN_MOVED_TO)]
    assert len(moved) == 2 and moved[0].cookie == moved[1].cookie != 0


def test_watching_through_proc_self_fd_is_the_same_watch(ino, tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert ino.add(f"/proc/self/fd/{fd}", DIR_EVENTS | IN_ONLYDIR) == ino.add(str(tmp_path), DIR_EVENTS)
    finally:
        os.close(fd)


def test_errors_carry_the_kernels_errno(ino, tmp_path):
    (tmp_path / "file").write_text("")
    for path, code in ((tmp_path / "missing", errno.ENOENT), (tmp_path / "file", errno.ENOTDIR)):
        with pytest.raises(OSError) as caught:
            ino.add(str(path), DIR_EVENTS | IN_ONLYDIR)
        assert caught.value.errno == code and str(path) in str(caught.value)


def test_remove_then_close(ino, tmp_path):
    wd = ino.add(str(tmp_path), DIR_EVENTS)
    ino.remove(wd)
    (tmp_path / "after").write_text("x")
    events = ino.read()
    assert all(e.mask & inotify.IN_IGNORED for e in events if e.wd == wd)  # only the removal's own event
    ino.close()
    ino.close()  # idempotent
    assert ino.read() == []
    with pytest.raises(OSError):
        ino.add(str(tmp_path), DIR_EVENTS)


def test_an_overflowing_queue_says_so(ino, tmp_path):
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip(f"max_queued_events is {limit}")
    ino.add(str(tmp_path), DIR_EVENTS)
    for name in ("a", "b"):
        (tmp_path / name).write_text("")
    for i in range(limit // 2 + 10):  # alternating names: the kernel merges no two in a row
        os.utime(tmp_path / "a")
        os.utime(tmp_path / "b")
    events = ino.read()
    assert events[-1].wd == -1 and events[-1].mask & IN_Q_OVERFLOW
    assert len(events) == limit + 1


def test_parse_hand_made_events():
    def raw(wd, mask, cookie, name=b"", pad=0):
        body = name + b"\0" * pad
        return struct.pack("iIII", wd, mask, cookie, len(body)) + body

    data = raw(1, IN_CREATE, 0, b"abc", 13) + raw(-1, IN_Q_OVERFLOW, 0) + raw(2, IN_MOVED_TO, 7, b"x" * 16)
    assert inotify.parse(data) == [Event(1, IN_CREATE, 0, b"abc"), Event(-1, IN_Q_OVERFLOW, 0, b""),
                                   Event(2, IN_MOVED_TO, 7, b"x" * 16)]
    assert inotify.parse(data[:19]) == [Event(1, IN_CREATE, 0, b"abc")]  # a buffer cut short: what it holds
    assert inotify.parse(b"") == [] and inotify.parse(b"\0" * 10) == []


def test_unavailable_elsewhere(monkeypatch):
    monkeypatch.setattr(inotify, "_libc", None)
    monkeypatch.setattr(inotify.sys, "platform", "darwin")
    with pytest.raises(inotify.Unavailable):
        Inotify()
