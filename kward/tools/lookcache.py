"""The looks `kward.tools.changes` keeps between shell commands, and their watchers: one
`Slot` per workspace root, at most `MAX_WORKSPACES` of them (the least recently used
dropped first, its watcher closed).

A slot holds what the last command's look found (`look`, with `key`: what it was taken
with, so a look of another kind or environment is not reused), the `DirWatcher` that
tells what changed since (`watcher`), and until when opening a watcher is not tried again
after it failed (`retry_at`). `facts` is what the look's method keeps beside it (git: the
ignored directories and filter drivers it found when the watcher was opened).

    slot = REGISTRY.checkout(root)    # None: another command in that workspace holds it
    ...                               # use and update slot.look / slot.watcher
    REGISTRY.checkin(slot)

Thread contract: `_lock` guards the table and each slot's `busy` flag, held for a lookup or
an update, never while a look is taken. A slot is checked out by one thread at a time
(`busy`); only that thread touches its other fields until it checks it in. A second
command in the same workspace while the first holds the slot gets None (it looks without
a kept look or a watcher, as when the watcher is off). `close_all` (at runtime shutdown)
empties the table and closes every idle slot's watcher at once; a slot held then is no
longer in the table, so its watcher is closed when it is checked in. (Slots made later,
by another runtime of the same process, start afresh.)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kward.tools.fswatch import DirWatcher

log = logging.getLogger(__name__)

MAX_WORKSPACES = 8


@dataclass(slots=True)
class Slot:
    """One workspace's kept look and watcher (see the module doc)."""

    root: str
    look: object = None
    key: object = None
    watcher: "DirWatcher | None" = None
    facts: object = None
    retry_at: float = 0.0
    busy: bool = False

    def reset(self) -> None:
        """Forget the look and close the watcher (the holder's thread only)."""
        self.look = self.key = self.facts = None
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None


class LookCache:
    """The table of slots (see the module doc)."""

    def __init__(self, capacity: int = MAX_WORKSPACES):
        self.capacity = capacity
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, Slot] = OrderedDict()

    def checkout(self, root: str) -> Slot | None:
        """The slot of `root` (new if there was none), now held by the caller; None when
        another command holds it. Any thread."""
        evicted: list[Slot] = []
        with self._lock:
            slot = self._slots.get(root)
            if slot is None:
                slot = self._slots[root] = Slot(root)
                idle = [s for s in self._slots.values() if not s.busy and s is not slot]
                while len(self._slots) > self.capacity and idle:
                    old = idle.pop(0)
                    del self._slots[old.root]
                    evicted.append(old)
            elif slot.busy:
                return None
            self._slots.move_to_end(root)
            slot.busy = True
        for old in evicted:  # idle, out of the table: nobody else can reach them
            old.reset()
        return slot

    def checkin(self, slot: Slot) -> None:
        """Hand `slot` back (its holder's thread). A slot no longer in the table
        (`close_all` ran meanwhile) has its watcher closed."""
        with self._lock:
            slot.busy = False
            kept = self._slots.get(slot.root) is slot
        if not kept:
            slot.reset()

    def close_all(self) -> None:
        """Empty the table, closing every idle watcher (see the module doc). Any thread;
        idempotent."""
        with self._lock:
            idle = [s for s in self._slots.values() if not s.busy]
            self._slots.clear()
        for slot in idle:
            try:
                slot.reset()
            except OSError as exc:
                log.info("closing a watcher failed: %s", exc)

    def __contains__(self, root: object) -> bool:
        with self._lock:
            return root in self._slots

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)


REGISTRY = LookCache()


def close_all() -> None:
    """`REGISTRY.close_all()`: for the runtime's shutdown."""
    REGISTRY.close_all()
