"""Turn scheduling: FIFO per session, sessions in parallel, cancellation, event logs.

Each session has a lane: a queue of turns drained by one job on the worker pool, so a
session runs one turn at a time in arrival order while different sessions run in
parallel. While a lane has queued or running turns it holds the session's cross-process
turn lock (taken when the first turn is queued, so a session that another process is
running answers `session_busy` at once; released when the queue drains). A turn started
while the drain job is still releasing that lock waits for the release (an fsync and a
close) instead of failing on its own process's lock.

Events: every turn has an `EventLog` (kward.agent.eventlog); `emit` assigns the next sequence number and
publishes under the log's lock, so a turn's events reach the client in sequence order
with no gaps. Every turn starts with `turnQueued` and ends with exactly one
`turnFinished` (`completed`, `failed` or `canceled`); the log drops anything emitted after
it. A turn whose loop returned its answer is `completed`, even if a cancel request arrived
meanwhile. turnFinished of a turn that ran is announced after the session file was fsynced
and, when nothing else is queued, the turn lock released (see `_drain`). A turn canceled
while queued never runs: `turnQueued`, `turnCancelRequested`, `turnFinished {status:
canceled}`, without `turnStarted`. `steer` input that no running turn can take any more
(it is finishing, or the next one has not started) becomes a follow-up turn; on an idle
session it is refused.

Thread contract: `start`, `cancel`, `get` and the queries are called from the
dispatcher (any thread is fine); turns run on pool workers. `_lock` guards the turn table
and the lanes; it is never held while a turn runs or a lane releases its lock
(`_released`, a condition on `_lock`, signals the end of a release).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable

from kward.agent.eventlog import EventLog
from kward.agent.loop import now_iso
from kward.cancel import CancelToken
from kward.errors import Canceled, InvalidParams, KwardError, as_kward_error
from kward.steering import SteeringInbox, SteerInput

log = logging.getLogger(__name__)

TERMINAL = ("completed", "failed", "canceled")
BEHAVIORS = ("newTurn", "followUp", "steer")
KEEP_FINISHED_TURNS = 256


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

    def emit(self, type_: str, payload: dict[str, Any], *, wait: bool = True) -> None:
        self.events.emit(type_, payload, wait=wait)

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
    releasing: bool = False  # the drain job is releasing `turn_lock` (fsync, unlock)


def error_payload(exc: BaseException) -> dict[str, Any]:
    """A failed turn's `error`: converted like an RPC error (`errors.as_kward_error`), so an
    OSError says what the OS said about which path; `data` holds the error's extra fields."""
    err = as_kward_error(exc)
    if err is None:
        return {"message": f"Internal error: {type(exc).__name__}", "code": type(exc).__name__, "fatal": False,
                "reason": "internal_error"}
    out: dict[str, Any] = {"message": err.message, "code": type(err).__name__, "fatal": False, "reason": err.reason}
    if err.data:
        out["data"] = dict(err.data)
    return out


