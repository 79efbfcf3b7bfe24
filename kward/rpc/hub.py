"""Several clients on one runtime (`kward rpc --listen`): which connection hears what.

The runtime of a listening server is built with the hub's callables where a stdio server
passes its one connection's (`publish_turn_event`, `report`, `make_room`, `admit`,
`wants_event`, and `HubApprover` as the approver). Routing:

- a connection is attached to a session (an RPC session id) when a request of it opened
  the session (sessions/create, resume, clone, fork), started a turn on it, or attached
  to it (`sessions/attach`); `sessions/detach` and the connection's end undo that. A
  session stays attachable by its id after every connection left it;
- turn events, session events, hook notices and questions (`ui/question`) of a session go
  to the connections attached to it; a question goes to the connection that started the
  turn when it is attached, else to every attached one, and is sent again to a connection
  that attaches while it waits; approval requests likewise (`HubApprover`: one connection
  at a time; when that one goes away the request is sent to another attached one, or to
  the next that attaches, until its timeout);
- capability changes and login results go to every connection;
- responses go only to the connection that asked (each connection's server answers its
  own requests).

Backpressure per connection: a turn paces itself by the connections attached to its
session (`make_room_for`: it waits while one holds more than 16 MiB unsent, at most
`STALL_SECONDS`, then drops it: its output is discarded and its server stopped), `admit`
refuses a turn (`Overloaded`, -32001) to a connection whose unsent output is past the
high-water mark, and one with more than `DROP_BYTES` unsent is dropped at once; so a
client that stopped reading never stalls the turns of other sessions, and those of its
own for at most a few seconds.

Thread contract: any thread. `_lock` guards the connection table, the attachments and the
turn owners; it is never held while sending. `current` (thread-local) is the connection
whose request the thread is running (set by the connection's server).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from kward.errors import Overloaded

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.approval import ApprovalRequest, Decision
    from kward.cancel import CancelToken
    from kward.model import TurnEvent
    from kward.rpc.connection import Connection
    from kward.runtime.notices import Notice

log = logging.getLogger(__name__)

DROP_BYTES = 32 << 20  # unsent output past which a connection is dropped at once (twice the outbox's limit)
STALL_SECONDS = 5.0  # how long a turn waits for a connection 16 MiB behind before dropping it
OPENS = frozenset({"sessions/create", "sessions/resume", "sessions/clone", "sessions/fork"})
FINISHED_KEPT = 1024


class _Entry:
    __slots__ = ("stop", "sessions", "turns")

    def __init__(self, stop: Callable[[], None]):
        self.stop = stop  # ends the connection's server (from any thread)
        self.sessions: set[str] = set()
        self.turns: set[str] = set()  # turns it started that may still run


class Hub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attached = threading.Condition(self._lock)  # a connection attached somewhere
        self._conns: dict[Connection, _Entry] = {}
        self._sessions: dict[str, set[Connection]] = {}
        self._owners: dict[str, tuple[Connection, str]] = {}  # turn id -> (who started it, its session id)
        self._finished: dict[str, None] = {}  # turns that ended before their owner was known (bounded, oldest first)
        self._attaches = 0  # attaches so far (a waiting approval sees one that came between its looks)
        self.local = threading.local()
        # the runtime's pending questions of a session (set once the runtime is built)
        self.pending_questions: Callable[[str], list[tuple[str, list[dict[str, Any]]]]] = lambda _sid: []

    # --- the table ------------------------------------------------------------------

    def add(self, conn: Connection, stop: Callable[[], None]) -> None:
        with self._lock:
            self._conns[conn] = _Entry(stop)

    def remove(self, conn: Connection) -> set[str]:
        """`conn` ended: forget it; the turns it started that may still run. The questions
        its turns asked go to the connections still attached to their sessions."""
        owned: set[str] = set()
        with self._lock:
            entry = self._conns.pop(conn, None)
            if entry is None:
                return set()
            for sid in entry.sessions:
                self._unroute(sid, conn)
            for turn_id in entry.turns:
                found = self._owners.get(turn_id)
                if found is not None and found[0] is conn:
                    del self._owners[turn_id]
                    owned.add(found[1])
            left = {sid: list(self._sessions.get(sid, ())) for sid in owned}
        for sid, targets in left.items():
            for request_id, questions in self.pending_questions(sid):
                for other in targets:
                    other.notify("ui/question", {"sessionId": sid, "questionRequestId": request_id,
                                                 "questions": questions}, wait=False)
        return set(entry.turns)

    def count(self) -> int:
        with self._lock:
            return len(self._conns)

    def connections(self) -> list[Connection]:
        with self._lock:
            return list(self._conns)

    def attach(self, conn: Connection, session_id: str) -> None:
        """Route `session_id`'s notifications to `conn` too; the questions waiting there
        are sent to it at once."""
        with self._lock:
            entry = self._conns.get(conn)
            if entry is None:
                return
            fresh = session_id not in entry.sessions
            entry.sessions.add(session_id)
            self._sessions.setdefault(session_id, set()).add(conn)
            self._attaches += 1
            self._attached.notify_all()
        if fresh:
            for request_id, questions in self.pending_questions(session_id):
                conn.notify("ui/question", {"sessionId": session_id, "questionRequestId": request_id,
                                            "questions": questions}, wait=False)

    def detach(self, conn: Connection, session_id: str) -> bool:
        """Stop routing `session_id` to `conn`; False when it was not attached."""
        with self._lock:
            entry = self._conns.get(conn)
            if entry is None or session_id not in entry.sessions:
                return False
            entry.sessions.discard(session_id)
            self._unroute(session_id, conn)
            return True

    def _unroute(self, session_id: str, conn: Connection) -> None:
        """Under `_lock`: `conn` no longer hears `session_id` (an empty entry goes)."""
        attached = self._sessions.get(session_id)
        if attached is not None:
            attached.discard(conn)
            if not attached:
                del self._sessions[session_id]

    def attached(self, session_id: str) -> list[Connection]:
        with self._lock:
            return list(self._sessions.get(session_id, ()))

    def answered(self, conn: Connection, method: str, params: Any, result: Any) -> None:
        """A request of `conn` (`params`) succeeded with `result`: a session it opened or a
        turn it started attaches it (and makes it the turn's owner); a session closed or
        deleted is routed to nobody any more."""
        if not isinstance(result, dict):
            return
        opened = result.get("session") if method == "sessions/fork" else result  # (fork: {session, text, ...})
        if method in OPENS and isinstance(opened, dict) and isinstance(opened.get("id"), str):
            self.attach(conn, opened["id"])
        elif method in ("sessions/close", "sessions/delete") and isinstance(params, dict) \
                and isinstance(params.get("sessionId"), str):
            self.forget_session(params["sessionId"])
        elif method == "turns/start" and isinstance(result.get("sessionId"), str) and isinstance(result.get("id"), str):
            self.attach(conn, result["sessionId"])
            turn_id = result["id"]
            with self._lock:
                entry = self._conns.get(conn)
                # (a steer answers with the running turn: its owner stays who started it; a
                # turn that ended before this answer was handled gets none)
                if entry is not None and turn_id not in self._owners and turn_id not in self._finished:
                    entry.turns.add(turn_id)
                    self._owners[turn_id] = (conn, result["sessionId"])

    def forget_session(self, session_id: str) -> None:
        """The RPC id `session_id` is gone (closed or deleted): nobody hears it any more."""
        with self._lock:
            for conn in self._sessions.pop(session_id, ()):
                entry = self._conns.get(conn)
                if entry is not None:
                    entry.sessions.discard(session_id)

    def forget_turn(self, turn_id: str) -> None:
        """A turn ended: it has no owner any more."""
        with self._lock:
            found = self._owners.pop(turn_id, None)
            if found is None:
                self._finished[turn_id] = None
                while len(self._finished) > FINISHED_KEPT:
                    del self._finished[next(iter(self._finished))]
            elif found[0] in self._conns:
                self._conns[found[0]].turns.discard(turn_id)

    # --- what the runtime is built with ---------------------------------------------

    def _deliver(self, targets: Iterable[Connection], send: Callable[[Connection], None]) -> None:
        for conn in targets:
            try:
                send(conn)
            except Exception:  # one connection's failure is never the others'
                log.exception("sending to a connection failed")
            self._check(conn)

    def _check(self, conn: Connection) -> None:
        """Drop `conn` when its unsent output passed DROP_BYTES (the hard cap: the paced
        path, `make_room_for`, keeps it near the outbox's limit)."""
        if conn.outbox.pending_bytes > DROP_BYTES:
            self._drop(conn, "a client stopped reading (%d bytes unsent): its connection is dropped",
                       conn.outbox.pending_bytes)

    def _drop(self, conn: Connection, message: str, *args: object) -> None:
        with self._lock:
            entry = self._conns.get(conn)
        if entry is not None:
            log.warning(message, *args)
            conn.outbox.kill()
            entry.stop()

    def publish_turn_event(self, event: TurnEvent) -> None:
        self._deliver(self.attached(event.session_id), lambda conn: conn.publish_turn_event(event))
        if event.type == "turnFinished":
            self.forget_turn(event.turn_id)

    def report(self, notice: Notice) -> None:
        from kward.runtime.notices import LoginFinished, QuestionAsked, RuntimeChanged

        if isinstance(notice, (RuntimeChanged, LoginFinished)):
            self._deliver(self.connections(), lambda conn: conn.report(notice))
            return
        session_id = getattr(notice, "session_id", None)
        if not isinstance(session_id, str):
            return
        targets = self.attached(session_id)
        if isinstance(notice, QuestionAsked):
            owner = self._question_owner(session_id, targets)
            if owner is not None:
                targets = [owner]
        self._deliver(targets, lambda conn: conn.report(notice))

    def _question_owner(self, session_id: str, attached: list[Connection]) -> Connection | None:
        """The connection that started a running turn of `session_id`, when attached."""
        with self._lock:
            owners = {conn for conn, sid in self._owners.values() if sid == session_id}
        return next((c for c in attached if c in owners), None)

    def make_room(self) -> None:
        """(Turns pace by their session: `make_room_for`.)"""

    def make_room_for(self, session_id: str) -> None:
        """A turn of `session_id` paces itself before an event (its streaming worker): it
        waits while a connection attached to that session holds more than its outbox's limit
        (16 MiB) unsent, at most `STALL_SECONDS` per connection; one still that far behind
        then is dropped. Turns of other sessions never wait for it. Inside
        `kward.pacing.bounded` the wait also ends at the bound's deadline or cancel."""
        from kward import pacing

        bound = pacing.current()
        for conn in self.attached(session_id):
            until = time.monotonic() + STALL_SECONDS
            if bound is not None:
                if conn.outbox.wait_for_room(min(until, bound.deadline), bound.cancel):
                    continue
                if time.monotonic() < until:  # the bound's deadline or cancel came first
                    continue
            elif conn.outbox.wait_for_room(until):
                continue
            self._drop(conn, "a client stopped reading (%d bytes unsent for %g s): its connection is dropped",
                       conn.outbox.pending_bytes, STALL_SECONDS)

    def admit(self) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is not None and conn.outbox.overloaded:
            raise Overloaded("Server overloaded; retry later")

    def wants_event(self, type_: str) -> bool:
        return any(conn.wants("turn/event", type_) for conn in self.connections())

    # --- approvals ------------------------------------------------------------------

    def approver_for(self, session_id: str, turn_id: str, method: str) -> Connection | None:
        """Who is asked: the turn's owner when it is attached and answers `method`, else any
        attached connection that does."""
        with self._lock:
            attached = [c for c in self._sessions.get(session_id, ()) if method in c.server_requests]
            owner = self._owners.get(turn_id, (None, ""))[0]
        if owner in attached:
            return owner
        return attached[0] if attached else None

    def attaches(self) -> int:
        """How many attaches there were so far (for `wait_attached`)."""
        with self._lock:
            return self._attaches

    def wait_attached(self, seen: int, until: float, cancel: CancelToken) -> None:
        """Block until a connection attached since `attaches()` was `seen`, `until` passes or
        `cancel` fires."""
        forget = cancel.on_cancel(self._wake)
        try:
            with self._lock:
                while self._attaches == seen and not cancel.cancelled:
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    self._attached.wait(left)
        finally:
            forget()

    def _wake(self) -> None:
        with self._lock:
            self._attached.notify_all()


class HubApprover:
    """The approver of a listening server (`kward.agent.approval.Approver`): asks one
    attached connection at a time (see the module doc)."""

    def __init__(self, hub: Hub):
        self.hub = hub

    def available(self) -> bool:
        from kward.rpc.approvals import METHOD

        return any(METHOD in conn.server_requests for conn in self.hub.connections())

    def ask(self, request: ApprovalRequest, cancel: CancelToken, timeout: float,
            announce: Callable[[str], None]) -> Decision:
        from kward.rpc.approvals import METHOD, approval_params, decision_of
        from kward.rpc.server_requests import CLIENT_GONE, Reply

        until = time.monotonic() + timeout
        params = approval_params(request)
        announced = False

        def first_announce(request_id: str) -> None:
            nonlocal announced
            if not announced:
                announced = True
                announce(request_id)

        while True:
            left = until - time.monotonic()
            seen = self.hub.attaches()
            conn = self.hub.approver_for(request.session_id, request.turn_id, METHOD)
            if conn is None:
                if left <= 0 or cancel.cancelled:
                    return decision_of(Reply(CLIENT_GONE), timeout)
                self.hub.wait_attached(seen, until, cancel)
                continue
            reply = conn.requests.ask(METHOD, params, timeout=max(0.0, left), cancel=cancel, announce=first_announce)
            if reply.outcome == CLIENT_GONE and until - time.monotonic() > 0 and not cancel.cancelled:
                continue  # that client went away: the next attached one is asked
            return decision_of(reply, timeout)
