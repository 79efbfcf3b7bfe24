"""The JSON-RPC server: dispatcher loop, request execution and lifecycle.

Threads:

- the reader thread parses frames onto the inbox (`transport.Transport`);
- the dispatcher is the thread that calls `serve()` (the main thread in `kward rpc`, so
  that SIGTERM is handled there): it parses messages, answers quick methods at once and
  hands slow ones to the worker pool;
- the writer thread is the only one that writes stdout;
- workers run slow requests and turns.

A response from the client (to a server request: `kward.rpc.server_requests`) is routed
by the dispatcher to its waiter; when the stop begins (end of input included) every
server request still waiting ends ``clientGone``.

Composition (`kward.rpc.compose.build_server` puts the pieces together): the server is
given its transport (reader and writer threads over the two streams), its worker pool,
the method table it serves, the runtime its handlers call, and the connection every
outgoing message goes through (redacted and encoded on the producing thread, then queued
on the outbox; `kward.rpc.connection`). `serve()` returns 0 after `shutdown`, end of
input or a stop signal, with running work cancelled, queued output flushed and every
thread joined (within about 2 s). From the moment the stop begins until the output is
closed, a request that arrives is answered `-32600` `shutting_down` (by the stop's
refuser thread), and a slow request still running when the workers are given up on is
answered `-32600` `shutting_down` too, in its place (whichever answer is claimed first is the
one sent: `_answers` guards the unanswered table only, never held while sending, and the
stop waits briefly for answers claimed but not yet queued). Once a request that gives the client a session
succeeded (`Method.opens_session`: sessions/create, resume, clone, fork: this process is
going to run turns) and the input has been quiet for `IDLE_SECONDS` with no slow request
in flight, the dispatcher makes the server's warm-up (`kward.rpc.warmup`, imported only
then), if it has one, and starts its thread; every message pauses it until the next such
quiet moment. A process that only answers `initialize` and a list, then exits, never
warms up.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from queue import Empty
from typing import TYPE_CHECKING, Any, Callable, Iterator

from kward.errors import (
    Canceled,
    InternalError,
    KwardError,
    MethodNotFound,
    ParseError,
    ShuttingDown,
    as_kward_error,
)
from kward.rpc import experimental, paramcheck, protocol
from kward.rpc.connection import Connection
from kward.rpc.framing import FrameFault
from kward.rpc.method_table import Call, Method, MethodTable, Unredacted
from kward.rpc.params import Params
from kward.rpc.pool import WorkerPool
from kward.rpc.transport import EOF, SIGNAL, STOP_REFUSING, Transport

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.hub import Hub
    from kward.rpc.warmup import WarmUp
    from kward.runtime import Runtime

log = logging.getLogger(__name__)

SIGNAL_POLL = 0.2  # seconds: the longest a signal waits for its handler
IDLE_SECONDS = 0.05  # quiet input, once a session was opened, before the warm-up starts (or resumes)
STOP_BUDGET = 1.8  # seconds from a stop request to the end of serve()
_DRAIN_SHARE = 0.6  # of the budget, spent waiting for in-flight requests on a graceful stop
_SENDING_WAIT = 0.2  # seconds the stop waits for answers claimed but not yet queued (never paced then)


class RpcServer:
    """Serves `methods` over `transport`: quick methods on the dispatcher, slow ones on
    `pool`; handlers get `runtime` and `connection` in their Call. The transport's
    writer-failure callback must put WRITER_FAILED on its inbox (build_server does).
    `make_warm_up` (optional) makes the warm-up, which is made and started once the client
    is idle after it was given a session (`warm_up`: None until then).

    With a `hub` the server is one connection of a listening server (`kward.rpc.daemon`):
    the runtime and the pool are shared and outlive it, so its end stops only its own
    transport (`_stop_connection`); `on_closed(conn, turn_ids)` is told then, with the
    turns it started that may still run, and `on_shutdown()` when its client asked for
    `shutdown`."""

    def __init__(self, transport: Transport, pool: WorkerPool, methods: MethodTable, runtime: "Runtime",
                 connection: Connection, make_warm_up: "Callable[[], WarmUp] | None" = None, *,
                 hub: "Hub | None" = None, on_closed: "Callable[[Connection, set[str]], None] | None" = None,
                 on_shutdown: Callable[[], None] | None = None):
        self.transport = transport
        self.pool = pool
        self.methods = methods
        self.runtime = runtime
        self.conn = connection
        self.make_warm_up = make_warm_up
        self.warm_up: WarmUp | None = None
        self.hub = hub
        self._on_closed = on_closed
        self._on_shutdown = on_shutdown
        self._session_opened = False  # set by the thread that answered sessions/create (or resume, ...)
        self._inflight = 0
        self._inflight_cond = threading.Condition()
        # slow requests not answered yet, by a token: claimed by their worker or, once the
        # workers are given up on, by the stop; `_sending` counts claimed answers not yet queued
        self._unanswered: dict[int, tuple[str, Call]] = {}
        self._next_token = 0
        self._sending = 0
        self._answers = threading.Condition()
        self._stopping = threading.Event()  # set by the dispatcher when the stop begins

    # --- called from any thread -----------------------------------------------------

    def stop_now(self) -> None:
        """Signal-safe: end the session as soon as the dispatcher sees it."""
        self.transport.inbox.put_control(SIGNAL)

    def _send(self, message: dict[str, Any], *, urgent: bool) -> None:
        self.conn.send(message, urgent=urgent)

    # --- the dispatcher -------------------------------------------------------------

    def serve(self) -> int:
        """Run until shutdown; returns the exit status (always 0 for a clean stop)."""
        self.transport.start()
        inbox = self.transport.inbox
        graceful = True
        while True:
            warm = self._session_opened and self._warm_up_due()
            try:
                item = inbox.get(timeout=IDLE_SECONDS if warm else SIGNAL_POLL)
            except Empty:
                if warm and self._inflight == 0:  # (a benign unlocked read)
                    self._start_warm_up()  # or resume
                continue  # gives a pending signal handler its chance to run
            if self.warm_up is not None:
                self.warm_up.pause()
            if item == EOF:
                break
            if isinstance(item, str):  # SIGNAL, WRITER_FAILED
                graceful = False
                break
            try:
                if isinstance(item, FrameFault):
                    self._send(protocol.error_response(None, ParseError(item.message, reason=item.reason)), urgent=True)
                else:
                    self._dispatch(item)
            except Exception:  # a bug here must not end the session; the request was answered or logged
                log.exception("dispatching a message failed")
            if self.conn.stop_requested:
                break
        if self.hub is None:
            self._stop(graceful)
            return 0
        self._stop_connection()
        if self.conn.stop_requested and self._on_shutdown is not None:
            self._on_shutdown()
        return 0

    def _warm_up_due(self) -> bool:
        """A warm-up to make, or a made one waiting to start or resume."""
        if self.warm_up is None:
            return self.make_warm_up is not None
        return self.warm_up.waiting

    def _start_warm_up(self) -> None:
        if self.warm_up is None:
            make, self.make_warm_up = self.make_warm_up, None
            if make is None:
                return
            try:
                self.warm_up = make()
            except Exception:  # never fatal: what it would import is imported where it is used
                log.debug("making the warm-up failed", exc_info=True)
                return
        self.warm_up.start()

    def _dispatch(self, body: bytes) -> None:
        try:
            msg = protocol.parse(body)
        except protocol.Rejected as rejected:
            if not rejected.notification:
                self._send(protocol.error_response(rejected.request_id, rejected.error), urgent=True)
            return
        if isinstance(msg, protocol.Response):  # to one of our server requests
            self.conn.requests.resolve(msg)
            return
        request_id = msg.id if isinstance(msg, protocol.Request) else None
        is_request = isinstance(msg, protocol.Request)
        spec = self.methods.get(msg.method)
        if spec is None:
            if is_request:
                self._send(protocol.error_response(
                    request_id, MethodNotFound(f"Method not found: {msg.method}", data={"method": msg.method})),
                    urgent=True)
            return
        if msg.method in experimental.METHODS and not self.conn.experimental:
            if is_request:
                self._send(protocol.error_response(request_id, experimental.refusal(msg.method)), urgent=True)
            return
        call = Call(runtime=self.runtime, conn=self.conn, methods=self.methods, params=Params(msg.params),
                    id=request_id, trace=msg.trace, deferred=[])
        if not spec.slow:
            self._execute(msg.method, spec, call, is_request)
            return
        with self._inflight_cond:
            self._inflight += 1
        token: int | None = None
        if is_request:
            with self._answers:
                self._next_token += 1
                token = self._next_token
                self._unanswered[token] = (msg.method, call)
        # (the pool is shut down only by `_stop`, once dispatching ended: it always takes the job)
        self.pool.submit(lambda: self._execute_tracked(msg.method, spec, call, is_request, token))

    def _execute_tracked(self, method: str, spec: Method, call: Call, is_request: bool, token: int | None) -> None:
        try:
            self._execute(method, spec, call, is_request, token)
        finally:
            self._finish_inflight()

    def _finish_inflight(self) -> None:
        with self._inflight_cond:
            self._inflight -= 1
            self._inflight_cond.notify_all()

    def _execute(self, method: str, spec: Method, call: Call, is_request: bool, token: int | None = None) -> None:
        """Run one handler and answer, then run what the handler put off until its answer
        was queued (`Call.after_answer`)."""
        try:
            self._run_and_answer(method, spec, call, is_request, token)
        finally:
            for then in call.deferred:
                try:
                    then()
                except Exception:
                    log.exception("after answering %s", method)

    def _run_and_answer(self, method: str, spec: Method, call: Call, is_request: bool, token: int | None = None) -> None:
        """Run one handler and answer. A KwardError is answered as it is, an OSError as the
        FilesystemError `errors.as_kward_error` makes of it (reason, path, the OS's words);
        anything else is a bug: -32603, with the traceback in the log only; a Canceled raised
        once the stop began (it cancels the runtime's work) is ShuttingDown naming the method.
        A slow request (`token` given) is answered only if the stop did not answer it first."""
        hub = self.hub
        try:
            paramcheck.check(method, call.params.raw)  # the params as the shapes declare them
            if hub is not None:
                hub.local.conn = self.conn  # (whose turns `admit` judges)
                if method == "turns/start" and isinstance(call.params.raw.get("sessionId"), str):
                    self._attach_known(hub, call.params.raw["sessionId"])  # before its first event
            result = self.methods.handler(method)(call)
        except Exception as exc:
            if hub is not None:
                hub.local.conn = None
            err = as_kward_error(exc)
            if isinstance(exc, Canceled) and self._stopping.is_set():  # cancelled by the stop
                err = ShuttingDown(f"{method} was stopped by the server shutting down", data={"method": method})
            if err is None:
                log.exception("internal error in %s", method)
                err = InternalError(f"Internal error in {method}: {type(exc).__name__}",
                                    data={"errorClass": type(exc).__name__, "method": method})
            elif not isinstance(exc, KwardError):
                log.warning("%s failed: %s", method, err.message)
            if is_request:
                with self._claim(token) as mine:
                    if mine:
                        self._send(protocol.error_response(call.id, err), urgent=True)
            return
        if spec.opens_session:
            self._session_opened = True
        if hub is not None:
            hub.local.conn = None
            hub.answered(self.conn, method, call.params.raw, result)
        if not is_request:
            return
        with self._claim(token) as mine:
            if mine:
                self._answer(method, spec, call, result)

    def _attach_known(self, hub: Hub, session_id: str) -> None:
        """Attach this connection to `session_id` when the runtime has it open (an unknown id
        is answered by the handler; it leaves nothing in the hub)."""
        try:
            self.runtime.session(session_id)
        except KwardError:
            return
        hub.attach(self.conn, session_id)

    @contextlib.contextmanager
    def _claim(self, token: int | None) -> Iterator[bool]:
        """Yields whether the caller is the one to answer the slow request `token` (False: the
        stop answered it already); the block sends the answer, counted in `_sending`."""
        if token is None:
            yield True
            return
        with self._answers:
            mine = self._unanswered.pop(token, None) is not None
            if mine:
                self._sending += 1
        try:
            yield mine
        finally:
            if mine:
                with self._answers:
                    self._sending -= 1
                    self._answers.notify_all()

    def _answer(self, method: str, spec: Method, call: Call, result: Any) -> None:
        raw = isinstance(result, Unredacted)
        try:
            self.conn.send(protocol.response(call.id, result.value if raw else result), urgent=True, raw=raw,
                           policy=spec.redaction)
        except Exception as exc:  # the result could not be encoded: still answer the request
            log.exception("encoding the result of %s failed", method)
            self._send(protocol.error_response(call.id, InternalError(
                f"Internal error in {method}: {type(exc).__name__}", data={"errorClass": type(exc).__name__})),
                urgent=True)

    # --- lifecycle ------------------------------------------------------------------

    def _stop(self, graceful: bool) -> None:
        self._stopping.set()
        self.conn.requests.close()  # nobody answers server requests any more: they decline
        start = time.monotonic()
        deadline = start + STOP_BUDGET
        refuser = threading.Thread(target=self._refuse_until_told, name="kward-refuser", daemon=True)
        refuser.start()
        if self.warm_up is not None:
            self.warm_up.stop()
        if graceful:  # let requests already being served answer
            with self._inflight_cond:
                self._inflight_cond.wait_for(lambda: self._inflight == 0,
                                             timeout=STOP_BUDGET * _DRAIN_SHARE)
        self.transport.outbox.stop_pacing()
        self.runtime.shutdown()
        pool_done = self.pool.shutdown(max(0.05, deadline - 0.3 - time.monotonic()))
        self.transport.inbox.put_control(STOP_REFUSING)  # it answers what is still queued, then ends
        refuser.join(max(0.2, deadline - 0.2 - time.monotonic()))
        if refuser.is_alive():  # (still reading: its answers from now on may come too late)
            log.warning("the refuser did not finish before the output was closed")
        self._answer_unanswered()
        self.transport.close_output()
        writer_done = self.transport.join_writer(deadline - time.monotonic())
        reader_done = self.transport.join_reader(0.05)
        warm_done = self.warm_up is None or self.warm_up.join(deadline - time.monotonic())
        log.info("stopped in %.0f ms (graceful=%s pool=%s writer=%s reader=%s warm-up=%s)",
                 1000 * (time.monotonic() - start), graceful, pool_done, writer_done, reader_done, warm_done)

    def _stop_connection(self) -> None:
        """The end of one connection of a listening server: its server requests decline,
        its output is flushed (when the peer still reads) and its threads end; the runtime,
        the pool and the turns it started go on (`on_closed` decides about those)."""
        self._stopping.set()
        self.conn.requests.close()
        if self.warm_up is not None:
            self.warm_up.stop()
            self.warm_up.join(STOP_BUDGET)
        self.transport.outbox.stop_pacing()
        with self._inflight_cond:  # the requests it sent before its end get their answers (if it still reads)
            self._inflight_cond.wait_for(lambda: self._inflight == 0, timeout=STOP_BUDGET * _DRAIN_SHARE)
        assert self.hub is not None
        owned = self.hub.remove(self.conn)
        if self._on_closed is not None:
            try:
                self._on_closed(self.conn, owned)
            except Exception:
                log.exception("ending a connection's turns failed")
        self.transport.close_output()
        self.transport.join_writer(STOP_BUDGET)
        self.transport.join_reader(0.05)

    def _refuse_until_told(self) -> None:
        """The refuser thread, owned by `_stop` (which queues STOP_REFUSING and joins it):
        answers what arrives while the stop waits for work in flight, then, once told,
        what is still queued. From its start on it is the inbox's only reader; it blocks
        on the inbox without a timeout (signals are the main thread's) and the control
        item wakes it at once."""
        while True:
            item = self.transport.inbox.get()
            if item == STOP_REFUSING:
                break
            self._refuse(item)
        self._refuse_queued()

    def _refuse_queued(self) -> None:
        """Answer requests that arrived after the stop began, instead of dropping them (on
        the refuser thread)."""
        while True:
            try:
                item = self.transport.inbox.get(block=False)
            except Empty:
                return
            self._refuse(item)

    def _refuse(self, item: object) -> None:
        """One message that arrived while stopping: a request is answered `shutting_down`
        (one that is not valid gets its own error), anything else is dropped."""
        if not isinstance(item, bytes):
            return
        try:
            msg = protocol.parse(item)
        except protocol.Rejected as rejected:
            if not rejected.notification:
                self._send(protocol.error_response(rejected.request_id, rejected.error), urgent=True)
            return
        if isinstance(msg, protocol.Response):
            self.conn.requests.resolve(msg)  # (too late: logged)
        elif isinstance(msg, protocol.Request):
            self._send(protocol.error_response(msg.id, ShuttingDown(
                "The server is shutting down")), urgent=True)

    def _answer_unanswered(self) -> None:
        """Answer every slow request whose worker has not answered it (the workers were given
        up on): nothing is left silent at exit."""
        with self._answers:
            left, self._unanswered = list(self._unanswered.values()), {}
            self._answers.wait_for(lambda: self._sending == 0, timeout=_SENDING_WAIT)
        for method, call in left:
            self._send(protocol.error_response(call.id, ShuttingDown(
                f"{method} did not finish before the server shut down", data={"method": method})), urgent=True)
