"""One session file on disk: exclusive atomic creation, whole-line appends, fsync, and its locks.

Concurrency contract (DESIGN.md "Where we deliberately differ"):

- Every append is ONE ``os.write`` of a whole line on an ``O_APPEND`` descriptor, made
  while holding a short ``flock(LOCK_EX)`` on the session file itself (serializes writers
  of all processes) and this object's ``threading.Lock`` (serializes threads of this
  process). Lines never interleave, and a line is in the file (page cache) when
  ``append`` returns; ``sync`` makes it durable (fsync).
- If the file does not end in a newline when we append (a writer crashed mid-line), the
  line we write starts with ``\\n`` so the torn fragment stays a separate, skippable line.
- Descriptors are bounded (`kward.sessions.descriptors`): an idle file gives its
  descriptor back when the process-wide pool is full (fsynced first) and reopens it on its
  next use, checking that the file at the path is still the one it opened (device and
  inode; SessionFileGone otherwise). A pinned file (`pin`: a turn is queued or running)
  keeps its descriptor.
- Turn lock: ``flock(LOCK_EX|LOCK_NB)`` on the sidecar ``<file>.lock``, held for a whole
  turn or compaction. Another holder (any process, or another descriptor in this one)
  makes ``turn_lock`` raise SessionBusy at once.
- Presence lock (`kward.sessions.presence`): every open SessionFile, idle or not, holds a
  shared byte-range lock on its directory's ``.kward-sessions.open`` until it is closed,
  so a process can tell whether any *other* process has the session open
  (``exclusive_presence``) before deleting it. The files are unlinked while that
  exclusive lock is still held (``delete`` closes last), so an opener waiting for its
  shared lock finds the file gone and gives up.
- The file may vanish under us (another process deleted it, a user moved it, something
  renamed another file over it). Every append first compares the descriptor (``fstat``:
  link count, device and inode) with the path (``os.stat``) and raises SessionFileGone
  instead of writing to a file nobody will read again; ``check_present`` does the same
  check on its own (before a turn is reported completed).

Any thread may call any method; the internal lock makes appends, reads, sync, release and
close atomic with respect to each other. Lock order: this file's lock -> the descriptor
pool's; a directory's presence lock -> this file's lock (``delete`` inside
``exclusive_presence``), never the other way round.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any, Iterator

from kward.errors import InvalidParams, SessionBusy, SessionFileGone
from kward.fsutil import FILE_MODE, ensure_private_dir, fsync_dir
from kward.sessions.descriptors import DEFAULT_POOL, DescriptorPool, retrying
from kward.sessions.paths import lock_path_for, presence_path_for
from kward.sessions.presence import PROCESS_TABLE, Presence, PresenceTable
from kward.sessions.records import SessionHeader, encode_line

#: The temp names of `SessionFile.create`: ``.<name>.jsonl.<pid>.<8 hex>.creating`` (never
#: listed as sessions; `fsutil.remove_stale_files` removes those of dead processes).
CREATING = re.compile(r"^\..+\.jsonl\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.creating$")

_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
_REOPEN_FLAGS = _APPEND_FLAGS | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK  # never wait on a FIFO put there


class SessionFile:
    """An append descriptor (released while idle) on one session file, and its presence
    lock. Build with `create` or `open`."""

    def __init__(self, path: Path, fd: int, presence: Presence, pool: DescriptorPool | None = None):
        self.path = Path(path)
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)
        self._fd: int | None = fd
        self._presence: Presence | None = presence
        self._pool = pool or DEFAULT_POOL
        self._lock = threading.Lock()
        self._closed = False
        self._dirty = False
        self._pins = 0
        with self._lock:
            self._pool.opened(self)

    # --- construction ----------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, file_name: str, header: SessionHeader,
               presence: PresenceTable = PROCESS_TABLE) -> "SessionFile":
        """Create ``directory/file_name`` (0600; directory 0700) holding `header`; its
        presence lock is taken in the table `presence`.

        Atomic: the header is written and fsynced under a hidden temporary name
        (``.<name>.<pid>.<8 hex>.creating``, see `CREATING`), then hard-linked into place,
        which (like O_EXCL) fails with FileExistsError when the name is taken. A crash at
        any moment therefore leaves either no session file or one with a complete header
        (never an empty or torn-header ``.jsonl`` that cannot be resumed). The directory
        entry is fsynced before returning.
        """
        ensure_private_dir(directory)
        path = Path(directory) / file_name
        tmp = Path(directory) / f".{file_name}.{os.getpid()}.{os.urandom(4).hex()}.creating"
        fd = retrying(os.open, tmp, _APPEND_FLAGS | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            _write_all(fd, encode_line(header.to_record()), path)
            os.fsync(fd)
            _link_exclusive(tmp, path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        try:
            session = cls(path, fd, retrying(presence.take, path))
        except BaseException:
            os.close(fd)
            remove_session_files(path)
            raise
        fsync_dir(Path(directory))
        return session

    @classmethod
    def open(cls, path: Path, identity: tuple[int, int] | None = None,
             presence: PresenceTable = PROCESS_TABLE) -> "SessionFile":
        """Open an existing session file for appending (never truncated or created).

        Check that the file is a session first (``SessionReader``, read-only): this opens it
        for writing and takes its presence lock. `identity` is the ``(st_dev, st_ino)``
        the caller checked; another file found at `path` now is InvalidParams. InvalidParams
        too when the file was deleted while we opened it.
        """
        path = Path(path)
        fd = retrying(os.open, path, _APPEND_FLAGS)
        try:
            st = os.fstat(fd)
            if identity is not None and (st.st_dev, st.st_ino) != identity:
                raise InvalidParams(f"Session file was replaced while it was opened: {path}",
                                    data={"path": str(path)})
            lock = retrying(presence.take, path)  # waits while another process deletes it
        except BaseException:
            os.close(fd)
            raise
        session = cls(path, fd, lock)
        if os.fstat(fd).st_nlink == 0:  # removed as unused between our open and our lock
            session.close()
            raise InvalidParams(f"Session file not found: {path}", data={"path": str(path)})
        return session

    # --- the descriptor --------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pinned(self) -> bool:
        """Keeps its descriptor (read by the pool without the lock: a hint)."""
        return self._pins > 0

    @property
    def holds_descriptor(self) -> bool:
        return self._fd is not None

    def pin(self) -> None:
        """Keep the descriptor until `unpin` (a turn is queued or running); nestable."""
        with self._lock:
            self._pins += 1

    def unpin(self) -> None:
        with self._lock:
            self._pins -= 1

    def release_descriptor(self) -> bool:
        """Give the descriptor back (fsynced first) unless pinned, closed or busy in
        another thread (never waits); True when released. The pool calls this."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            fd = self._fd
            if fd is None or self._pins:
                return False
            self._fd = None
            self._pool.forget(self)
            try:
                if self._dirty:
                    os.fsync(fd)
                    self._dirty = False
            finally:
                os.close(fd)
            return True
        finally:
            self._lock.release()

    def _descriptor(self) -> int:
        """Under `_lock`: our descriptor, reopened when it was released. ValueError when
        closed; SessionFileGone when the file at the path is no longer ours."""
        if self._closed:
            raise ValueError(f"session file is closed: {self.path}")
        fd = self._fd
        if fd is not None:
            self._pool.used(self)
            return fd
        self._stat_path()  # gone or replaced: say so without opening what is there now
        try:
            fd = retrying(os.open, self.path, _REOPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            raise _gone(self.path, "missing", "deleted or moved away") from None
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise _gone(self.path, "replaced", "replaced by another file") from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self._identity:
            os.close(fd)
            raise _gone(self.path, "replaced", "replaced by another file")
        os.set_blocking(fd, True)
        self._fd = fd
        self._pool.opened(self)
        return fd

    def _stat_path(self) -> os.stat_result:
        """Under `_lock`, without a descriptor: ``os.stat`` of the path when it is still
        our file, else SessionFileGone."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            raise _gone(self.path, "missing", "deleted or moved away") from None
        if (st.st_dev, st.st_ino) != self._identity or not stat.S_ISREG(st.st_mode):
            raise _gone(self.path, "replaced", "replaced by another file")
        return st

    # --- writing ---------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> tuple[int, int]:
        """Write `record` as one line; return the (start, end) byte offsets of the line.

        Raises ValueError when closed.
        """
        return self.append_line(encode_line(record))

    def append_line(self, line: bytes) -> tuple[int, int]:
        """Append pre-encoded bytes that end in ``\\n`` (one JSON record)."""
        with self._lock:
            fd = self._descriptor()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                st = os.fstat(fd)
                size = st.st_size
                self._check_present(st)
                data = line
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + line  # terminate a torn line left by a crashed writer
                _write_all(fd, data, self.path)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            self._dirty = True
        end = size + len(data)
        return end - len(line), end

    def sync(self) -> None:
        """fsync the file if anything was appended since the last sync (no-op when closed;
        a released descriptor was fsynced when it was released)."""
        with self._lock:
            if self._fd is not None and self._dirty:
                os.fsync(self._fd)
                self._dirty = False

    def size(self) -> int:
        """The file's size (ValueError when closed; SessionFileGone when it is gone and
        our descriptor was released, so that it cannot be read any more)."""
        return self.fstat().st_size

    def fstat(self) -> os.stat_result:
        """The stat of our file: ``os.fstat`` of the descriptor, or while it is released
        ``os.stat`` of the path checked to be our file (see `size`). Opens nothing."""
        with self._lock:
            if self._closed:
                raise ValueError(f"session file is closed: {self.path}")
            if self._fd is None:
                return self._stat_path()
            return os.fstat(self._fd)

    # --- is it still there? ----------------------------------------------------------

    def check_present(self) -> None:
        """Raise SessionFileGone unless the file we append to is still the one at `path`
        (ValueError when closed). Costs one ``fstat`` and one ``stat``."""
        with self._lock:
            if self._closed:
                raise ValueError(f"session file is closed: {self.path}")
            if self._fd is None:
                self._stat_path()
                return
            st = os.fstat(self._fd)
        self._check_present(st)

    def state(self) -> str:
        """``present``, ``missing`` (deleted or moved away) or ``replaced`` (another file
        is at the path now). ValueError when closed."""
        try:
            self.check_present()
        except SessionFileGone as exc:
            return exc.data["state"]
        return "present"

    def _check_present(self, st: os.stat_result) -> None:
        how = "deleted" if st.st_nlink == 0 else "moved away"
        try:
            here = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            raise _gone(self.path, "missing", how) from None
        except OSError:  # cannot look (e.g. a directory made unreadable)
            if st.st_nlink == 0:
                raise _gone(self.path, "missing", how) from None
            return
        if (here.st_dev, here.st_ino) != (st.st_dev, st.st_ino):
            raise _gone(self.path, "replaced", "replaced by another file")

    def pread(self, size: int, offset: int) -> bytes:
        """At most `size` bytes from `offset` (lines already written never change)."""
        with self._lock:  # held so that a concurrent close or release cannot recycle the descriptor
            return os.pread(self._descriptor(), size, offset)

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file."""
        chunks = []
        while start < end:
            chunk = self.pread(min(end - start, 1 << 20), start)
            if not chunk:
                break
            chunks.append(chunk)
            start += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """fsync, close, and drop the presence lock; idempotent."""
        with self._lock:
            self._closed = True
            fd, self._fd = self._fd, None
            presence, self._presence = self._presence, None
            self._pool.forget(self)
            try:
                if fd is not None and self._dirty:
                    os.fsync(fd)
            finally:
                if fd is not None:
                    os.close(fd)
        if presence is not None:  # outside our lock: see the lock order
            presence.release()

    # --- locks -----------------------------------------------------------------------

    @property
    def lock_path(self) -> Path:
        return lock_path_for(self.path)

    def take_turn_lock(self, label: str | None = None) -> int:
        """Take the sidecar flock and return its descriptor (closing it releases the lock).

        SessionBusy at once if someone holds it; SessionFileGone (and no sidecar left
        behind) when the session file is no longer at its path. `label` names the session
        in the error message (defaults to the file path).
        """
        self.check_present()
        fd = try_turn_lock(self.lock_path)
        if fd is None:
            name = label or str(self.path)
            raise SessionBusy(f"Session is busy: another process is running a turn on {name}",
                              data={"path": str(self.path)})
        try:
            self.check_present()  # deleted meanwhile: our open re-created the sidecar
        except BaseException:
            with contextlib.suppress(OSError):
                if not os.path.lexists(self.path):
                    os.unlink(self.lock_path)
            os.close(fd)
            raise
        return fd

    @contextlib.contextmanager
    def turn_lock(self, label: str | None = None) -> Iterator[None]:
        """Hold the sidecar flock for the block (see `take_turn_lock`)."""
        fd = self.take_turn_lock(label)
        try:
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    @contextlib.contextmanager
    def exclusive_presence(self) -> Iterator[bool]:
        """Yield True when no other process has this session open (see
        `Presence.exclusive`); while the block runs with True nobody can open it. Callers
        hold the turn lock, so that no other process runs a turn meanwhile either."""
        with self._lock:
            presence = self._presence
        if presence is None:
            yield False
            return
        with presence.exclusive() as alone:
            yield alone

    def delete(self) -> None:
        """Remove the file and its sidecars (missing files are fine), then close.

        Removing first keeps our presence lock (exclusive when an unused session is
        deleted, see ``exclusive_presence``) until the name is gone: a process opening the
        session meanwhile waits for the lock, then finds the file unlinked and gives up,
        instead of appending to a file nobody will ever read."""
        try:
            remove_session_files(self.path)
        finally:
            self.close()


