"""A process-wide bound on the descriptors that open session files hold.

Every open session file needs a descriptor only while it is used (an append, a read of
what another process appended, a turn). `DescriptorPool` keeps the files holding one in
least-recently-used order and, past its limit, makes the oldest idle ones give theirs
back (`SessionFile.release_descriptor`: fsync, close); they reopen on their next use and
check that the file at their path is still theirs (device and inode). A pinned file (a
queued or running turn holds its turn lock) is never asked. The limit is a quarter of the
soft RLIMIT_NOFILE (at least 16, at most 1024), so however many sessions are open the
rest of the process keeps its descriptors: with the macOS default of 256, 64 idle files.

When the process runs out anyway (EMFILE: a file opened elsewhere, many turns running),
`retrying` gives back every idle descriptor and tries the open once more; if that fails
too the OSError goes up (the boundaries answer ``too_many_open_files``) and nothing is
left half-done, so the next request works as soon as descriptors are free again.

Thread contract: `_lock` guards the LRU table only and is never held while a file is
asked to release (that takes the file's own lock, without waiting: a file busy in another
thread is simply passed over). Files call `opened`/`used`/`forget` holding their own
lock (lock order: file lock -> pool lock). Any thread.
"""

from __future__ import annotations

import errno
import resource
import threading
from collections import OrderedDict
from typing import Any, Callable, Protocol, TypeVar

T = TypeVar("T")

MIN_LIMIT = 16
MAX_LIMIT = 1024
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class Releasable(Protocol):
    pinned: bool

    def release_descriptor(self) -> bool: ...


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
        self._open: OrderedDict[int, Releasable] = OrderedDict()  # id -> file, oldest first

    @property
    def limit(self) -> int:
        if self._limit is None:
            self._limit = default_limit()
        return self._limit

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def opened(self, file: Releasable) -> None:
        """`file` now holds a descriptor (caller holds the file's lock): the oldest idle
        files past the limit give theirs back."""
        limit = self.limit
        with self._lock:
            self._open[id(file)] = file
            self._open.move_to_end(id(file))
            excess = len(self._open) - limit
            victims = [f for f in self._open.values() if f is not file and not f.pinned][:max(0, excess)]
        for victim in victims:
            victim.release_descriptor()

    def used(self, file: Releasable) -> None:
        """`file` used its descriptor: it is the most recently used now."""
        with self._lock:
            if id(file) in self._open:
                self._open.move_to_end(id(file))

    def forget(self, file: Releasable) -> None:
        """`file` closed its descriptor (caller holds the file's lock)."""
        with self._lock:
            self._open.pop(id(file), None)

    def shrink(self) -> int:
        """Ask every idle file to give its descriptor back; how many did."""
        with self._lock:
            idle = [f for f in self._open.values() if not f.pinned]
        return sum(1 for f in idle if f.release_descriptor())


DEFAULT_POOL = DescriptorPool()


def out_of_descriptors(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _OUT_OF_DESCRIPTORS


def retrying(fn: Callable[..., T], *args: Any, pool: DescriptorPool = DEFAULT_POOL) -> T:
    """``fn(*args)``; on EMFILE/ENFILE give back the idle descriptors and try once more."""
    try:
        return fn(*args)
    except OSError as exc:
        if not out_of_descriptors(exc) or not pool.shrink():
            raise
    return fn(*args)
