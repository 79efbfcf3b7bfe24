"""Requests the server sends to its client, and the client's answers routed back to them.

`ServerRequests.ask` sends one request (its id chosen here, ``srv-<n>``: strings no client
request of ours is answered with) and blocks its caller until the client answers it, the
timeout passes, `cancel` fires, or the client is gone (`close`); it returns a `Reply`
whose `outcome` says which (``answered``, ``timedOut``, ``canceled``, ``clientGone``).
A request that ended without an answer is followed by a `serverRequest/resolved
{id, outcome}` notification. `resolve` delivers a `protocol.Response` read from the
client: to its waiter, or, for an id nobody waits for (unknown, or answered late), to
the log only: a late answer changes nothing and is never answered.

Thread contract: `ask` on a worker (a turn's) thread; `resolve` and `close` on the
dispatcher (`close` also from the stop). `_cond` guards the table and `_closed`; it is
never held while sending.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, NamedTuple

from kward.cancel import CancelToken
from kward.rpc import protocol

log = logging.getLogger(__name__)

ANSWERED, TIMED_OUT, CANCELED, CLIENT_GONE = "answered", "timedOut", "canceled", "clientGone"

#: `send(message)`: queue one request on the client's output; `notify(method, params)`.
Send = Callable[[dict[str, Any]], None]
Notify = Callable[[str, dict[str, Any]], None]


class Reply(NamedTuple):
    """How a server request ended: `outcome`, and for an answer its `result` or `error`."""

    outcome: str
    result: Any = None
    error: Any = None


class _Waiter:
    """One pending request's answer slot (a plain class: `dataclasses` is not imported before
    `initialize` is answered, tests/packaging/test_startup.py)."""

    __slots__ = ("reply",)

    def __init__(self) -> None:
        self.reply: Reply | None = None


class ServerRequests:
    def __init__(self, send: Send, notify: Notify):
        self._send = send
        self.notify = notify
        self._cond = threading.Condition()
        self._pending: dict[str, _Waiter] = {}
        self._next = 0
        self._closed = False

    def ask(self, method: str, params: dict[str, Any], *, timeout: float, cancel: CancelToken,
            announce: Callable[[str], None] = lambda _id: None) -> Reply:
        """Send `method` and wait for its end (see the module docstring). `announce(id)`
        is called just before the request is queued. Never raises for the client's
        behaviour."""
        waiter = _Waiter()
        with self._cond:
            if self._closed:
                return Reply(CLIENT_GONE)
            self._next += 1
            request_id = f"srv-{self._next}"
            self._pending[request_id] = waiter

        def wake() -> None:
            with self._cond:
                self._cond.notify_all()

        unregister = cancel.on_cancel(wake)
        try:
            announce(request_id)
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            deadline = time.monotonic() + timeout
            with self._cond:
                reply = self._outcome(waiter, cancel, deadline)
                while reply is None:
                    self._cond.wait(max(0.0, deadline - time.monotonic()))
                    reply = self._outcome(waiter, cancel, deadline)
                self._pending.pop(request_id, None)
        finally:
            unregister()
            with self._cond:
                self._pending.pop(request_id, None)
        if reply.outcome != ANSWERED:
            log.info("server request %s (%s) ended without an answer: %s", request_id, method, reply.outcome)
            self.notify("serverRequest/resolved", {"id": request_id, "outcome": reply.outcome})
        return reply

    def _outcome(self, waiter: _Waiter, cancel: CancelToken, deadline: float) -> Reply | None:
        """Under `_cond`: how the wait ended, None while it goes on."""
        if waiter.reply is not None:
            return waiter.reply
        if self._closed:
            return Reply(CLIENT_GONE)
        if cancel.cancelled:
            return Reply(CANCELED)
        if time.monotonic() >= deadline:
            return Reply(TIMED_OUT)
        return None

    def resolve(self, response: protocol.Response) -> None:
        """The client answered `response.id` (dispatcher)."""
        key = response.id if isinstance(response.id, str) else None
        with self._cond:
            waiter = self._pending.get(key) if key is not None else None
            if waiter is not None and waiter.reply is None:
                waiter.reply = Reply(ANSWERED, response.result, response.error)
                self._cond.notify_all()
                return
        log.info("ignoring a response to %r: no server request waits for it (unknown, or answered late)",
                 response.id)

    def close(self) -> None:
        """The client is gone (its input ended, or the server stops): every waiter ends
        `clientGone`, and so does every later `ask`, at once."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