class TurnManager:
    """See the module docstring. `execute(turn, session)` runs the agent for one turn on a
    pool worker and returns when it is done (raising Canceled or an error)."""

    def __init__(self, *, submit: Callable[[Callable[[], None]], bool], publish: Callable[[dict[str, Any]], None],
                 make_room: Callable[[], None], execute: Callable[[Turn, Any], Any],
                 steering_supported: Callable[[], bool]):
        self._submit = submit
        self._publish = publish  # must not block: see EventLog
        self._make_room = make_room
        self._execute = execute
        self._steering_supported = steering_supported
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)  # a lane finished releasing its turn lock
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
            lane = self._lanes.get(session.id)
            if lane is None or lane.session is not session:
                lane = self._lanes[session.id] = _Lane(session)
            busy = bool(lane.queue or lane.running is not None or lane.releasing)
            while lane.releasing:  # the previous turn's lock is being let go (quick): taking a
                self._released.wait()  # second flock on the file now would fail as session_busy
            if self._closed:
                raise InvalidParams("The server is shutting down", reason="shutting_down")
            running = lane.running if lane.running is not None and lane.running.status == "running" else None
            if behavior is None:
                behavior = "steer" if (steer_ok and running is not None) else "newTurn"
            if behavior == "steer":
                if not steer_ok or not busy:
                    raise InvalidParams("Unsupported streamingBehavior: steer", data={"param": "streamingBehavior"})
                if running is not None and running.steering is not None and \
                        running.steering.submit(SteerInput(text, now_iso(), list(attachments))):
                    return running
                # no running turn takes input now (it is finishing, or the next one has not
                # started yet): the input becomes a follow-up turn instead
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
            turn.emit("turnCancelRequested", {}, wait=False)
            lane = self._lanes.get(turn.session_id)
            if lane is not None and turn in lane.queue:
                lane.queue.remove(turn)
                self._finish(turn, "canceled", wait=False)
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
        """The session's turn that is running now. A turn whose final status is settled is
        not running, even while its worker still syncs the file before turnFinished."""
        with self._lock:
            lane = self._lanes.get(session_id)
            turn = lane.running if lane else None
        return turn if turn is not None and turn.status == "running" else None

    def pending_count(self, session_id: str) -> int:
        with self._lock:
            lane = self._lanes.get(session_id)
            return len(lane.queue) if lane else 0

    def wait_idle(self, session_id: str, timeout: float) -> bool:
        """Wait until the session has no queued or running turn and its lock is released
        (after `cancel_session`, before the session is closed). True when idle in time."""
        def idle() -> bool:
            lane = self._lanes.get(session_id)
            return not (lane and (lane.queue or lane.running or lane.draining or lane.releasing))

        with self._lock:
            return self._released.wait_for(idle, timeout)

    # --- running ----------------------------------------------------------------------

    def _enqueue(self, lane: _Lane, text: str, attachments: list[dict[str, Any]],
                 headers: dict[str, str] | None = None) -> Turn:
        """Create a queued turn on `lane` and emit turnQueued. Caller holds `_lock`."""
        turn_id = str(uuid.uuid4())
        session_id = lane.session.id
        turn = Turn(id=turn_id, session_id=session_id, input=text, attachments=list(attachments),
                    created_at=now_iso(), events=EventLog(turn_id, session_id, self._publish, self._make_room),
                    headers=dict(headers or {}))
        self._remember(turn)
        lane.queue.append(turn)
        turn.emit("turnQueued", {"status": "queued"}, wait=False)
        return turn

    def _remember(self, turn: Turn) -> None:
        self._turns[turn.id] = turn
        if len(self._turns) > KEEP_FINISHED_TURNS:
            for old_id in [t for t, old in self._turns.items() if old.status in TERMINAL][: len(self._turns) - KEEP_FINISHED_TURNS]:
                del self._turns[old_id]

    def _drain(self, lane: _Lane) -> None:
        """The lane's job on the pool: run its turns one by one in queue order.

        After each turn the session file is fsynced and, when nothing else is queued, the
        turn lock is released (the lane is `releasing` meanwhile: new starts wait); only
        then is turnFinished announced. A client acting on turnFinished therefore finds the
        file complete and the session free, for this process and for others."""
        while True:
            with self._lock:
                turn = lane.queue.popleft() if lane.queue else None
                lane.running = turn
                stack = self._end_lane(lane) if turn is None else None
            if turn is None:  # only turns canceled before they ran were queued
                self._release(lane, stack)
                return
            settled = self._run(turn, lane.session)
            leftovers = turn.steering.close() if turn.steering else []
            with self._lock:
                lane.running = None
                if self._closed or turn.status == "canceled":
                    leftovers = []  # the user stopped this turn: its pending steer input goes with it
                for item in leftovers:  # steered input the turn never used: keep it as a follow-up
                    self._enqueue(lane, item.text, item.attachments, turn.headers)
                done = not lane.queue
                stack = self._end_lane(lane) if done else None
            if done:
                self._close_lock(lane, stack)
            if settled:
                self._announce(turn)
            if done:
                self._release(lane, None)
                return

    def _end_lane(self, lane: _Lane) -> contextlib.ExitStack | None:
        """The queue is empty: stop draining and hand back the turn lock to release.
        Caller holds `_lock`; it must call `_release` (which ends `releasing`)."""
        lane.draining = False
        lane.releasing = True
        stack, lane.turn_lock = lane.turn_lock, None
        return stack

    def _close_lock(self, lane: _Lane, stack: contextlib.ExitStack | None) -> None:
        if stack is None:
            return
        try:
            stack.close()  # fsync, release the cross-process lock
        except Exception:
            log.exception("releasing the turn lock of session %s failed", lane.session.id)

    def _release(self, lane: _Lane, stack: contextlib.ExitStack | None) -> None:
        try:
            self._close_lock(lane, stack)
        finally:
            with self._lock:
                lane.releasing = False
                self._released.notify_all()

    def _run(self, turn: Turn, session: Any) -> bool:
        """Run one turn on this worker and settle its final status (not announced yet);
        False when it had already finished (canceled while queued)."""
        with turn.lock:
            if turn.status in TERMINAL:
                return False
            if turn.cancel_requested:  # canceled between leaving the queue and starting: it never starts
                turn.status = "canceled"
                turn.finished_at = now_iso()
                return True
            turn.status = "running"
            turn.started_at = now_iso()
            if self._steering_supported():
                turn.steering = SteeringInbox()
        turn.emit("turnStarted", {"status": "running"})
        try:
            if turn.cancel_requested:
                raise Canceled("Canceled.")
            self._execute(turn, session)
            # the loop returned: the answer is out and persisted, so a cancel request that
            # arrived meanwhile came too late and the turn completed
            return self._settle(turn, "completed")
        except Canceled:
            return self._settle(turn, "canceled")
        except Exception as exc:
            if not isinstance(exc, KwardError):
                log.exception("turn %s failed", turn.id)
            if turn.cancel.cancelled:
                return self._settle(turn, "canceled")
            turn.error = error_payload(exc)
            turn.emit("error", turn.error)
            return self._settle(turn, "failed")
        finally:
            try:
                session.sync()
            except Exception:
                log.exception("fsync of session %s failed", session.id)

    def _settle(self, turn: Turn, status: str) -> bool:
        """Make `status` final; False when the turn already had a final status."""
        with turn.lock:
            if turn.status in TERMINAL:
                return False
            turn.status = status
            turn.finished_at = now_iso()
        return True

    def _announce(self, turn: Turn, *, wait: bool = True) -> None:
        payload: dict[str, Any] = {"status": turn.status}
        if turn.error is not None and turn.status == "failed":
            payload["error"] = turn.error
        turn.emit("turnFinished", payload, wait=wait)

    def _finish(self, turn: Turn, status: str, *, wait: bool = True) -> None:
        if self._settle(turn, status):
            self._announce(turn, wait=wait)

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
            self._finish(turn, "canceled", wait=False)
        for turn in running:
            turn.cancel_requested = True
            turn.cancel.cancel()
