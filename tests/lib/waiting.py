"""The one poll-with-timeout of the tests, for conditions outside the protocol (a file, a
pid in /proc, a thread): what frames announce is waited on with `RpcClient.wait`."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition",
               interval: float = 0.01) -> Any:
    """Poll `predicate` until it returns something truthy (returned) or raise TimeoutError
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        pause.wait(interval)
