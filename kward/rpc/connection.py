"""The server's side of its one client: the outgoing message path, what the client said in
`initialize`, and the stop `shutdown` asks for.

Outgoing messages (responses, errors, notifications) are redacted and encoded on the
producing thread, then queued on the transport's outbox (docs/protocol.md "Redaction";
`kward.rpc.redaction` for the policies, `kward.config.secrets` for the known credential
values). The runtime reports through the callables built here: `publish_turn_event` (its
event sink: `turn/event`), `report` (its notices: `ui/question`), `make_room` and
`admit` (the outbox's backpressure). `report` turns notices into `ui/question`,
`auth/loginFinished`, `hook/started` and `hook/completed`, `session/event` (never waiting: a session's change is reported under
its lock) and, for a `RuntimeChanged`, `runtime/capabilitiesChanged` when the capabilities
differ from the ones last answered or sent (in the responses' lane: before the answer of
the request that changed them).

Capabilities (beyond the original): `initialize` tells `capabilities_answered` what it
answered, once the answer is queued; from then on each RuntimeChanged builds them again
(`describe_capabilities`, set by `kward.rpc.compose`) and sends the whole object when it
differs. `_caps_lock` guards the last object and the count of RuntimeChanged notices, and
is held while building and sending, so notifications follow the changes in order.

Server requests (`requests`, `kward.rpc.server_requests`): sent to the client in the
notifications' lane; `server_requests` is what the client said it answers, `experimental` whether it takes the
experimental parts of the protocol (`kward.rpc.experimental`: never sent otherwise).

Thread contract: `send`, `notify` and the runtime callables may be called from any
thread; `client` and `server_requests` are written by the dispatcher thread only (in
`initialize`) and read anywhere; `stop_requested` is set by a quick handler on the dispatcher and read by it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from kward.config.secrets import KnownSecrets
from kward.errors import Overloaded
from kward.rpc import experimental, protocol, redaction
from kward.rpc.framing import encode_frame
from kward.rpc.server_requests import ServerRequests
from kward.rpc.transport import Outbox

if TYPE_CHECKING:  # pragma: no cover
    from kward.model import TurnEvent
    from kward.rpc.hub import Hub
    from kward.runtime.notices import Notice

log = logging.getLogger(__name__)


class _OptOut(NamedTuple):
    """`optOutNotificationMethods` split once: whole methods, and per method the types."""

    entries: frozenset[str]
    methods: frozenset[str]
    types: dict[str, frozenset[str]]

    @classmethod
    def of(cls, entries: frozenset[str]) -> _OptOut:
        types: dict[str, set[str]] = {}
        for entry in entries:
            method, colon, type_ = entry.partition(":")
            if colon:
                types.setdefault(method, set()).add(type_)
        return cls(entries, frozenset(e for e in entries if ":" not in e),
                   {method: frozenset(names) for method, names in types.items()})


class Connection:
    def __init__(self, outbox: Outbox, secrets: KnownSecrets):
        self.outbox = outbox
        self.secrets = secrets
        self._opted = _OptOut.of(frozenset())  # what the client opted out of (`opt_out`, `wants`)
        self.stop_requested = False
        # builds the capabilities now (kward.rpc.compose sets it; None: never sent again)
        self.describe_capabilities: Callable[[], dict[str, Any]] | None = None
        self._caps_lock = threading.Lock()
        self._capabilities: dict[str, Any] | None = None  # last answered or sent; None before initialize
        self._changes = 0  # RuntimeChanged notices so far
        # server-to-client requests (kward.rpc.server_requests), and the methods of them the
        # client said in initialize it answers (`capabilities.serverRequests`)
        self.requests = ServerRequests(self._send_request, self._notify_now)
        self.server_requests: frozenset[str] = frozenset()
        # what initialize said: send and serve experimental parts (kward.rpc.experimental)
        self.experimental = False
        # a listening server's: its hub (kward.rpc.hub; None on stdio), and what becomes of
        # the turns this client started when it goes away (initialize's closeBehavior)
        self.hub: Hub | None = None
        self.close_behavior = "keepTurns"
        # False (a listening server's): nothing sent to this client ever waits for room; the
        # hub paces turns and drops a client too far behind, so one never stalls another
        self.paced = True

    def send(self, message: dict[str, Any], *, urgent: bool, raw: bool = False, wait: bool = True,
             policy: str = redaction.FULL) -> None:
        """Redact, encode and queue one message. The rules of `policy` apply (an error
        response is always redacted in full), then every known secret value is replaced in
        whatever is left. `raw` (`config/read` with `redacted: false`) skips both."""
        if raw:
            data = protocol.encode(message)
        else:
            message = redaction.apply(policy, message)
            data = protocol.encode(message)
            secrets = self.secrets.snapshot()
            if secrets.found_in(data):  # rare: walk the message, so no JSON escape is cut
                data = protocol.encode(secrets.scrub_value(message))
        self.outbox.put(encode_frame(data), urgent=urgent, wait=wait)

    def _send_request(self, message: dict[str, Any]) -> None:
        """A server request (conversation content: only known secret values are scrubbed),
        in the notifications' lane, so it follows the turn events queued before it."""
        self.send(message, urgent=False, wait=False, policy=redaction.CONTENT)

    def _notify_now(self, method: str, params: dict[str, Any]) -> None:
        """A notification that never waits for room (`serverRequest/resolved`)."""
        self.notify(method, params, wait=False)

    @property
    def opt_out(self) -> frozenset[str]:
        """The entries of `optOutNotificationMethods` the client sent in `initialize`:
        notification methods (``session/event``) and, beyond the original, one type of one
        (``turn/event:toolUpdate``). Set by `initialize` on the dispatcher (one assignment,
        so a reader on another thread sees the old entries or the new ones, never a mix)."""
        return self._opted.entries

    @opt_out.setter
    def opt_out(self, entries: frozenset[str]) -> None:
        self._opted = _OptOut.of(entries)

    def wants(self, method: str, type_: str | None = None) -> bool:
        """Whether the client takes `method` notifications (of `type_`, for the typed ones:
        ``turn/event``, ``session/event``): it opted out of neither the method nor
        ``method:type``. Any thread; called per event, so it only looks up what `opt_out`
        split once."""
        opted = self._opted
        if method in opted.methods:
            return False
        types = opted.types.get(method)
        return types is None or type_ is None or type_ not in types

    def notify(self, method: str, params: Any, *, wait: bool = True, type_: str | None = None,
               urgent: bool = False) -> None:
        """Send a notification unless the client opted out of it (`wants`). `wait=False`
        never blocks (the dispatcher, and callers that paced themselves). `urgent` puts it
        in the responses' lane (kept in order with them, ahead of queued notifications)."""
        if self.wants(method, type_):
            self.send(protocol.notification(method, params), urgent=urgent, wait=wait and self.paced,
                      policy=redaction.NOTIFICATIONS.get(method, redaction.FULL))

    # --- capabilities ------------------------------------------------------------------

    @property
    def runtime_changes(self) -> int:
        """How many RuntimeChanged notices were reported so far (`initialize` reads it
        before it builds its answer)."""
        with self._caps_lock:
            return self._changes

    def capabilities_answered(self, capabilities: dict[str, Any], changes: int) -> None:
        """`initialize` answered `capabilities`, built when `runtime_changes` was `changes`
        (called once the answer is queued). A change reported meanwhile is checked now."""
        with self._caps_lock:
            self._capabilities = capabilities
            if self._changes != changes:
                self._check_capabilities()

    def _runtime_changed(self) -> None:
        with self._caps_lock:
            self._changes += 1
            if self._capabilities is not None and self.wants("runtime/capabilitiesChanged"):
                self._check_capabilities()  # (never before initialize was answered)

    def _check_capabilities(self) -> None:
        """Under `_caps_lock`: send `runtime/capabilitiesChanged` when the capabilities now
        differ from the last ones. In the responses' lane, so it comes before the answer of
        the request that changed them; never waits (it may run under a login's lock)."""
        describe = self.describe_capabilities
        if describe is None:
            return
        try:
            capabilities = describe()
        except Exception:  # (never expected: built from what the runtime announces)
            log.exception("could not build the capabilities")
            return
        if capabilities != self._capabilities:
            self._capabilities = capabilities
            self.notify("runtime/capabilitiesChanged", {"capabilities": capabilities}, wait=False, urgent=True)

    def request_stop(self) -> None:
        """Stop serving once the current response is queued (`shutdown`)."""
        self.stop_requested = True

    # --- what the runtime is built with ---------------------------------------------

    def publish_turn_event(self, event: TurnEvent) -> None:
        """A turn's event (`kward.model.TurnEvent`) as a `turn/event` notification."""
        from kward.rpc.wire.events import (
            turn_event,  # loaded with the first turn, not at start-up
        )

        if self.wants("turn/event", event.type):  # (before the payload is shaped)
            self.notify("turn/event", turn_event(event), wait=False)  # paced before, by make_room

    def report(self, notice: Notice) -> None:
        """A runtime notice as its notification (a kind the protocol has none for: dropped)."""
        from kward.runtime.notices import (  # loaded before any notice
            LoginFinished,
            QuestionAsked,
            RuntimeChanged,
            SessionEvent,
        )

        if isinstance(notice, SessionEvent):  # a few per turn or request: never paced
            if self.wants("session/event", notice.type):
                from kward.rpc.wire.events import session_event

                self.notify("session/event", session_event(notice), type_=notice.type, wait=False)
        elif isinstance(notice, RuntimeChanged):
            self._runtime_changed()
        elif isinstance(notice, QuestionAsked):
            self.notify("ui/question", {"sessionId": notice.session_id, "questionRequestId": notice.request_id,
                                        "questions": notice.questions})
        elif isinstance(notice, LoginFinished):  # from a login's thread, also while stopping: never waits
            from kward.rpc.wire.auth import login

            self.notify("auth/loginFinished", login(notice.login), wait=False)
        else:
            from kward.agent.hookruns import STARTED, HookNotice  # (loaded by the hooks that sent it)

            if isinstance(notice, HookNotice):  # from the turn's thread: in order with its events
                from kward.rpc.wire.hooks import hook_notice

                params = hook_notice(notice)
                if notice.phase == STARTED:
                    self.notify("hook/started", params if self.experimental else experimental.strip("hook/started", params))
                else:
                    self.notify("hook/completed",
                                params if self.experimental else experimental.strip("hook/completed", params))

    def make_room(self) -> None:
        """The runtime's pacing point (a streaming worker, before it publishes an event;
        never the dispatcher): block while the outbox holds more than its limit, i.e. while
        the client is behind reading. Inside `kward.pacing.bounded` (a running shell
        command's pump, the wait for a plugin command) it returns at the bound's deadline or
        cancel even without room, so a client that stopped reading never keeps a command
        from being killed at its timeout or cancelled: the event then goes over the limit,
        and the bounded code, whose deadline or cancel is due, ends right after. (Chosen
        over dropping live updates while the client is behind: the backpressure still slows
        the command's output as before, and no update a client could have had is lost.)"""
        from kward import pacing  # loaded with the first turn, not at start-up

        bound = pacing.current()
        if bound is None:
            self.outbox.wait_for_room()
        else:
            self.outbox.wait_for_room(bound.deadline, bound.cancel)

    def admit(self) -> None:
        if self.outbox.overloaded:
            raise Overloaded("Server overloaded; retry later")
