"""The composition root behind the RPC methods: the core services one server uses.

Built once by `RpcServer` on the main thread. Services are created on first use (so
`initialize` stays cheap) under `_lock`; after that they are thread-safe themselves.
Handlers reach everything through `call.app`. Nothing here speaks JSON-RPC except the
`notify` callable the server passes in.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kward.config import ConfigStore, Paths, Settings


@dataclass
class ClientState:
    """What the client told us in `initialize`. Written by the dispatcher thread only."""

    info: dict[str, Any] | None = None
    opt_out: frozenset[str] = frozenset()
    experimental_api: bool = False
    initialized: bool = False


@dataclass
class App:
    paths: Paths
    config: ConfigStore
    settings: Settings
    launch_cwd: Path
    send_notification: Callable[[str, Any], None]
    request_stop: Callable[[], None]  # stop after the current response is queued
    is_overloaded: Callable[[], bool]
    client: ClientState = field(default_factory=ClientState)
    started_at: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _shutdown_hooks: list[Callable[[float], None]] = field(default_factory=list, repr=False)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification unless the client opted out of `method`. Any thread."""
        if method not in self.client.opt_out:
            self.send_notification(method, params)

    def on_shutdown(self, hook: Callable[[float], None]) -> None:
        """Register `hook(deadline)`: cancel work and close files before `deadline`
        (a time.monotonic() value). Hooks run in reverse order of registration."""
        with self._lock:
            self._shutdown_hooks.append(hook)

    def shutdown(self, deadline: float) -> None:
        """Main thread, once, at the end: run the shutdown hooks."""
        with self._lock:
            hooks = list(reversed(self._shutdown_hooks))
            self._shutdown_hooks.clear()
        for hook in hooks:
            try:
                hook(deadline)
            except Exception:
                import logging

                logging.getLogger(__name__).exception("shutdown hook failed")
