"""A process-wide bound on the descriptors that open session files hold.

Every open session file needs a descriptor only while it is used (an append, a read of
what another process appended, a turn). A `kward.sessions.store.SessionFile` has a
`PooledDescriptor`; `DescriptorPool` keeps the descriptors that are open in
least-recently-used order and, past its limit, makes the oldest idle ones give theirs
back (`PooledDescriptor.release`: fsync, close). They reopen on their next use and check
that the file at their path is still theirs (device and inode, else SessionFileGone), and
answer stat-like questions from the path meanwhile, never opening for them. A pinned one
(a queued or running turn holds its turn lock) is never asked. The limit is a quarter of
the soft RLIMIT_NOFILE (at least 16, at most 1024), so however many sessions are open the
rest of the process keeps its descriptors: with the macOS default of 256, 64 idle files.

When the process runs out anyway (EMFILE: a file opened elsewhere, many turns running),
`kward.sessions.fdretry.retrying` with a pool makes it give back every idle descriptor
(`DescriptorPool.shrink`) and tries the open once more; if that fails too the OSError
goes up (the boundaries answer ``too_many_open_files``) and nothing is left half-done, so
the next request works as soon as descriptors are free again.

Thread contract: the pool's `_lock` guards the LRU table only and is never held while a
descriptor is asked to release (that takes the descriptor's own lock, without waiting: one
busy in another thread is simply passed over). Descriptors call `opened`/`used`/`forget`
holding their own lock (lock order: descriptor lock -> pool lock). A PooledDescriptor's
`_lock` guards its descriptor and is held for every use of it (`writing`, `pread`). Any
thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import stat
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Iterator, Literal

from kward.errors import SessionFileGone
from kward.sessions.fdretry import retrying

#: Where a file is against its path: still there, gone (deleted or moved away), or
#: another file is at the path now.
FileState = Literal["present", "missing", "replaced"]

MIN_LIMIT = 16
MAX_LIMIT = 1024


def default_limit() -> int:
    """A quarter of the soft descriptor limit, within [MIN_LIMIT, MAX_LIMIT]."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return MIN_LIMIT
    if soft == resource.RLIM_INFINITY or soft < 0:
        return MAX_LIMIT
    return max(MIN_LIMIT, min(MAX_LIMIT, soft // 4))


class DescriptorPool:
    """See the module docstring. `limit` defaults to `default_limit()`, read at first use."""

    def __init__(self, limit: int | None = None):
        self._limit = limit
        self._lock = threading.Lock()
        self._open: OrderedDict[int, PooledDescriptor] = OrderedDict()  # id -> descriptor, oldest first

    @property
    def limit(self) -> int:
        if self._limit is None:
            self._limit = default_limit()
        return self._limit

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def opened(self, descriptor: PooledDescriptor) -> None:
        """`descriptor` is open now (caller holds its lock): the oldest idle ones past
        the limit give theirs back."""
        limit = self.limit
        with self._lock:
            self._open[id(descriptor)] = descriptor
            self._open.move_to_end(id(descriptor))
            excess = len(self._open) - limit
            victims = [d for d in self._open.values() if d is not descriptor and not d.pinned][:max(0, excess)]
        for victim in victims:
            victim.release()

    def used(self, descriptor: PooledDescriptor) -> None:
        """`descriptor` was used: it is the most recently used now."""
        with self._lock:
            if id(descriptor) in self._open:
                self._open.move_to_end(id(descriptor))

    def forget(self, descriptor: PooledDescriptor) -> None:
        """`descriptor` was released or closed (caller holds its lock)."""
        with self._lock:
            self._open.pop(id(descriptor), None)

    def shrink(self) -> int:
        """Ask every idle descriptor to be released; how many were."""
        with self._lock:
            idle = [d for d in self._open.values() if not d.pinned]
        return sum(1 for d in idle if d.release())


#: The pool of the process (a test may use its own).
DEFAULT_POOL = DescriptorPool()


class PooledDescriptor:
    """A descriptor on one regular file, known by its `path` and identity (device, inode),
    that the pool may close while it is idle (`release`). The file's user (a
    `kward.sessions.store.SessionFile` has one) writes through `writing` and reads through
    `pread`; both reopen a released descriptor with `reopen_flags`, only if the path
    still names the same file. `fstat`, `size` and the presence checks look at the path
    instead while it is released: they never open. `_lock` guards the descriptor, its
    pins and whether it was written since the last fsync."""

    def __init__(self, path: Path, fd: int, reopen_flags: int, pool: DescriptorPool):
        self.path = Path(path)
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)
        self._fd: int | None = fd
        self._reopen_flags = reopen_flags | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK  # never wait on a FIFO
        self._pool = pool
        self._lock = threading.Lock()
        self._closed = False
        self._dirty = False  # written since the last fsync
        self._pins = 0
        with self._lock:
            self._pool.opened(self)

    @property
    def pinned(self) -> bool:
        """Keeps its descriptor (read by the pool without the lock: a hint)."""
        return self._pins > 0

    @property
    def holds_fd(self) -> bool:
        """Whether it holds an open descriptor now (False while released, and once closed)."""
        return self._fd is not None

    def pin(self) -> None:
        """Keep the descriptor until `unpin` (a turn is queued or running); nestable."""
        with self._lock:
            self._pins += 1

    def unpin(self) -> None:
        with self._lock:
            self._pins -= 1

    @contextlib.contextmanager
    def pinning(self) -> Iterator[None]:
        """Pinned for the block."""
        self.pin()
        try:
            yield
        finally:
            self.unpin()

    def release(self) -> bool:
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

    @contextlib.contextmanager
    def writing(self) -> Iterator[int]:
        """The descriptor for a write, reopened when it was released, held under `_lock`
        for the block (nothing releases or closes it meanwhile); a block that ends without
        an exception marks it written, for the next `sync`, `release` or `close` to fsync.
        ValueError when closed; SessionFileGone when the file at the path is no longer ours."""
        with self._lock:
            yield self._open_fd()
            self._dirty = True

    def pread(self, size: int, offset: int) -> bytes:
        """At most `size` bytes from `offset` (lines already written never change)."""
        with self._lock:  # held so that a concurrent close or release cannot recycle the descriptor
            return os.pread(self._open_fd(), size, offset)

    def sync(self) -> None:
        """fsync if written since the last sync (no-op when closed; a released descriptor
        was fsynced when it was released)."""
        with self._lock:
            if self._fd is not None and self._dirty:
                os.fsync(self._fd)
                self._dirty = False

    def close(self) -> None:
        """Closed for good (fsynced first if written to); idempotent."""
        with self._lock:
            self._closed = True
            fd, self._fd = self._fd, None
            self._pool.forget(self)
            try:
                if fd is not None and self._dirty:
                    os.fsync(fd)
            finally:
                if fd is not None:
                    os.close(fd)

    def _open_fd(self) -> int:
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
            fd = retrying(lambda: os.open(self.path, self._reopen_flags), pool=self._pool)
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
        self.check_at_path(st)

    def state(self) -> FileState:
        """``present``, ``missing`` (deleted or moved away) or ``replaced`` (another file
        is at the path now). ValueError when closed."""
        try:
            self.check_present()
        except SessionFileGone as exc:
            return "missing" if exc.data["state"] == "missing" else "replaced"
        return "present"

    def check_at_path(self, st: os.stat_result) -> None:
        """Raise SessionFileGone unless `st`, an ``os.fstat`` of our descriptor, is the
        file at `path` (a writer checks this under its append lock)."""
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


def _gone(path: Path, state: Literal["missing", "replaced"], how: str) -> SessionFileGone:
    return SessionFileGone(f"Session file was {how}: {path}; nothing more can be saved to this session",
                           data={"path": str(path), "state": state})
