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

While it waits, the caller's thread may do work of its own for the call: `poll()` is
called when the wait begins, whenever `wake` is set and when the time it returned (seconds;
None: no time) has passed; it publishes a command's progress (`kward.resources.context`,
`kward.tools.live.LiveOutput.poll`). No thread is started for it.

Any thread; the caller's thread blocks in `run_bounded` for at most `timeout` (plus what one
`poll` takes: a publish that waits for the client is bounded by the caller, `kward.pacing`).
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Generic, Mapping, NoReturn, TypeVar, Union

from kward.cancel import CancelToken
from kward.errors import Canceled, PluginFailed, PluginTimeout

MAX_STUCK = 4
_T = TypeVar("_T")
#: JSON-shaped data as kward hands it over (the session file's records, event payloads).
Json = Union[dict[str, "Json"], list["Json"], tuple["Json", ...], str, int, float, bool, None]
#: Its read-only copy (`freeze`).
Frozen = Union["FrozenDict", tuple["Frozen", ...], str, int, float, bool, None]


class Stuck:
    """How many abandoned (timed-out) calls of one plugin are still running. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.count += n


@dataclass
class _Outcome(Generic[_T]):
    """What the plugin's thread left, once `done`: its value (in `returned`) or its
    exception; `abandoned` once the caller stopped waiting for it. `done` and `abandoned`
    change under the caller's lock."""

    returned: list[_T] = field(default_factory=list)
    error: BaseException | None = None
    done: bool = False
    abandoned: bool = False


def run_bounded(fn: Callable[..., _T], args: tuple[object, ...] = (), *, timeout: float, what: str,
                data: Mapping[str, object] | None = None, cancel: CancelToken | None = None,
                stuck: Stuck | None = None, poll: Callable[[], float | None] | None = None,
                wake: threading.Event | None = None) -> _T:
    """`fn(*args)` on a daemon thread, waited for at most `timeout` s (see the module doc).
    `what` names the code in messages ("Plugin command /hi"); `data` goes into the errors;
    `poll` and `wake`: the caller's work while it waits."""
    data = dict(data or {})
    if stuck is not None and stuck.count >= MAX_STUCK:
        raise PluginTimeout(f"{what} was not run: {stuck.count} earlier calls of its plugin never returned",
                            data={**data, "stuckCalls": stuck.count})
    done = wake if wake is not None else threading.Event()  # set when it returned, on cancel, or by the caller
    outcome: _Outcome[_T] = _Outcome()
    state_lock = threading.Lock()

    def target() -> None:
        try:
            outcome.returned.append(fn(*args))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt of plugin code too
            outcome.error = exc
        finally:
            with state_lock:
                finished_late = outcome.abandoned
                outcome.done = True
            if finished_late and stuck is not None:
                stuck.add(-1)
            done.set()

    thread = threading.Thread(target=target, name=f"kward-plugin {what}"[:60], daemon=True)
    thread.start()
    forget = cancel.on_cancel(done.set) if cancel is not None else None
    try:
        _wait(outcome, done, time.monotonic() + timeout, cancel, poll)
    finally:
        if forget is not None:
            forget()
    with state_lock:
        if not outcome.done:
            outcome.abandoned = True
    if outcome.abandoned:
        if stuck is not None:
            stuck.add(1)
        if cancel is not None and cancel.cancelled:
            raise Canceled("Canceled.")
        raise PluginTimeout(f"{what} did not finish within {timeout:g} s; it was abandoned (its thread may "
                            "still be running)", data={**data, "timeoutSeconds": timeout})
    exc = outcome.error
    if exc is not None:
        raise PluginFailed(f"{what} failed: {type(exc).__name__}: {exc}",
                           data={**data, "exception": type(exc).__name__}) from exc
    return outcome.returned[0]


def _wait(outcome: _Outcome[_T], woken: threading.Event, deadline: float, cancel: CancelToken | None,
          poll: Callable[[], float | None] | None) -> None:
    """Wait until the call is done, cancelled or `deadline` passed, calling `poll` (see the
    module doc). `woken` is cleared before each `poll`, so a set that comes during or after
    it ends the next wait at once and nothing is missed."""
    while not outcome.done and not (cancel is not None and cancel.cancelled):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        due = poll() if poll is not None else None
        woken.wait(left if due is None else min(due, left))
        woken.clear()


class FrozenDict(dict[str, Frozen]):
    """A dict that refuses every change (TypeError). Copies of it are plain dicts."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("this is a read-only copy; make your own copy (dict(...)) to change it")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Frozen]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, object]) -> dict[str, object]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[type[dict[str, Frozen]], tuple[dict[str, Frozen]]]:
        return (dict, (dict(self),))


def freeze_dict(value: dict[str, Json]) -> FrozenDict:
    """A read-only deep copy of a JSON object (see the module doc)."""
    return FrozenDict({k: freeze(v) for k, v in value.items()})


def freeze(value: Json) -> Frozen:
    """A read-only deep copy of JSON-shaped data (see the module doc)."""
    if isinstance(value, dict):
        return freeze_dict(value)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value
