"""Turn scheduling: FIFO per session, sessions in parallel, cancellation, event logs.

Each session has a lane: a queue of turns drained by one job on the worker pool, so a
session runs one turn at a time in arrival order while different sessions run in
parallel. While a lane has queued or running turns it holds the session's cross-process
turn lock (taken when the first turn is queued, so a session that another process is
running answers `session_busy` at once; released when the queue drains).

Events: every turn has an `EventLog`; `emit` assigns the next sequence number and
publishes under the log's lock, so a turn's events reach the client in sequence order
with no gaps. Every turn starts with `turnQueued` and ends with exactly one
`turnFinished` (`completed`, `failed` or `canceled`).

Thread contract: `start`, `cancel`, `get` and `events_after` are called from the
dispatcher (any thread is fine); turns run on pool workers. `_lock` guards the turn table
and the lanes; it is never held while a turn runs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable

from kward.agent.loop import now_iso
from kward.cancel import CancelToken
from kward.errors import Canceled, InvalidParams, KwardError
from kward.steering import SteeringInbox, SteerInput

log = logging.getLogger(__name__)

TERMINAL = ("completed", "failed", "canceled")
BEHAVIORS = ("newTurn", "followUp", "steer")
EVENT_LIMIT = 1000
KEEP_FINISHED_TURNS = 256


class EventLog:
    """The sequenced events of one turn; keeps the last EVENT_LIMIT for replay."""

    def __init__(self, turn_id: str, session_id: str, publish: Callable[[dict[str, Any]], None]):
        self._turn_id = turn_id
        self._session_id = session_id
        self._publish = publish
        self._lock = threading.Lock()
        self._next = 1
        self._recent: deque[dict[str, Any]] = deque(maxlen=EVENT_LIMIT)

    def emit(self, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            event = {"sequence": self._next, "timestamp": now_iso(), "sessionId": self._session_id,
                     "turnId": self._turn_id, "type": type_, "payload": payload}
            self._next += 1
            self._recent.append(event)
            self._publish(event)
            return event

    def after(self, sequence: int) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self._recent if e["sequence"] > sequence]


@dataclass
class Turn:
    id: str
    session_id: str
    input: str
    attachments: list[dict[str, Any]]
    created_at: str
    events: EventLog
    status: str = "queued"
    started_at: str | None = None
    finished_at: str | None = None
    cancel_requested: bool = False
    error: dict[str, Any] | None = None
    cancel: CancelToken = field(default_factory=CancelToken)
    steering: SteeringInbox | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. traceparent for model requests
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def emit(self, type_: str, payload: dict[str, Any]) -> None:
        self.events.emit(type_, payload)

    def payload(self) -> dict[str, Any]:
        out = {"id": self.id, "sessionId": self.session_id, "status": self.status,
               "cancelRequested": self.cancel_requested, "createdAt": self.created_at,
               "startedAt": self.started_at, "finishedAt": self.finished_at, "error": self.error}
        return {k: v for k, v in out.items() if v is not None}


@dataclass
class _Lane:
    session: Any  # kward.sessions.OpenSession
    queue: deque[Turn] = field(default_factory=deque)
    running: Turn | None = None
    draining: bool = False
    turn_lock: contextlib.ExitStack | None = None


def error_payload(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, KwardError):
        out = {"message": exc.message, "code": type(exc).__name__, "fatal": False, "reason": exc.reason}
    else:
        out = {"message": f"Internal error: {type(exc).__name__}", "code": type(exc).__name__, "fatal": False,
               "reason": "internal_error"}
    return out


class TurnManager:
    """See the module docstring. `execute(turn, session)` runs the agent for one turn on a
    pool worker and returns when it is done (raising Canceled or an error)."""

    def __init__(self, *, submit: Callable[[Callable[[], None]], bool], publish: Callable[[dict[str, Any]], None],
                 execute: Callable[[Turn, Any], Any], steering_supported: Callable[[], bool]):
        self._submit = submit
        self._publish = publish
        self._execute = execute
        self._steering_supported = steering_supported
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, Turn] = OrderedDict()
        self._lanes: dict[str, _Lane] = {}
        self._closed = False

    # --- requests ---------------------------------------------------------------------

    def start(self, session: Any, text: str, attachments: list[dict[str, Any]],
              behavior: str | None = None, headers: dict[str, str] | None = None) -> Turn:
        """Queue a turn (or steer the running one); returns the turn the input went to."""
        if behavior is not None and behavior not in BEHAVIORS:
            raise InvalidParams(f"Unsupported streamingBehavior: {behavior}", data={"param": "streamingBehavior"})
        steer_ok = self._steering_supported()
        with self._lock:
            if self._closed:
                raise InvalidParams("The server is shutting down", reason="shutting_down")
            lane = self._lanes.get(session.id)
            if lane is None or lane.session is not session:
                lane = self._lanes[session.id] = _Lane(session)
            running = lane.running if lane.running is not None and lane.running.status == "running" else None
            if behavior is None:
                behavior = "steer" if (steer_ok and running is not None) else "newTurn"
            if behavior == "steer":
                if not steer_ok or running is None or running.steering is None:
                    raise InvalidParams("Unsupported streamingBehavior: steer", data={"param": "streamingBehavior"})
                if running.steering.submit(SteerInput(text, now_iso(), list(attachments))):
                    return running
                # the running turn is finishing: the input becomes a follow-up turn instead
            if lane.turn_lock is None:
                stack = contextlib.ExitStack()
                stack.enter_context(session.turn_lock())  # SessionBusy when another process runs it
                lane.turn_lock = stack
            turn = self._enqueue(lane, text, attachments, headers or {})
            if not lane.draining:
                lane.draining = True
                if not self._submit(lambda: self._drain(lane)):
                    lane.draining = False
        return turn

    def cancel(self, turn_id: str) -> Turn:
        turn = self.get(turn_id)
        with self._lock:
            with turn.lock:
                if turn.status in TERMINAL:
                    return turn
                turn.cancel_requested = True
            turn.emit("turnCancelRequested", {})
            lane = self._lanes.get(turn.session_id)
            if lane is not None and turn in lane.queue:
                lane.queue.remove(turn)
                self._finish(turn, "canceled")
                return turn
        turn.cancel.cancel()  # interrupts model requests, shell commands, questions
        return turn

    def cancel_session(self, session_id: str) -> None:
        """Cancel every queued and running turn of a session (before it is closed)."""
        with self._lock:
            lane = self._lanes.get(session_id)
            turns = ([lane.running] if lane and lane.running else []) + (list(lane.queue) if lane else [])
        for turn in turns:
            self.cancel(turn.id)

    def get(self, turn_id: str) -> Turn:
        with self._lock:
            turn = self._turns.get(turn_id)
        if turn is None:
            raise InvalidParams(f"Unknown turn: {turn_id}", reason="turn_not_found", data={"turnId": turn_id})
        return turn

    def running_turn(self, session_id: str) -> Turn | None:
        with self._lock:
            lane = self._lanes.get(session_id)
            return lane.running if lane else None

    def pending_count(self, session_id: str) -> int:
        with self._lock:
            lane = self._lanes.get(session_id)
            return len(lane.queue) if lane else 0

    def is_active(self, session_id: str) -> bool:
        with self._lock:
            lane = self._lanes.get(session_id)
            return bool(lane and (lane.queue or lane.running or lane.draining))

    # --- running ----------------------------------------------------------------------

    def _enqueue(self, lane: _Lane, text: str, attachments: list[dict[str, Any]],
                 headers: dict[str, str] | None = None) -> Turn:
        """Create a queued turn on `lane` and emit turnQueued. Caller holds `_lock`."""
        turn_id = str(uuid.uuid4())
        session_id = lane.session.id
        turn = Turn(id=turn_id, session_id=session_id, input=text, attachments=list(attachments),
                    created_at=now_iso(), events=EventLog(turn_id, session_id, self._publish),
                    headers=dict(headers or {}))
        self._remember(turn)
        lane.queue.append(turn)
        turn.emit("turnQueued", {"status": "queued"})
        return turn

    def _remember(self, turn: Turn) -> None:
        self._turns[turn.id] = turn
        if len(self._turns) > KEEP_FINISHED_TURNS:
            for old_id in [t for t, old in self._turns.items() if old.status in TERMINAL][: len(self._turns) - KEEP_FINISHED_TURNS]:
                del self._turns[old_id]

    def _drain(self, lane: _Lane) -> None:
        while True:
            with self._lock:
                if not lane.queue:
                    lane.draining = False
                    lane.running = None
                    stack, lane.turn_lock = lane.turn_lock, None
                    break
                turn = lane.queue.popleft()
                lane.running = turn
            self._run(turn, lane.session)
            leftovers = turn.steering.close() if turn.steering else []
            with self._lock:
                lane.running = None
                if self._closed or turn.status == "canceled":
                    leftovers = []  # the user stopped this turn: its pending steer input goes with it
                for item in leftovers:  # steered input the turn never used: keep it as a follow-up
                    self._enqueue(lane, item.text, item.attachments)
        if stack is not None:
            try:
                stack.close()  # fsync, release the cross-process lock
            except Exception:
                log.exception("releasing the turn lock of session %s failed", lane.session.id)

    def _run(self, turn: Turn, session: Any) -> None:
        with turn.lock:
            if turn.status in TERMINAL:
                return
            turn.status = "running"
            turn.started_at = now_iso()
            if self._steering_supported():
                turn.steering = SteeringInbox()
        turn.emit("turnStarted", {"status": "running"})
        try:
            if turn.cancel_requested:
                raise Canceled("Canceled.")
            self._execute(turn, session)
            self._finish(turn, "canceled" if turn.cancel.cancelled else "completed")
        except Canceled:
            self._finish(turn, "canceled")
        except Exception as exc:
            if not isinstance(exc, KwardError):
                log.exception("turn %s failed", turn.id)
            if turn.cancel.cancelled:
                self._finish(turn, "canceled")
                return
            turn.error = error_payload(exc)
            turn.emit("error", turn.error)
            self._finish(turn, "failed")
        finally:
            try:
                session.sync()
            except Exception:
                log.exception("fsync of session %s failed", session.id)

    def _finish(self, turn: Turn, status: str) -> None:
        with turn.lock:
            if turn.status in TERMINAL:
                return
            turn.status = status
            turn.finished_at = now_iso()
        payload: dict[str, Any] = {"status": status}
        if turn.error is not None and status == "failed":
            payload["error"] = turn.error
        turn.emit("turnFinished", payload)

    # --- shutdown ---------------------------------------------------------------------

    def shutdown(self) -> None:
        """Refuse new turns, finish queued ones as canceled and cancel running ones."""
        with self._lock:
            self._closed = True
            lanes = list(self._lanes.values())
            queued = [t for lane in lanes for t in lane.queue]
            for lane in lanes:
                lane.queue.clear()
            running = [lane.running for lane in lanes if lane.running is not None]
        for turn in queued:
            turn.cancel_requested = True
            self._finish(turn, "canceled")
        for turn in running:
            turn.cancel_requested = True
            turn.cancel.cancel()
