"""Presence locks: which processes have a session file open, on one descriptor per directory.

A process that has a session open says so with a shared lock that other processes can
test before they delete the session (``sessions/delete`` without force refuses with
`session_in_use`; cleanup of unused sessions skips it). The lock outlives the session's
own descriptor, which an idle session gives back (`kward.sessions.descriptors`): an idle
session is still open to its user, so it must still be seen as open by others.

Layout: every directory holding session files that this process has open gets ONE
descriptor on the hidden file ``<dir>/.kward-sessions.open`` (created 0600, never written,
never removed by kward). Having a session open is a read lock on one byte of that file, at
an offset derived from the session file's name (62 bits of a BLAKE2 hash; a collision can
only make a session look in use, never unused). Whether anybody else has it open is a
non-blocking attempt to turn that read lock into a write lock; while the write lock is
held, nobody can take the read lock: a process opening the session meanwhile waits for
it, then finds the file unlinked and gives up (`kward.sessions.store`).

The locks are byte-range locks: open file description locks (``F_OFD_SETLK``) on Linux,
classic POSIX ``fcntl`` locks elsewhere. The latter belong to the process, not to the
descriptor, so closing *any* descriptor of the file in this process drops them all:
nothing in kward opens this file but this module (exports refuse its name). A crash
releases every lock with the process.

Thread contract: a `PresenceTable`'s lock guards its directory map; each `_PresenceFile`
has a re-entrant lock guarding its descriptor and the count of holders per byte. Lock
order: a file's lock -> the table's lock (`Presence.release` inside `exclusive`); the
table's lock is never held while taking a file's lock. Any thread may call anything
here; no call blocks for long (a wait for another process's write lock polls: it lasts as
long as an unlink).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from kward.errors import SessionBusy
from kward.fsutil import FILE_MODE, OWN_FLAGS, open_own

log = logging.getLogger(__name__)

PRESENCE_NAME = ".kward-sessions.open"
WAIT_LIMIT = 10.0  # seconds `PresenceTable.take` waits for another process's exclusive lock

_OFD = sys.platform.startswith("linux") and hasattr(fcntl, "F_OFD_SETLK") and struct.calcsize("l") == 8
_BUSY = (errno.EAGAIN, errno.EACCES)


def _key(name: str) -> int:
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def _setlk(fd: int, kind: int, offset: int) -> bool:
    """Set (F_RDLCK/F_WRLCK) or clear (F_UNLCK) the lock on byte `offset`, never waiting;
    False when another process holds a conflicting lock."""
    global _OFD
    if _OFD:
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, offset, 1, 0))
            return True
        except OSError as exc:
            if exc.errno in _BUSY:
                return False
            if exc.errno != errno.EINVAL:
                raise
            _OFD = False  # a kernel without OFD locks (before 3.15): classic locks from now on
    how = {fcntl.F_RDLCK: fcntl.LOCK_SH, fcntl.F_WRLCK: fcntl.LOCK_EX, fcntl.F_UNLCK: fcntl.LOCK_UN}[kind]
    try:
        fcntl.lockf(fd, how | (fcntl.LOCK_NB if kind != fcntl.F_UNLCK else 0), 1, offset, os.SEEK_SET)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise
    return True


def _open(path: str) -> tuple[int, tuple[int, int]]:
    fd = open_own(path, os.O_RDWR | os.O_CREAT | OWN_FLAGS, FILE_MODE)  # a regular file of ours, no link
    st = os.fstat(fd)
    return fd, (st.st_dev, st.st_ino)


class _PresenceFile:
    """This process's descriptor on one directory's presence file."""

    def __init__(self, path: str):
        self.path = path
        self.lock = threading.RLock()
        self.fd: int | None
        self.fd, self.identity = _open(path)
        self.held: dict[int, int] = {}  # byte -> holders in this process
        self.users = 0  # guarded by _registry_lock: holders plus callers on their way in

    def revalidate(self) -> None:
        """Under `lock`: when the presence file at the path is no longer ours (someone
        removed or replaced it), move to the one there now and take our locks again."""
        assert self.fd is not None
        try:
            st = os.stat(self.path, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == self.identity:
                return
        except FileNotFoundError:
            pass
        try:
            fd, identity = _open(self.path)
        except OSError as exc:
            log.warning("Cannot reopen the presence file %s: %s", self.path, exc)
            return
        for offset in self.held:
            if not _setlk(fd, fcntl.F_RDLCK, offset):
                log.warning("Presence lock in %s is held exclusively elsewhere", self.path)
        old, self.fd, self.identity = self.fd, fd, identity
        os.close(old)


class PresenceTable:
    """One process's presence descriptors, by directory. A SessionManager owns one; two
    tables in one process behave like two processes on Linux (their locks conflict), but
    with classic POSIX locks they would drop each other's locks: use one per process
    there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, _PresenceFile] = {}

    def __len__(self) -> int:
        """How many presence descriptors are open (one per directory in use)."""
        with self._lock:
            return len(self._files)

    def _use(self, directory: str) -> _PresenceFile:
        with self._lock:
            pf = self._files.get(directory)
            if pf is None:
                pf = self._files[directory] = _PresenceFile(os.path.join(directory, PRESENCE_NAME))
            pf.users += 1
        return pf

    def _forget(self, pf: _PresenceFile) -> None:
        """One user fewer; the last one closes the descriptor (it holds no lock any more)."""
        with self._lock:
            pf.users -= 1
            if pf.users:
                return
            directory = os.path.dirname(pf.path)
            if self._files.get(directory) is pf:
                del self._files[directory]
            fd, pf.fd = pf.fd, None
        if fd is not None:
            os.close(fd)

    def take(self, session_path: Path | str) -> "Presence":
        """Take the presence lock of the session file at `session_path` (an absolute,
        real path), creating the directory's presence file when missing. Waits while
        another process holds it exclusively (it is deleting the session: the caller then
        finds the file unlinked), SessionBusy after `WAIT_LIMIT` seconds. OSError when the
        presence file cannot be opened or locked."""
        directory, name = os.path.split(os.fspath(session_path))
        offset = _key(name)
        pf = self._use(directory)
        try:
            delay, deadline = 0.001, time.monotonic() + WAIT_LIMIT
            while True:
                with pf.lock:
                    pf.revalidate()
                    assert pf.fd is not None
                    count = pf.held.get(offset, 0)
                    if count or _setlk(pf.fd, fcntl.F_RDLCK, offset):
                        pf.held[offset] = count + 1
                        return Presence(self, pf, offset)
                if time.monotonic() > deadline:  # the deleting process was stopped meanwhile
                    raise SessionBusy(f"Session is being deleted by another process: {session_path}",
                                      data={"path": os.fspath(session_path)})
                time.sleep(delay)  # another process is deleting this session: it takes an unlink
                delay = min(delay * 2, 0.02)
        except BaseException:
            self._forget(pf)
            raise


