"""A session file's lane: the queue its turns run from, one at a time, and the
cross-process turn lock it holds meanwhile. Scheduled by `kward.agent.scheduler.TurnManager`.

Each session has a lane: a queue of turns drained by one job on the worker pool, so a
session runs one turn at a time in arrival order while different sessions run in
parallel. A session file open under several RPC ids (`session.shared`, see
kward.sessions.handle) has one lane: turns started through any of its ids queue FIFO
together, and each turn's events carry the RPC id it was started with. While a lane has
queued or running turns it holds the session's cross-process turn lock (taken when the
first turn is queued, so a session that another process is running answers
`session_busy` at once; released when the queue drains). A turn started while the drain
job is still releasing that lock (`releasing`) waits for the release (an fsync and a
close) instead of failing on its own process's lock. Exclusive work (a manual
compaction) holds a lane without a turn (`held`). A lane is dropped once it is idle and
released.

Thread contract: a lane's fields are guarded by the TurnManager's `_lock`; its methods
are called with that lock held, except `close_lock` (an fsync and an unlock), which is
called without it.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kward.agent.turn import Turn
from kward.cancel import CancelToken

if TYPE_CHECKING:  # pragma: no cover
    from kward.sessions.session import OpenSession

log = logging.getLogger(__name__)


@dataclass
class Lane:
    shared: OpenSession  # the session's `shared` object: one lane per session file
    queue: deque[Turn] = field(default_factory=deque)
    running: Turn | None = None
    draining: bool = False
    turn_lock: contextlib.ExitStack | None = None
    releasing: bool = False  # the drain job is releasing `turn_lock` (fsync, unlock)
    held: CancelToken | None = None  # the cancel token of exclusive work holding the lane (`exclusive`)

    def busy(self) -> bool:
        """Turns are queued or running on it, or it is letting go of its turn lock."""
        return bool(self.queue or self.running is not None or self.releasing)

    def idle(self) -> bool:
        """Nothing is queued, running, draining or holding it: it may be dropped."""
        return not (self.queue or self.running or self.draining or self.held is not None)

    def take_lock(self) -> None:
        """Hold the session's cross-process turn lock unless the lane holds it already;
        SessionBusy when another process runs a turn on the file."""
        if self.turn_lock is None:
            stack = contextlib.ExitStack()
            stack.enter_context(self.shared.turn_lock())
            self.turn_lock = stack

    def end(self) -> contextlib.ExitStack | None:
        """The queue is empty: stop draining and hand back the turn lock to release. The
        caller must then call `TurnManager._release` (which ends `releasing`)."""
        self.draining = False
        self.releasing = True
        stack, self.turn_lock = self.turn_lock, None
        return stack

    def close_lock(self, stack: contextlib.ExitStack | None) -> None:
        """Release a turn lock `end` handed back (fsync, unlock); failures are logged."""
        if stack is None:
            return
        try:
            stack.close()
        except Exception:
            log.exception("releasing the turn lock of %r failed", self.shared)
