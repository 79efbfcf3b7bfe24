"""The warm-up: import what a session's first requests need, off their path.

`kward rpc` answers `initialize` and lists sessions without the agent, its tools, the
providers and `requests`. The first turn would then pay for importing them. Instead, once
the client was given a session (sessions/create, resume, clone or fork: a process that
will run turns) and has been quiet for `kward.rpc.server.IDLE_SECONDS` (a UI waiting for
its user), the server makes one `WarmUp` (importing this module) and starts its thread,
which imports them one at a time: the modules
`Runtime.warm_up_modules` names, then the handler modules of the method table served. It
only imports, then collects young garbage (it builds no service, takes no runtime lock,
reads no credential), so a request arriving meanwhile waits at most for a module the
warm-up is importing at that moment (the import system's per-module locks) and shares the interpreter with it until
that import ends: each message pauses the warm-up, which resumes only after
`IDLE_SECONDS` of quiet with no slow request in flight. A
module that fails to import here fails again, and is reported, where it is used.

`KWARD_NO_WARMUP` (any non-empty value) turns it off (`compose.build_server`).

Thread contract: `start`, `pause`, `waiting`, `stop` and `join` are called by the
dispatcher thread. The thread is not a daemon; it is started at most once, paused while
the server has work (a message arrived; a slow request is in flight), and when the server
stops it is told to stop (no further import begins) and joined.
"""

from __future__ import annotations

import gc
import logging
import threading
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.method_table import MethodTable
    from kward.runtime import Runtime

log = logging.getLogger(__name__)

WIRE_MODULE = "kward.rpc.wire.events"  # the payloads of turn events (the first turn's events)


class WarmUp:
    """One background run of the steps `steps()` returns (see the module docstring). The
    dispatcher pauses it when a message arrives and resumes it once the client is idle
    again: a step (one import) that has begun runs to its end, the next waits."""

    def __init__(self, steps: Callable[[], Iterable[Callable[[], object]]]):
        self._steps = steps
        self._go = threading.Event()  # set: the next step may begin
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def waiting(self) -> bool:
        """Not started yet, or paused before its end: the dispatcher resumes it when idle."""
        return not self._go.is_set() and not self._done.is_set() and not self._stop.is_set()

    def start(self) -> None:
        """Start the run, or resume it after `pause`."""
        if self._stop.is_set():
            return
        self._go.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kward-warm-up")
            self._thread.start()

    def pause(self) -> None:
        """No further step begins until `start` (the one running, an import, cannot be paused)."""
        self._go.clear()

    def stop(self) -> None:
        """No further step begins, ever."""
        self._stop.set()
        self._go.set()  # wakes a paused run, which then ends

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the run to end; True when it is not running."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(max(0.0, timeout))
        return not thread.is_alive()

    def _run(self) -> None:
        try:
            for step in self._steps():
                self._go.wait()
                if self._stop.is_set():
                    return
                try:
                    step()
                except Exception:  # never fatal: whatever failed fails again where it is used
                    log.debug("warm-up: %r failed", step, exc_info=True)
        except Exception:
            log.debug("warm-up failed", exc_info=True)
        finally:
            self._done.set()


def imports_for(methods: MethodTable, runtime: Runtime) -> Callable[[], list[Callable[[], object]]]:
    """The steps of a server's warm-up: import each module of `runtime.warm_up_modules()`
    (what the first turn needs), then `WIRE_MODULE`, then
    resolve every handler of `methods` (importing its module), then collect the garbage
    collector's young generations (`gc.collect(1)`)."""

    def steps() -> list[Callable[[], object]]:
        # __import__, as an import statement does (-X importtime shows it; import_module bypasses it)
        out: list[Callable[[], object]] = [partial(__import__, name) for name in runtime.warm_up_modules()]
        out.append(partial(__import__, WIRE_MODULE))
        # the imports leave hundreds of young objects: the collection they make due would
        # otherwise land in one of the first turns
        return out + [partial(methods.handler, name) for name in methods] + [partial(gc.collect, 1)]

    return steps