class Presence:
    """This process's presence lock on one session file. Build with `PresenceTable.take`."""

    def __init__(self, table: PresenceTable, pf: _PresenceFile, offset: int):
        self._table = table
        self._pf: _PresenceFile | None = pf
        self._offset = offset

    @property
    def held(self) -> bool:
        return self._pf is not None

    def release(self) -> None:
        """Drop the lock (when no other holder in this process is left); idempotent."""
        pf, self._pf = self._pf, None
        if pf is None:
            return
        try:
            with pf.lock:
                count = pf.held.get(self._offset, 0) - 1
                if count > 0:
                    pf.held[self._offset] = count
                else:
                    pf.held.pop(self._offset, None)
                    if pf.fd is not None:
                        _setlk(pf.fd, fcntl.F_UNLCK, self._offset)
        finally:
            self._table._forget(pf)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[bool]:
        """Yield True when no other process has this session open; while the block runs
        with True nobody can take the lock (their `PresenceTable.take` waits), and nothing of
        this process's other threads touches this directory's presence locks. The shared
        lock is restored after (unless released inside the block)."""
        pf = self._pf
        if pf is None:
            yield False
            return
        with pf.lock:
            pf.revalidate()
            assert pf.fd is not None
            alone = _setlk(pf.fd, fcntl.F_WRLCK, self._offset)
            try:
                yield alone
            finally:
                if alone and pf.fd is not None and pf.held.get(self._offset):
                    _setlk(pf.fd, fcntl.F_RDLCK, self._offset)  # a downgrade never conflicts


#: The table of callers that name none (a SessionManager makes its own).
PROCESS_TABLE = PresenceTable()
