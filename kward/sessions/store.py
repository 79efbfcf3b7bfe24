"""One session file on disk: exclusive atomic creation, whole-line appends, fsync, and its locks.

Concurrency contract (stricter than the original kward's, which had no guard at all):

- Every append is ONE ``os.write`` of a whole line on an ``O_APPEND`` descriptor, made
  while holding a short ``flock(LOCK_EX)`` on the session file itself (serializes writers
  of all processes) and this object's ``threading.Lock`` (serializes threads of this
  process). Lines never interleave, and a line is in the file (page cache) when
  ``append`` returns; ``descriptor.sync`` makes it durable (fsync).
- If the file does not end in a newline when we append (a writer crashed mid-line), the
  line we write starts with ``\\n`` so the torn fragment stays a separate, skippable line.
- Descriptors are bounded (`kward.sessions.descriptors`): a SessionFile has a
  `PooledDescriptor` (`descriptor`), which an idle file gives back when the process-wide
  pool is full (fsynced first) and reopens on its next use, checking that the file at the
  path is still the one it opened (device and inode; SessionFileGone otherwise). A pinned
  descriptor (`descriptor.pin`: a turn is queued or running) stays open. What concerns
  only the descriptor is asked of it: `descriptor.size`, `state`, `check_present`,
  `pread`, `sync` (fsync of what was appended), `pinning`.
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
  instead of writing to a file nobody will read again; ``descriptor.check_present`` does
  the same check on its own (before a turn is reported completed).

Any thread may call any method. The descriptor's lock makes appends, reads, sync, release
and close atomic with respect to each other (an append holds it for its whole write); this
object's own lock guards only its presence lock. Lock order: this file's lock -> the
descriptor's -> the descriptor pool's; a directory's presence lock -> this file's lock
(``delete`` inside ``exclusive_presence``), never the other way round.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from pathlib import Path
from typing import Any, Iterator

from kward.errors import InvalidParams, SessionBusy
from kward.fsutil import FILE_MODE, OWN_FLAGS, ensure_private_dir, fsync_dir, open_own
from kward.sessions.descriptors import DEFAULT_POOL, DescriptorPool, PooledDescriptor
from kward.sessions.fdretry import retrying
from kward.sessions.format import SessionHeader, encode_line
from kward.sessions.paths import lock_path_for, presence_path_for
from kward.sessions.presence import PROCESS_TABLE, Presence, PresenceTable

_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC


class SessionFile:
    """One session file: its append `descriptor` (released while idle, see
    `PooledDescriptor`) and its presence lock. Build with `create` or `open`."""

    def __init__(self, path: Path, fd: int, presence: Presence, pool: DescriptorPool | None = None):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._presence: Presence | None = presence
        self.descriptor = PooledDescriptor(self.path, fd, _APPEND_FLAGS, pool if pool is not None else DEFAULT_POOL)

    # --- construction ----------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, file_name: str, header: SessionHeader,
               presence: PresenceTable = PROCESS_TABLE) -> "SessionFile":
        """Create ``directory/file_name`` (0600; directory 0700) holding `header`; its
        presence lock is taken in the table `presence`.

        Atomic: the header is written and fsynced under a hidden temporary name
        (``.<name>.<pid>.<8 hex>.creating``, see `paths.CREATING`), then hard-linked into place,
        which (like O_EXCL) fails with FileExistsError when the name is taken. A crash at
        any moment therefore leaves either no session file or one with a complete header
        (never an empty or torn-header ``.jsonl`` that cannot be resumed). The directory
        entry is fsynced before returning.
        """
        ensure_private_dir(directory)
        path = Path(directory) / file_name
        tmp = Path(directory) / f".{file_name}.{os.getpid()}.{os.urandom(4).hex()}.creating"
        fd = retrying(lambda: os.open(tmp, _APPEND_FLAGS | os.O_CREAT | os.O_EXCL, FILE_MODE), pool=DEFAULT_POOL)
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
            session = cls(path, fd, retrying(lambda: presence.take(path), pool=DEFAULT_POOL))
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
        fd = retrying(lambda: os.open(path, _APPEND_FLAGS), pool=DEFAULT_POOL)
        try:
            st = os.fstat(fd)
            if identity is not None and (st.st_dev, st.st_ino) != identity:
                raise InvalidParams(f"Session file was replaced while it was opened: {path}",
                                    data={"path": str(path)})
            lock = retrying(lambda: presence.take(path), pool=DEFAULT_POOL)  # waits while another process deletes it
        except BaseException:
            os.close(fd)
            raise
        session = cls(path, fd, lock)
        if os.fstat(fd).st_nlink == 0:  # removed as unused between our open and our lock
            session.close()
            raise InvalidParams(f"Session file not found: {path}", data={"path": str(path)})
        return session

    # --- writing ---------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> tuple[int, int]:
        """Write `record` as one line; return the (start, end) byte offsets of the line.

        Raises ValueError when closed.
        """
        return self.append_line(encode_line(record))

    def append_line(self, line: bytes) -> tuple[int, int]:
        """Append pre-encoded bytes that end in ``\\n`` (one JSON record)."""
        with self.descriptor.writing() as fd:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                st = os.fstat(fd)
                size = st.st_size
                self.descriptor.check_at_path(st)
                data = line
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + line  # terminate a torn line left by a crashed writer
                _write_all(fd, data, self.path)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        end = size + len(data)
        return end - len(line), end

    def close(self) -> None:
        """fsync, close the descriptor, and drop the presence lock; idempotent."""
        with self._lock:
            presence, self._presence = self._presence, None
            self.descriptor.close()
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
        self.descriptor.check_present()
        fd = try_turn_lock(self.lock_path)
        if fd is None:
            name = label or str(self.path)
            raise SessionBusy(f"Session is busy: another process is running a turn on {name}",
                              data={"path": str(self.path)})
        try:
            self.descriptor.check_present()  # deleted meanwhile: our open re-created the sidecar
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
    """Open `lock_path` (0600; a regular file of this user, `fsutil.open_own`) and take
    LOCK_EX|LOCK_NB; the fd, or None when held elsewhere."""
    fd = retrying(lambda: open_own(lock_path, os.O_RDWR | os.O_CREAT | OWN_FLAGS), pool=DEFAULT_POOL)
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
