"""How long a thread may wait for room to publish: a bound on the face's backpressure.

A streaming worker paces itself before each event it publishes: `make_room()` (the RPC
face: `kward.rpc.connection.Connection.make_room`, the outbox's `wait_for_room`) blocks
while the client is behind reading. Most callers may wait as long as it takes. Code that
must act at a time of its own while it publishes does so inside `bounded(deadline,
cancel)`: a shell command's pump (its timeout, the turn's cancel: `kward.tools.process`)
and the wait for a plugin command (`kward.resources.extensions`). On that thread, until the
block ends, a wait for room returns at `deadline` or once `cancel` fired, room or not; the
event then goes out over the outbox's limit. That costs a few events at most: the bounded
code ends at its deadline or cancel, which is then due.

Why a context variable and not a parameter: the wait happens several layers below the
code that knows the bound (pump -> live output -> the loop's emit -> the turn's event log
-> the face's `make_room`), through callables whose signatures every face and test
shares. Each thread has its own value (a new thread starts with none), so a bound never
reaches another thread's waits. `current()` is what the waiting side reads.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

from kward.cancel import CancelToken


@dataclass(frozen=True, slots=True)
class Bound:
    """Wait for room at most until `deadline` (`time.monotonic()`) or until `cancel` fires."""

    deadline: float
    cancel: CancelToken | None = None


_current: ContextVar[Bound | None] = ContextVar("kward_pacing_bound", default=None)


@contextmanager
def bounded(deadline: float, cancel: CancelToken | None = None) -> Iterator[Bound]:
    """Bound this thread's waits for room while the block runs (nested: the earlier
    deadline; the inner cancel, else the outer one)."""
    outer = _current.get()
    if outer is not None:
        deadline = min(deadline, outer.deadline)
        cancel = cancel if cancel is not None else outer.cancel
    bound = Bound(deadline, cancel)
    token = _current.set(bound)
    try:
        yield bound
    finally:
        _current.reset(token)


def current() -> Bound | None:
    """The bound on this thread's waits for room, if any."""
    return _current.get()
