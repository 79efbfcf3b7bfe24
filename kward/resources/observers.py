"""Plugin transcript observers: each one's events delivered on its own thread.

A model turn's events (`OBSERVED`: reasoning_delta, assistant_delta, assistant_message,
model_retry, turn_steered, tool_call, tool_result, answer) are offered to every observer
as plain read-only data, the payload as the protocol shows it (the face's `EventFields`
converter): ``{"type": "<snake_case type>", "sessionId", "turnId"?, ...the event
payload}`` (frozen, `kward.resources.bounded.freeze`), with the session's `PluginContext`.
`Observer.offer` never blocks: the event goes on the observer's bounded queue
(`QUEUE_SIZE`), or is dropped (and counted, logged once) when the observer fell that far
behind. So an observer that raises (logged), blocks or is slow never stalls or breaks a
turn; it only misses events.

Threads: an `Observer` owns one daemon thread, started on the first offer. `stop()` puts
a stop mark on the queue (or, when it is full, sets the stop flag) and joins for a short
while; a thread stuck in plugin code is abandoned (it ends when the plugin returns). The
catalog that owns the observers stops them on reload and at shutdown (`stop_all`: all
together within `JOIN_SECONDS`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from kward.resources.bounded import FrozenDict, Json, freeze_dict

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.loop import Emit
    from kward.model import EventPayload
    from kward.resources.context import PluginContext

log = logging.getLogger(__name__)

QUEUE_SIZE = 1000
JOIN_SECONDS = 0.5
#: turn/event types plugins observe, and the names they see.
OBSERVED = {"reasoningDelta": "reasoning_delta", "assistantDelta": "assistant_delta",
            "assistantMessage": "assistant_message", "modelRetry": "model_retry", "turnSteered": "turn_steered",
            "toolCall": "tool_call", "toolResult": "tool_result", "answer": "answer"}
#: A plugin's transcript observer: ``fn(event, ctx)``; what it returns is ignored.
ObserverFn = Callable[[FrozenDict, "PluginContext"], object]
#: The fields of an event's payload as the protocol shows them: ``fields(type, payload)``.
EventFields = Callable[[str, "EventPayload"], Mapping[str, Json]]


class Observer:
    """One plugin function fed from a bounded queue on its own thread (module doc)."""

    def __init__(self, plugin: str, fn: ObserverFn, queue_size: int = QUEUE_SIZE):
        self.plugin = plugin
        self.fn = fn
        # (event, ctx) to deliver; None is the stop mark
        self._queue: queue.Queue[tuple[FrozenDict, PluginContext] | None] = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.dropped = 0
        self.failures = 0

    def offer(self, event: FrozenDict, ctx: PluginContext) -> None:
        """Queue one event (never blocks; dropped when the queue is full or stopped)."""
        with self._lock:
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"kward-observer {self.plugin}"[:60],
                                                daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait((event, ctx))
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("plugin %s: its transcript observer is behind; events are dropped", self.plugin)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._stopped:
                return
            event, ctx = item
            try:
                self.fn(event, ctx)
            except BaseException:  # the plugin's failure is logged, never the turn's
                self.failures += 1
                if self.failures <= 3:
                    log.warning("plugin %s: its transcript observer raised", self.plugin, exc_info=True)

    def stop(self, join: float = JOIN_SECONDS) -> None:
        """Stop delivering; wait up to `join` seconds for the thread to end."""
        with self._lock:
            self._stopped = True
            thread = self._thread
        if thread is None:
            return
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass  # the flag ends it after the current event
        if join > 0:
            thread.join(join)

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None and timeout > 0:
            thread.join(timeout)


def stop_all(watchers: Sequence[Observer], budget: float = JOIN_SECONDS) -> None:
    """Stop every observer, then wait for them together for at most `budget` seconds."""
    for observer in watchers:
        observer.stop(join=0)
    deadline = time.monotonic() + budget
    for observer in watchers:
        observer.join(deadline - time.monotonic())


def observing(emit: Emit, observers: Sequence[Observer], ctx: PluginContext, session_id: str | None,
              turn_id: str | None, fields: EventFields) -> Emit:
    """`emit` that also offers the observed events to `observers` (after emitting);
    `fields(type, payload)` gives the fields of an event's payload."""
    if not observers:
        return emit

    def wrapped(type_: str, payload: EventPayload) -> None:
        emit(type_, payload)
        name = OBSERVED.get(type_)
        if name is None:
            return
        event = freeze_dict({"sessionId": session_id, "turnId": turn_id, **fields(type_, payload), "type": name})
        for observer in observers:
            observer.offer(event, ctx)

    return wrapped
