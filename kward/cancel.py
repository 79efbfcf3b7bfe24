"""Cancellation tokens shared by turns, model requests and tools.

A token is cancelled once, from any thread. Blocking operations (an HTTP stream read, a
child process, a wait for a UI answer) register an interrupt callback with `on_cancel`;
`cancel()` calls every registered callback on the cancelling thread, outside the lock, so
a callback may close sockets or kill processes but must not block for long.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from kward.errors import Canceled

log = logging.getLogger(__name__)


class CancelToken:
    """Thread-safe one-shot cancellation flag with interrupt callbacks."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> bool:
        """Cancel; returns False if it was already cancelled. Callbacks run here."""
        with self._lock:
            if self._event.is_set():
                return False
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for cb in callbacks:
            try:
                cb()
            except Exception:  # an interrupt that fails must not stop the others
                log.exception("cancel callback failed")
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or `timeout` passes; True when cancelled."""
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Register `callback`; returns a function that unregisters it.

        If the token is already cancelled the callback runs at once on this thread.
        """
        with self._lock:
            if not self._event.is_set():
                key = self._next
                self._next += 1
                self._callbacks[key] = callback
                return lambda: self._forget(key)
        callback()
        return lambda: None

    def _forget(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Canceled("Canceled.")
