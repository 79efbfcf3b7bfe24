"""Running untrusted-to-be-quick plugin code: bounded in time, isolated in failure.

`run_bounded(fn, args, timeout=..., what=...)` runs `fn(*args)` on a new daemon thread
and waits at most `timeout` seconds (less when `cancel` fires). It returns the value, or
raises `PluginFailed` (the function raised: the original exception is chained and logged
by the caller), `PluginTimeout` (it did not return in time) or `Canceled`. A thread that
timed out cannot be stopped in Python: it is abandoned and may keep running (a daemon, so
it never holds up the exit of the process); `Stuck` counts such threads per plugin, and
a plugin with `MAX_STUCK` of them still running is refused further calls at once, so a
plugin that always hangs cannot pile up threads without bound.

`freeze(value)` is the read-only deep copy plugins receive of transcript data and
events: dicts become `FrozenDict` (a dict that refuses changes, so `json.dumps` and
`dict(...)` still work), lists tuples; other values are JSON scalars and are shared.

Any thread; the caller's thread blocks in `run_bounded` for at most `timeout`.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable

from kward.cancel import CancelToken
from kward.errors import Canceled, PluginFailed, PluginTimeout

MAX_STUCK = 4


class Stuck:
    """How many abandoned (timed-out) calls of one plugin are still running. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.count += n


def run_bounded(fn: Callable[..., Any], args: tuple = (), *, timeout: float, what: str,
                data: dict[str, Any] | None = None, cancel: CancelToken | None = None,
                stuck: Stuck | None = None) -> Any:
    """`fn(*args)` on a daemon thread, waited for at most `timeout` s (see the module doc).
    `what` names the code in messages ("Plugin command /hi"); `data` goes into the errors."""
    data = dict(data or {})
    if stuck is not None and stuck.count >= MAX_STUCK:
        raise PluginTimeout(f"{what} was not run: {stuck.count} earlier calls of its plugin never returned",
                            data={**data, "stuckCalls": stuck.count})
    done = threading.Event()
    box: dict[str, Any] = {}
    state_lock = threading.Lock()
    abandoned = [False]

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt of plugin code too
            box["error"] = exc
        finally:
            with state_lock:
                finished_late = abandoned[0]
                box["done"] = True
            if finished_late and stuck is not None:
                stuck.add(-1)
            done.set()

    thread = threading.Thread(target=target, name=f"kward-plugin {what}"[:60], daemon=True)
    thread.start()
    forget = cancel.on_cancel(done.set) if cancel is not None else None
    try:
        done.wait(timeout)
    finally:
        if forget is not None:
            forget()
    with state_lock:
        if not box.get("done"):
            abandoned[0] = True
    if abandoned[0]:
        if stuck is not None:
            stuck.add(1)
        if cancel is not None and cancel.cancelled:
            raise Canceled("Canceled.")
        raise PluginTimeout(f"{what} did not finish within {timeout:g} s; it was abandoned (its thread may "
                            "still be running)", data={**data, "timeoutSeconds": timeout})
    if "error" in box:
        exc = box["error"]
        raise PluginFailed(f"{what} failed: {type(exc).__name__}: {exc}",
                           data={**data, "exception": type(exc).__name__}) from exc
    return box.get("value")


class FrozenDict(dict):
    """A dict that refuses every change (TypeError). Copies of it are plain dicts."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this is a read-only copy; make your own copy (dict(...)) to change it")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


def freeze(value: Any) -> Any:
    """A read-only deep copy of JSON-shaped data (see the module doc)."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value
