"""The sequenced event log of one turn (see `EventLog`).

Events of a turn (`kward.model.TurnEvent`: a type and its typed payload) get sequence
numbers from 1 with no gap and reach the sink in that order; the last EVENT_LIMIT are
kept for `turns/events` replay (`replay` says when events it is asked for were dropped). The faces convert them (the RPC face:
`kward.rpc.wire.events.turn_event`). Thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable, NamedTuple

from kward.limits import EVENT_REPLAY_LIMIT as EVENT_LIMIT
from kward.model import EventPayload, TurnEvent
from kward.timefmt import now_iso

#: Every `turn/event` type a turn emits (kward.agent.scheduler, .loop and .engine), roughly in
#: the order a turn shows them. docs/protocol.md documents each one; tests/packaging/test_docs.py
#: checks that every type emitted in the code is listed here and in the doc, and no other.
EVENT_TYPES = ("turnQueued", "turnStarted", "compactionStart", "compactionEnd", "reasoningDelta", "assistantDelta",
               "assistantMessage", "modelRetry", "toolCall", "approvalRequested", "approvalResolved", "toolUpdate",
               "toolResult", "turnSteered", "answer",
               "turnCancelRequested", "turnDiff", "error", "turnFinished")


class Replay(NamedTuple):
    """What the replay buffer holds after a sequence: the `events`, the first sequence it
    still holds (`first_sequence`: the next one to be emitted when it holds none) and
    whether events after the sequence asked for were dropped (`truncated`)."""

    events: list[TurnEvent]
    first_sequence: int
    truncated: bool


class EventLog:
    """The sequenced events of one turn; keeps the last EVENT_LIMIT for replay.

    `publish(event)` must not block (it queues the frame); pacing happens before the lock
    in `make_room()`, which blocks a streaming worker while the client is behind. So the
    lock is only ever held briefly: the dispatcher (turnQueued, turnCancelRequested,
    `after`) never waits for a client that stopped reading."""

    def __init__(self, turn_id: str, session_id: str, publish: Callable[[TurnEvent], None],
                 make_room: Callable[[], None]):
        self._turn_id = turn_id
        self._session_id = session_id
        self._publish = publish
        self._make_room = make_room
        self._lock = threading.Lock()  # sequence order = publish order
        self._recent_lock = threading.Lock()  # the replay buffer alone
        self._next = 1
        self._finished = False
        self._recent: deque[TurnEvent] = deque(maxlen=EVENT_LIMIT)

    def emit(self, type_: str, payload: EventPayload, *, wait: bool = True) -> TurnEvent | None:
        """Sequence and publish one event; None (nothing sent) once turnFinished was emitted,
        so a late event (a cancel request racing the end of the turn) never follows it.
        `wait=False` for the dispatcher thread: never paced."""
        if wait:
            self._make_room()
        with self._lock:
            if self._finished:
                return None
            self._finished = type_ == "turnFinished"
            event = TurnEvent(self._next, now_iso(), self._session_id, self._turn_id, type_, payload)
            self._next += 1
            with self._recent_lock:
                self._recent.append(event)
            self._publish(event)
            return event

    @property
    def last_sequence(self) -> int:
        """The sequence of the last event emitted (0: none yet). Any thread."""
        return self._next - 1

    def after(self, sequence: int) -> list[TurnEvent]:
        return self.replay(sequence).events

    def replay(self, sequence: int) -> Replay:
        """The kept events after `sequence` (see `Replay`). Any thread."""
        with self._recent_lock:
            recent = self._recent
            first = recent[0].sequence if recent else self._next  # (an int, read whole without `_lock`)
            return Replay([e for e in recent if e.sequence > sequence], first, first > sequence + 1)
