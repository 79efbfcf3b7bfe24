"""Steering: user input sent to a turn while it runs.

The RPC layer `submit`s input from the dispatcher thread; the agent loop `drain`s it on the
turn's worker thread between model calls; a provider may `wait` for it (the Scripted
provider's `waitForSteer` step). When the turn decides to finish it calls
`close_if_empty()`: atomically either closes the inbox (later submits are refused, so the
caller queues them as a follow-up turn instead) or hands back input that arrived at the last
moment, so no input is ever lost. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kward.model import ImagePart


@dataclass(frozen=True)
class SteerInput:
    text: str
    created_at: str
    attachments: list[ImagePart] = field(default_factory=list)


class SteeringInbox:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: list[SteerInput] = []
        self._closed = False

    def submit(self, item: SteerInput) -> bool:
        """Queue `item` for the running turn; False when the turn no longer takes input."""
        with self._cond:
            if self._closed:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def drain(self) -> list[SteerInput]:
        with self._cond:
            items, self._items = self._items, []
            return items

    def close_if_empty(self) -> list[SteerInput]:
        """Close when nothing is pending and return []; else return (and remove) the pending input."""
        with self._cond:
            if self._items:
                items, self._items = self._items, []
                return items
            self._closed = True
            return []

    def close(self) -> list[SteerInput]:
        with self._cond:
            self._closed = True
            items, self._items = self._items, []
            self._cond.notify_all()
            return items

    def wait(self, timeout: float) -> bool:
        """Block until input is pending, the inbox closes, or `timeout`; True if input waits."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._items and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return bool(self._items)
