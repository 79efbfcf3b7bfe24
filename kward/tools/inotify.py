"""A small ctypes binding of Linux inotify, for `kward.tools.fswatch`.

    ino = Inotify()                       # inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    wd = ino.add(b"/some/dir", DIR_EVENTS | IN_ONLYDIR)
    for event in ino.read():              # what is queued so far; [] when nothing is
        ...                               # Event(wd, mask, cookie, name)
    ino.remove(wd)
    ino.close()

`Inotify()` raises `Unavailable` where there is no inotify: not Linux, a libc without it,
a sandbox that forbids it, or the user's limit of instances reached (EMFILE,
``/proc/sys/fs/inotify/max_user_instances``). `add` raises OSError with the kernel's errno:
ENOENT or ENOTDIR (the directory is gone or replaced), EACCES, and ENOSPC when the user's
limit of watches is reached (``max_user_watches``). `read` never blocks. An event with
`IN_Q_OVERFLOW` (wd -1) says the kernel's queue overflowed and events were lost.

`name` is the entry's name inside the watched directory as bytes (empty for an event on
the directory itself). Writes through a shared memory mapping (``mmap``) produce no event,
and an event names the directory through which a file was changed (a hard link elsewhere
is not seen): see `kward.tools.fswatch`.

Threads: an instance belongs to one thread at a time (its owner); nothing is locked.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import Any, NamedTuple

IN_ACCESS = 0x00000001
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

#: What a directory's watch asks for: every change of an entry's content, metadata or name,
#: and the directory itself going away.
DIR_EVENTS = (IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
              | IN_MOVE_SELF)

_IN_NONBLOCK = 0o4000  # O_NONBLOCK on Linux
_IN_CLOEXEC = 0o2000000  # O_CLOEXEC on Linux
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then name[len]
_READ_SIZE = 64 * 1024  # whole events only; one needs at most 16 + NAME_MAX + 1 bytes

_libc: Any = None


class Unavailable(OSError):
    """No inotify here (see the module doc)."""


class Event(NamedTuple):
    wd: int
    mask: int
    cookie: int
    name: bytes


def _load() -> Any:
    """libc's inotify functions, loaded once; Unavailable where there are none."""
    global _libc
    if _libc is None:
        if not sys.platform.startswith("linux"):
            raise Unavailable(0, "inotify is Linux only")
        try:
            import ctypes
        except ImportError as exc:
            raise Unavailable(0, f"no ctypes: {exc}") from None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init, add, rm = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
        except (OSError, AttributeError) as exc:
            raise Unavailable(0, f"no inotify in libc: {exc}") from None
        init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
        add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
        rm.argtypes, rm.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        _libc = (init, add, rm, ctypes.get_errno)
    return _libc


def parse(data: bytes) -> list[Event]:
    """The events in `data`, a buffer `read(2)` returned (whole events, names NUL-padded)."""
    events = []
    pos, end = 0, len(data)
    while pos + _HEADER.size <= end:
        wd, mask, cookie, length = _HEADER.unpack_from(data, pos)
        pos += _HEADER.size
        name = data[pos:pos + length].split(b"\0", 1)[0]
        pos += length
        events.append(Event(wd, mask, cookie, name))
    return events


class Inotify:
    """One inotify instance (see the module doc)."""

    def __init__(self) -> None:
        init, self._add, self._rm, self._errno = _load()
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            err = self._errno()
            raise Unavailable(err, f"inotify_init1: {os.strerror(err)}")
        self.fd: int | None = fd

    def add(self, path: str | bytes, mask: int) -> int:
        """Watch `path` for `mask`; its watch descriptor (the same one again for an inode
        already watched). OSError with the kernel's errno when it cannot."""
        if self.fd is None:
            raise OSError(9, "inotify instance closed")
        wd = self._add(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = self._errno()
            raise OSError(err, os.strerror(err), os.fsdecode(path))
        return int(wd)

    def remove(self, wd: int) -> None:
        """Stop watch `wd` (its IN_IGNORED event follows); nothing when it is gone already."""
        if self.fd is not None:
            self._rm(self.fd, wd)

    def read(self) -> list[Event]:
        """Every event queued so far, in order; never blocks."""
        if self.fd is None:
            return []
        chunks = []
        while True:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                break
            chunks.append(data)
            if len(data) < _READ_SIZE - 300:  # short read: the queue is empty (a next read says so too)
                break
        return [event for chunk in chunks for event in parse(chunk)]

    def close(self) -> None:
        """Close the descriptor (every watch goes with it). Idempotent."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)
