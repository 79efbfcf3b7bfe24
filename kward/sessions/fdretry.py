"""Running out of file descriptors: telling it apart, and trying once more after idle
descriptors were given back.

A process with many open sessions keeps their descriptors in a pool
(`kward.sessions.descriptors.DescriptorPool`), which can close the idle ones. Anything
that opens a file (an append descriptor, a read of a session file, a lock sidecar) goes
through `retrying` with the pool it may take descriptors from; a caller without one (the
listing of a process that opened no session) passes None and simply gets the error. The
pool is passed in, never imported here, so that listing needs none of its machinery.

Pure functions: safe from any thread.
"""

from __future__ import annotations

import errno
from typing import Callable, Protocol, TypeVar

T = TypeVar("T")

_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class Reclaimer(Protocol):
    """Something holding idle descriptors it can give back (a `DescriptorPool`)."""

    def shrink(self) -> int:
        """Give back every idle descriptor; how many were."""
        ...


def out_of_descriptors(exc: BaseException) -> bool:
    """Whether `exc` says the process (EMFILE) or the system (ENFILE) has no descriptor
    left: nothing is wrong with the file that was opened."""
    return isinstance(exc, OSError) and exc.errno in _OUT_OF_DESCRIPTORS


def retrying(fn: Callable[[], T], *, pool: Reclaimer | None) -> T:
    """``fn()``; when it runs out of descriptors and `pool` gave some back, once more."""
    try:
        return fn()
    except OSError as exc:
        if pool is None or not out_of_descriptors(exc) or not pool.shrink():
            raise
    return fn()