def _write_all(fd: int, data: bytes, path: Path) -> None:
    """One ``os.write`` of `data`; more only on a short write (ENOSPC-like trouble)."""
    written = os.write(fd, data)
    while written < len(data):
        more = os.write(fd, data[written:])
        if more <= 0:
            raise OSError(errno.EIO, "short write to session file", str(path))
        written += more


def _link_exclusive(tmp: Path, path: Path) -> None:
    """Give the file `tmp` the name `path`; FileExistsError when `path` exists."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:  # a filesystem without hard links: check, then rename
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.rename(tmp, path)


def try_turn_lock(lock_path: Path) -> int | None:
    """Open `lock_path` (0600) and take LOCK_EX|LOCK_NB; the fd, or None when held elsewhere."""
    fd = retrying(os.open, lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_session_files(path: Path, *, sidecars_only: bool = False) -> bool:
    """Unlink a session file (unless `sidecars_only`) and its sidecars (the turn lock's,
    and the ``.open`` one earlier versions kept); True when the session file was removed."""
    removed = False
    if not sidecars_only:
        try:
            os.unlink(path)
            removed = True
        except FileNotFoundError:
            pass
    for sidecar in (lock_path_for(Path(path)), presence_path_for(Path(path))):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sidecar)
    fsync_dir(Path(path).parent)
    return removed


def _gone(path: Path, state: str, how: str) -> SessionFileGone:
    return SessionFileGone(f"Session file was {how}: {path}; nothing more can be saved to this session",
                           data={"path": str(path), "state": state})
