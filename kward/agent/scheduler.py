"""Turn scheduling: FIFO per session, sessions in parallel, cancellation, event logs.

Each session file has a lane (`kward.agent.lanes.Lane`): its turns run one at a time in
arrival order, through whichever RPC id they were started, while different sessions run
in parallel; while turns are queued or running the lane holds the session's
cross-process turn lock (`session_busy` at once when another process runs the session).

Events: every turn has an `EventLog` (kward.agent.eventlog); `emit` assigns the next
sequence number and publishes the typed `kward.model.TurnEvent` under the log's lock, so
a turn's events reach the sink in sequence order with no gaps. Every turn starts with `turnQueued` and ends with exactly one
`turnFinished` (`completed`, `failed` or `canceled`); the log drops anything emitted after
it. A turn whose loop returned its answer is `completed`, even if a cancel request arrived
meanwhile, but only once the session file is fsynced and still the file at its path: a
turn whose file was deleted or replaced meanwhile fails (`session_file_gone`) instead of
reporting a completion nothing saved. turnFinished of a turn that ran is announced after
the session file was fsynced and, when nothing else is queued, the turn lock released
(see `_drain`). A turn canceled while queued never runs: `turnQueued`,
`turnCancelRequested`, `turnFinished {status: canceled}`, without `turnStarted`. `steer` input that no running turn can take any more
(it is finishing, or the next one has not started) becomes a follow-up turn; on an idle
session it is refused. Inputs never overtake each other: while a turn is queued, a steer
(explicit or by default) is not handed to the running turn but queued behind it as a
follow-up turn, and steered input a finished turn never used is queued ahead of the turns
queued after it.

Thread contract: `start`, `cancel`, `get` and the queries are called from the
dispatcher (any thread is fine); turns run on pool workers. `_lock` guards the turn table
and the lanes; it is never held while a turn runs or a lane releases its lock
(`_released`, a condition on `_lock`, signals the end of a release and every announced
turnFinished).

Exclusive work (`exclusive`: a compaction requested through `sessions/compact`) holds a
lane without a turn: it is refused (`turn_in_progress`) while a turn runs or is queued on
the file here, takes the cross-process turn lock like a turn (`session_busy` when another
process holds it), and turns started meanwhile queue behind it and run when it ends. It
shares the lock of a lane whose drain job has yet to run (its turns canceled while queued).

What a session must offer (`kward.sessions.handle.SessionHandle` does): `id` (the RPC id),
`shared` (the object behind every id on one file: the lane key, with `turn_lock()`) and
`sync()` (fsync; raises when the file is no longer at its path). `execute` gets the
session the turn was started through.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Callable, Iterator

from kward.agent.eventlog import EventLog
from kward.agent.lanes import Lane
from kward.agent.turn import TERMINAL, Turn, TurnStatus, turn_error
from kward.cancel import CancelToken
from kward.errors import Canceled, InvalidParams, KwardError, ShuttingDown, TurnInProgress
from kward.model import Finished, ImagePart, Status, TurnEvent
from kward.steering import SteeringInbox, SteerInput
from kward.timefmt import now_iso

if TYPE_CHECKING:  # pragma: no cover
    from kward.sessions.handle import SessionHandle
    from kward.sessions.session import OpenSession

__all__ = ["BEHAVIORS", "TERMINAL", "Turn", "TurnManager"]

log = logging.getLogger(__name__)

BEHAVIORS = ("newTurn", "followUp", "steer")
KEEP_FINISHED_TURNS = 256


class TurnManager:
    """See the module docstring. `execute(turn, session)` runs the agent for one turn on a
    pool worker and returns when it is done (raising Canceled or an error)."""

    def __init__(self, *, submit: Callable[[Callable[[], None]], bool], publish: Callable[[TurnEvent], None],
                 make_room: Callable[[], None], execute: Callable[[Turn, SessionHandle], object],
                 steering_supported: Callable[[], bool], make_room_for: Callable[[str], None] | None = None):
        self._submit = submit
        self._publish = publish  # must not block: see EventLog
        self._make_room = make_room
        self._make_room_for = make_room_for  # a face that paces per session (several clients): given the RPC id
        self._execute = execute
        self._steering_supported = steering_supported
        self._lock = threading.RLock()  # re-entered by _announce when a cancel finishes a queued turn
        self._released = threading.Condition(self._lock)  # a lane released its turn lock, or a turn was announced
        self._turns: OrderedDict[str, Turn] = OrderedDict()
        self._lanes: dict[OpenSession, Lane] = {}  # by session.shared
        self._closed = False

    # --- requests ---------------------------------------------------------------------

    def start(self, session: SessionHandle, text: str, attachments: list[ImagePart],
              behavior: str | None = None, headers: dict[str, str] | None = None,
              publish: Callable[[TurnEvent], None] | None = None, display: str | None = None) -> Turn:
        """Queue a turn (or steer the running one); returns the turn the input went to.
        `publish` receives the new turn's events (default: the manager's); steered input
        goes to the running turn, whose events keep going where they went. `display` is
        what the user typed when `text` is its expansion (kept on the new turn)."""
        if behavior is not None and behavior not in BEHAVIORS:
            raise InvalidParams(f"Unsupported streamingBehavior: {behavior}", data={"param": "streamingBehavior"})
        with self._lock:
            lane = self._lanes.get(session.shared)
            busy = lane is not None and lane.busy()
        # (asked only when it matters: it builds the engine and chooses the provider)
        steer_ok = (busy or behavior == "steer") and self._steering_supported()
        with self._lock:
            busy = self._lane(session).busy()
            lane = self._settled_lane(session)
            if self._closed:
                raise InvalidParams("The server is shutting down", reason="shutting_down")
            running = lane.running if lane.running is not None and lane.running.status == "running" else None
            if lane.queue:  # steering now would overtake the queued input: queue behind it instead
                running = None
            if behavior is None:
                behavior = "steer" if (steer_ok and running is not None) else "newTurn"
            if behavior == "steer":
                if not steer_ok or not busy:
                    raise InvalidParams("Unsupported streamingBehavior: steer", data={"param": "streamingBehavior"})
                if running is not None and running.steering is not None and \
                        running.steering.submit(SteerInput(text, now_iso(), list(attachments))):
                    return running  # else no running turn takes it now: it becomes a follow-up turn
            lane.take_lock()  # SessionBusy when another process runs it
            turn = self._enqueue(lane, session, text, attachments, headers or {}, publish)
            turn.display = display
            if not lane.draining and lane.held is None:  # held: drained when the exclusive work ends
                self._schedule(lane)
        return turn

    @contextlib.contextmanager
    def exclusive(self, session: SessionHandle, cancel: CancelToken) -> Iterator[None]:
        """Hold the session's lane for work that is not a turn (see the module docstring).
        `cancel` (a CancelToken) is cancelled by `shutdown`. Raises TurnInProgress,
        SessionBusy, or ShuttingDown (once `shutdown` ran)."""
        with self._lock:
            lane = self._settled_lane(session)
            try:
                if self._closed:
                    raise ShuttingDown("The server is shutting down")
                if lane.queue or lane.running is not None or lane.held is not None:
                    raise TurnInProgress("A turn is running or queued on this session; compact after it finished",
                                         data={"sessionId": session.id})
                lane.take_lock()  # SessionBusy when another process runs it; kept when a drain job holds it
            except BaseException:
                self._release(lane, None)  # drops the lane when it is idle
                raise
            lane.held = cancel
        try:
            yield
        finally:
            with self._lock:
                lane.held = None
                stack = None
                if not lane.draining:  # (else a drain job is still to run: it runs the queue, lets go of the lock)
                    if not (lane.queue and self._schedule(lane)):  # turns started meanwhile run now
                        stack = lane.end()
            if stack is not None:
                self._release(lane, stack)

    def compacting(self, session: SessionHandle) -> bool:
        """Whether exclusive work (a manual compaction) holds the session's lane, or the
        turn running on it compacts (an automatic compaction, `Turn.compacting`)."""
        with self._lock:
            lane = self._lanes.get(session.shared)
            if lane is None:
                return False
            return lane.held is not None or (lane.running is not None and lane.running.compacting)

    def cancel(self, turn_id: str) -> Turn:
        turn = self.get(turn_id)
        with self._lock:
            with turn.lock:
                if turn.status in TERMINAL:
                    return turn
                turn.cancel_requested = True
            turn.emit("turnCancelRequested", None, wait=False)
            lane = self._lanes.get(turn.session.shared)
            if lane is not None and turn in lane.queue:
                lane.queue.remove(turn)
                self._finish(turn, "canceled", wait=False)
                return turn
        turn.cancel.cancel()  # interrupts model requests, shell commands, questions
        return turn

    def cancel_session(self, session: SessionHandle) -> None:
        """Cancel every queued and running turn started through this RPC id (before it is
        closed); turns started through other ids on the same file go on."""
        with self._lock:
            lane = self._lanes.get(session.shared)
            turns = ([lane.running] if lane and lane.running else []) + (list(lane.queue) if lane else [])
        for turn in turns:
            if turn.session_id == session.id:
                self.cancel(turn.id)

    def get(self, turn_id: str) -> Turn:
        with self._lock:
            turn = self._turns.get(turn_id)
        if turn is None:
            raise InvalidParams(f"Unknown turn: {turn_id}", reason="turn_not_found", data={"turnId": turn_id})
        return turn

    def of_session(self, session_id: str) -> list[Turn]:
        """The kept turns started through the RPC id `session_id`, oldest first."""
        with self._lock:
            return [t for t in self._turns.values() if t.session_id == session_id]

    def active(self) -> int:
        """How many turns are queued or running now."""
        with self._lock:
            return sum(1 for t in self._turns.values() if t.status not in TERMINAL)

    def running_turn(self, session: SessionHandle) -> Turn | None:
        """The turn running now on the session's file (started through any of its ids). A
        turn whose final status is settled is not running, even while its worker still
        syncs the file before turnFinished."""
        with self._lock:
            lane = self._lanes.get(session.shared)
            turn = lane.running if lane else None
        return turn if turn is not None and turn.status == "running" else None

    def pending_count(self, session: SessionHandle) -> int:
        """Turns queued on the session's file (through any of its ids)."""
        with self._lock:
            lane = self._lanes.get(session.shared)
            return len(lane.queue) if lane else 0

    def wait_idle(self, session: SessionHandle, timeout: float) -> bool:
        """Wait until every turn started through this RPC id has announced turnFinished
        and, unless turns of other ids on the file go on, the lane released the turn lock
        (after `cancel_session`, before the id is closed). True when idle in time."""
        def idle() -> bool:
            if any(t.session_id == session.id and not t.announced for t in self._turns.values()):
                return False
            lane = self._lanes.get(session.shared)
            return lane is None or bool(lane.queue or lane.running) or not (lane.draining or lane.releasing)

        with self._lock:
            return self._released.wait_for(idle, timeout)

    # --- running ----------------------------------------------------------------------

    def _lane(self, session: SessionHandle) -> Lane:
        """The lane of the session's file, created when missing. Caller holds `_lock`."""
        lane = self._lanes.get(session.shared)
        if lane is None:
            lane = self._lanes[session.shared] = Lane(session.shared)
        return lane

    def _settled_lane(self, session: SessionHandle) -> Lane:
        """The session's lane once it is not letting go of its turn lock (quick: taking a
        second flock on the file meanwhile would fail as session_busy). Caller holds `_lock`."""
        lane = self._lane(session)
        while lane.releasing:
            self._released.wait()
            lane = self._lane(session)  # a released idle lane is dropped: take the new one
        return lane

    def _schedule(self, lane: Lane) -> bool:
        """Submit the lane's drain job; False when the pool refused it. Caller holds `_lock`."""
        lane.draining = True
        if not self._submit(lambda: self._drain(lane)):
            lane.draining = False
            return False
        return True

    def _enqueue(self, lane: Lane, session: SessionHandle, text: str, attachments: list[ImagePart],
                 headers: dict[str, str] | None = None,
                 publish: Callable[[TurnEvent], None] | None = None, at: int | None = None) -> Turn:
        """Create a queued turn of `session` on `lane` (at the end of its queue, or at index
        `at`) and emit turnQueued. Caller holds `_lock`."""
        turn_id = str(uuid.uuid4())
        session_id = session.id
        publish = publish or self._publish
        turn = Turn(id=turn_id, session_id=session_id, input=text, attachments=list(attachments),
                    created_at=now_iso(), events=EventLog(turn_id, session_id, publish, self._room(session_id)),
                    headers=dict(headers or {}), session=session, publish=publish)
        self._remember(turn)
        if at is None:
            lane.queue.append(turn)
        else:
            lane.queue.insert(at, turn)
        turn.emit("turnQueued", Status("queued"), wait=False)
        return turn

    def _room(self, session_id: str) -> Callable[[], None]:
        """The pacing point of a turn of `session_id`."""
        make_room_for = self._make_room_for
        if make_room_for is None:
            return self._make_room
        return lambda: make_room_for(session_id)

    def _remember(self, turn: Turn) -> None:
        """Keep `turn`; forget the oldest finished turns beyond KEEP_FINISHED_TURNS."""
        self._turns[turn.id] = turn
        excess = len(self._turns) - KEEP_FINISHED_TURNS
        if excess > 0:  # in start order: the oldest finished ones come first, stop after them
            finished = (t for t, old in self._turns.items() if old.status in TERMINAL)
            for old_id in list(itertools.islice(finished, excess)):
                del self._turns[old_id]

    def _drain(self, lane: Lane) -> None:
        """The lane's job on the pool: run its turns one by one in queue order.

        After each turn the session file is fsynced and, when nothing else is queued, the
        turn lock is released (the lane is `releasing` meanwhile: new starts wait); only
        then is turnFinished announced. A client acting on turnFinished therefore finds the
        file complete and the session free, for this process and for others."""
        while True:
            with self._lock:
                if lane.held is not None:  # exclusive work took the lane first: it schedules the queue
                    lane.draining = False
                    return
                turn = lane.queue.popleft() if lane.queue else None
                lane.running = turn
                stack = lane.end() if turn is None else None
            if turn is None:  # only turns canceled before they ran were queued
                self._release(lane, stack)
                return
            settled = self._run(turn)
            leftovers = turn.steering.close() if turn.steering else []
            with self._lock:
                lane.running = None
                if self._closed or turn.status == "canceled":
                    leftovers = []  # the user stopped this turn: its pending steer input goes with it
                for at, item in enumerate(leftovers):  # steered input the turn never used: a follow-up
                    # ahead of the turns queued after it was given
                    self._enqueue(lane, turn.session, item.text, item.attachments, turn.headers, turn.publish, at=at)
                done = not lane.queue
                stack = lane.end() if done else None
            if done:
                lane.close_lock(stack)
            if settled:
                self._announce(turn)
            if done:
                self._release(lane, None)
                return

    def _release(self, lane: Lane, stack: contextlib.ExitStack | None) -> None:
        """Close the turn lock `lane.end` handed back (without `_lock`), end `releasing`
        and drop the lane when it is idle."""
        try:
            lane.close_lock(stack)
        finally:
            with self._lock:
                lane.releasing = False
                if self._lanes.get(lane.shared) is lane and lane.idle():
                    del self._lanes[lane.shared]  # idle: a later start makes a new one
                self._released.notify_all()

    def _run(self, turn: Turn) -> bool:
        """Run one turn on this worker and settle its final status (not announced yet);
        False when it had already finished (canceled while queued)."""
        session = turn.session
        steering = self._steering_supported()  # (before turn.lock: the first call builds the engine)
        with turn.lock:
            if turn.status in TERMINAL:
                return False
            if turn.cancel_requested:  # canceled between leaving the queue and starting: it never starts
                turn.status = "canceled"
                turn.finished_at = now_iso()
                return True
            turn.status = "running"
            turn.started_at = now_iso()
            if steering:
                turn.steering = SteeringInbox()
        turn.emit("turnStarted", Status("running"))
        sync_tried = False
        try:
            if turn.cancel_requested:
                raise Canceled("Canceled.")
            self._execute(turn, session)
            # the loop returned: the answer is out and persisted, so a cancel request that
            # arrived meanwhile came too late and the turn completed, once the file is
            # durable and still the one at its path (SessionFileGone otherwise)
            sync_tried = True
            session.sync()
            return self._settle(turn, "completed")
        except Canceled:
            return self._settle(turn, "canceled")
        except Exception as exc:
            if not isinstance(exc, KwardError):
                log.exception("turn %s failed", turn.id)
            if turn.cancel.cancelled:
                return self._settle(turn, "canceled")
            turn.error = turn_error(exc)
            turn.emit("error", turn.error)
            return self._settle(turn, "failed")
        finally:
            if not sync_tried:
                try:
                    session.sync()
                except KwardError as exc:  # e.g. the file is gone: the turn already failed on it
                    log.warning("fsync of session %s: %s", turn.session_id, exc.message)
                except Exception:
                    log.exception("fsync of session %s failed", turn.session_id)

    def _settle(self, turn: Turn, status: TurnStatus) -> bool:
        """Make `status` final; False when the turn already had a final status."""
        with turn.lock:
            if turn.status in TERMINAL:
                return False
            turn.status = status
            turn.finished_at = now_iso()
        return True

    def _announce(self, turn: Turn, *, wait: bool = True) -> None:
        error = turn.error if turn.status == "failed" else None
        turn.emit("turnFinished", Finished(turn.status, error), wait=wait)
        with self._lock:
            turn.announced = True
            self._released.notify_all()

    def _finish(self, turn: Turn, status: TurnStatus, *, wait: bool = True) -> None:
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
            held = [lane.held for lane in lanes if lane.held is not None]
        for token in held:
            token.cancel()
        for turn in queued:
            turn.cancel_requested = True
            self._finish(turn, "canceled", wait=False)
        for turn in running:
            turn.cancel_requested = True
            turn.cancel.cancel()
