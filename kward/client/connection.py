"""The connection of `kward.client`: a small synchronous client of the kward protocol, over three transports.

    with Client.spawn() as k:            # `kward rpc` as a subprocess (or any argv)
        ...
    with Client.connect("unix://") as k: # a listening server (`kward rpc --listen unix://`)
        ...
    with Client.in_process() as k:       # the same server core inside this process
        k.initialize()
        session = k.create_session(".")
        for event in k.turn(session["id"], "What is in this workspace?"):
            ...

Every transport speaks the same frames to the same server (`kward.rpc.server.RpcServer`:
same reader, dispatcher, worker pool, writer and method table); the in-process one runs it
on a thread over OS pipes and never touches the caller's stdin or stdout. See
docs/client.md.

Threads: a Client owns a reader thread (parses frames, hands responses to the waiting
callers, fans notifications out to subscriptions) and a callback thread (runs notification
callbacks and server-request handlers in arrival order, so they may call `request`
themselves). Public methods may be called from any thread, including callbacks; writes to
the server are serialized by one lock. `close()` ends the server (end of input, then a
wait) and joins both threads.
"""

from __future__ import annotations

import io
import json
import logging
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Callable, Iterator, Literal, Mapping, cast

from kward.client.subscription import (
    CLOSED,
    ClientClosed,
    Closed,
    Message,
    RpcError,
    Subscription,
)
from kward.rpc.framing import FrameFault, FrameReader, encode_frame

if TYPE_CHECKING:  # pragma: no cover (the shapes are for the type checker: never loaded at run time)
    from kward.rpc.server import RpcServer
    from kward.rpc.shapes.envelopes import TurnEvent
    from kward.rpc.shapes.lifecycle import InitializeResult
    from kward.rpc.shapes.models import ModelEntry
    from kward.rpc.shapes.runtime import RuntimeStateResult
    from kward.rpc.shapes.sessions import Session, SessionsCloseResult, SessionsListResult
    from kward.rpc.shapes.transcript import SessionsTranscriptResult
    from kward.rpc.shapes.turns import ImageAttachment, Turn, TurnsEventsResult

log = logging.getLogger(__name__)

#: The params of a request or notification: a JSON object or array, or none.
Params = dict[str, Any] | list[Any] | None
#: `on_notification` callbacks get the whole notification message (what they return is ignored).
NotificationCallback = Callable[[Message], object]
#: `on_request` handlers get the request's params and return its result (any JSON value).
RequestHandler = Callable[[Params], object]
_MAX_FRAME = 1 << 31


@dataclass(slots=True)
class _Pending:
    """A request waiting for its response: set by the reader thread, or when the server ended."""

    done: threading.Event = field(default_factory=threading.Event)
    answer: Message | None = None


def _nothing() -> None:
    pass


class Client:
    """One connection to one kward server. Build it with `spawn` or `in_process`."""

    process: subprocess.Popen[bytes] | None = None  # the `kward rpc` child (spawn)
    server: RpcServer | None = None  # the server core (in_process)
    socket: Any = None  # the connection to a listening server (connect)
    address: str | None = None  # its address (connect), what `reconnect` connects to again

    def __init__(self, to_server: BinaryIO, from_server: BinaryIO, *, wait_server: Callable[[float], int | None],
                 stop_server: Callable[[], None], release: Callable[[], None] = _nothing):
        self._to_server = to_server
        self._reader_stream = FrameReader(from_server, _MAX_FRAME)
        self._from_server = from_server
        self._wait_server = wait_server  # (timeout) -> exit status, None if still running
        self._stop_server = stop_server  # last resort when it does not end by itself
        self._release = release  # frees the transport's own ends, after close()
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()  # pending requests, subscriptions, handlers, ids
        self._pending: dict[int, _Pending] = {}
        self._subscriptions: list[Subscription] = []
        self._callbacks: list[tuple[str | None, NotificationCallback]] = []
        self._handlers: dict[str, RequestHandler] = {}
        self._next_id = 0
        self._closed = False
        self._server_ended = False  # the server's output ended: nothing more will be answered
        self.exit_status: int | None = None
        self._work: queue.SimpleQueue[Message | Closed] = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read_loop, name="kward-client-reader", daemon=True)
        self._worker = threading.Thread(target=self._work_loop, name="kward-client-callbacks", daemon=True)
        self._reader.start()
        self._worker.start()

    # --- construction ---------------------------------------------------------------

    @classmethod
    def spawn(cls, argv: list[str] | None = None, *, env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike[str] | None = None, stderr: int | IO[bytes] | IO[str] | None = None) -> Client:
        """Start `kward rpc` (default: this interpreter's `python -m kward rpc`; any argv,
        e.g. ``["python3", "kward.pyz", "rpc"]``) and connect to its stdin/stdout.
        `stderr` is passed to subprocess.Popen (default: inherited)."""
        proc = subprocess.Popen(argv or [sys.executable, "-m", "kward", "rpc"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr, env=dict(env) if env is not None else None,
                                cwd=str(cwd) if cwd is not None else None)

        def wait(timeout: float) -> int | None:
            try:
                return proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return None

        def stop() -> None:
            proc.kill()
            proc.wait()

        # PIPE with the default buffering: a BufferedWriter and a BufferedReader
        assert isinstance(proc.stdin, io.BufferedWriter) and isinstance(proc.stdout, io.BufferedReader)
        client = cls(proc.stdin, proc.stdout, wait_server=wait, stop_server=stop)
        client.process = proc
        return client

    @classmethod
    def connect(cls, address: str = "unix://", *, config_dir: str | os.PathLike[str] | None = None,
                timeout: float = 5.0) -> Client:
        """Connect to a listening server (`kward rpc --listen unix://...`; see
        `kward.client.socket_transport`, which also has `catch_up` for a client that comes
        back). Raises OSError when none answers there."""
        from kward.client.socket_transport import connect

        return connect(cls, address, config_dir=config_dir, timeout=timeout)

    def reconnect(self, *, wait: float = 10.0) -> Client:
        """Close this connection to a listening server and connect to it again (trying for
        up to `wait` seconds); the new client, to `initialize` and `catch_up` with."""
        from kward.client.socket_transport import reconnect

        return reconnect(self, wait=wait)

    def catch_up(self, session_id: str, seen: Mapping[str, int] | None = None, *,
                 timeout: float | None = 30.0) -> tuple[Any, list[TurnEvent]]:
        """Attach to a session of a listening server and fetch the events missed after the
        sequences in `seen` (turn id -> last sequence had); see `socket_transport.catch_up`."""
        from kward.client.socket_transport import catch_up

        return catch_up(self, session_id, seen, timeout)

    @classmethod
    def in_process(cls, *, env: Mapping[str, str] | None = None,
                   cwd: str | os.PathLike[str] | None = None, narrow_config_mode: bool = True,
                   approval_default: str = "off") -> Client:
        """Run the server core on a thread of this process over OS pipes. `env` (default
        os.environ) decides the config directory, provider and settings exactly as the
        environment of `kward rpc` would; `cwd` is its launch directory (default: ours);
        `narrow_config_mode` False leaves a config.json open to others as it is
        (`kward.rpc.compose.resolve`); `approval_default` the approval mode when config.json
        sets none (`kward.rpc.compose.build_server`). Raises kward.errors.ConfigError for a bad
        environment setting."""
        from kward.rpc import compose

        setup = compose.resolve(os.environ if env is None else env, cwd,  # ConfigError before any pipe exists
                                narrow_config_mode=narrow_config_mode)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        server_in = io.open(in_r, "rb", buffering=256 * 1024)
        server_out = io.FileIO(out_w, "wb", closefd=True)
        server = compose.build_server(server_in, server_out, setup, approval_default=approval_default)
        status: list[int] = []

        def serve() -> None:
            try:
                status.append(server.serve())
            finally:  # what a process exit does for `kward rpc`: the client sees end of output
                server_out.close()

        thread = threading.Thread(target=serve, name="kward-inprocess-server", daemon=True)
        thread.start()

        def wait(timeout: float) -> int | None:
            thread.join(timeout)
            return status[0] if status else None

        client = cls(io.FileIO(in_w, "wb", closefd=True), io.open(out_r, "rb", buffering=256 * 1024),
                     wait_server=wait, stop_server=server.stop_now,
                     release=server_in.close)  # after close(): the server's reader saw end of input
        client.server = server
        return client

    # --- requests -------------------------------------------------------------------

    def request(self, method: str, params: Params = None, *, timeout: float | None = 30.0,
                trace: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Send a request and wait for its result (a JSON object: every kward method answers
        one). Raises RpcError for an error response or a result that is not an object,
        TimeoutError when no answer came in `timeout` seconds (None: wait for ever) and
        ClientClosed when the server ended first."""
        with self._lock:
            if self._closed or self._server_ended:
                raise ClientClosed("the client is closed" if self._closed else "the kward server ended")
            self._next_id += 1
            request_id = self._next_id
            slot = _Pending()
            self._pending[request_id] = slot
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        if trace is not None:
            message["trace"] = dict(trace)
        try:
            self._write(message)
            if not slot.done.wait(timeout):
                raise TimeoutError(f"{method}: no answer within {timeout} s")
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
        answer = slot.answer
        if answer is None:
            raise ClientClosed(f"{method}: the kward server ended before answering")
        if "error" in answer:
            raise RpcError(answer["error"] if isinstance(answer["error"], dict) else {"message": str(answer["error"])})
        result = answer.get("result")
        if not isinstance(result, dict):
            raise RpcError({"code": -32603, "message": f"{method}: the result is not an object: {result!r:.100}",
                            "data": {"reason": "internal_error"}})
        return result

    def notify(self, method: str, params: Params = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    # --- typed helpers: one method each, annotated with its result's shape (kward.rpc.shapes) ---

    def initialize(self, name: str = "kward.client", version: str = "1", **capabilities: Any) -> InitializeResult:
        """`initialize` (with clientInfo and client capabilities) then `initialized`."""
        result = self.request("initialize", {"clientInfo": {"name": name, "version": version},
                                             "capabilities": capabilities})
        self.notify("initialized")
        return cast("InitializeResult", result)

    def create_session(self, workspace_root: str | os.PathLike[str] | None = None, *, name: str | None = None,
                       memory: bool | None = None, timeout: float | None = 30.0) -> Session:
        """`sessions/create`: a new session in `workspace_root` (default: the server's launch
        directory); `memory` False: its turns use no memory."""
        params: dict[str, Any] = {}
        if workspace_root is not None:
            params["workspaceRoot"] = os.fspath(workspace_root)
        if name is not None:
            params["name"] = name
        if memory is not None:
            params["memory"] = memory
        return cast("Session", self.request("sessions/create", params, timeout=timeout))

    def resume_session(self, path: str | os.PathLike[str], *, workspace_root: str | os.PathLike[str] | None = None,
                       timeout: float | None = 30.0) -> Session:
        """`sessions/resume`: open the session file `path` (relative to `workspace_root`)."""
        params: dict[str, Any] = {"path": os.fspath(path)}
        if workspace_root is not None:
            params["workspaceRoot"] = os.fspath(workspace_root)
        return cast("Session", self.request("sessions/resume", params, timeout=timeout))

    def list_sessions(self, workspace_root: str | os.PathLike[str] | None = None, *, limit: int | None = None,
                      timeout: float | None = 30.0) -> SessionsListResult:
        """`sessions/list`: the sessions of `workspace_root` (default: the launch directory),
        newest first, at most `limit` (default 20)."""
        params: dict[str, Any] = {}
        if workspace_root is not None:
            params["workspaceRoot"] = os.fspath(workspace_root)
        if limit is not None:
            params["limit"] = limit
        return cast("SessionsListResult", self.request("sessions/list", params, timeout=timeout))

    def close_session(self, session_id: str, *, timeout: float | None = 30.0) -> SessionsCloseResult:
        """`sessions/close`: end the RPC session id (its running turns are canceled)."""
        return cast("SessionsCloseResult", self.request("sessions/close", {"sessionId": session_id}, timeout=timeout))

    def transcript(self, session_id: str, *, timeout: float | None = 30.0) -> SessionsTranscriptResult:
        """`sessions/transcript`: the session and its messages."""
        return cast("SessionsTranscriptResult",
                    self.request("sessions/transcript", {"sessionId": session_id}, timeout=timeout))

    def start_turn(self, session_id: str, input: str, *, attachments: list[ImageAttachment] | None = None,
                   streaming_behavior: Literal["newTurn", "followUp", "steer"] | None = None,
                   timeout: float | None = 30.0) -> Turn:
        """`turns/start`: queue a turn and return it at once (its events come as `turn/event`
        notifications; `turn()` starts one and yields them)."""
        params: dict[str, Any] = {"sessionId": session_id, "input": input}
        if attachments is not None:
            params["attachments"] = attachments
        if streaming_behavior is not None:
            params["streamingBehavior"] = streaming_behavior
        return cast("Turn", self.request("turns/start", params, timeout=timeout))

    def cancel_turn(self, turn_id: str, *, timeout: float | None = 30.0) -> Turn:
        """`turns/cancel`: ask the turn to stop; returns it (`cancelRequested` true)."""
        return cast("Turn", self.request("turns/cancel", {"turnId": turn_id}, timeout=timeout))

    def turn_status(self, turn_id: str, *, timeout: float | None = 30.0) -> Turn:
        """`turns/status`: the turn as it is now."""
        return cast("Turn", self.request("turns/status", {"turnId": turn_id}, timeout=timeout))

    def turn_events(self, turn_id: str, after_sequence: int | None = None, *,
                    timeout: float | None = 30.0) -> TurnsEventsResult:
        """`turns/events`: the turn and the events its buffer holds (after `after_sequence`)."""
        params: dict[str, Any] = {"turnId": turn_id}
        if after_sequence is not None:
            params["afterSequence"] = after_sequence
        return cast("TurnsEventsResult", self.request("turns/events", params, timeout=timeout))

    def current_model(self, *, timeout: float | None = 30.0) -> ModelEntry:
        """`models/current`: the model turns use now."""
        return cast("ModelEntry", self.request("models/current", {}, timeout=timeout))

    def runtime_state(self, session_id: str, *, timeout: float | None = 30.0) -> RuntimeStateResult:
        """`runtime/state`: the session's runtime state (model, settings, counts)."""
        return cast("RuntimeStateResult", self.request("runtime/state", {"sessionId": session_id}, timeout=timeout))

    def turn(self, session_id: str, input: str, *, timeout: float | None = None,
             **params: Any) -> Iterator[TurnEvent]:
        """Start a turn and yield its events (the params of its `turn/event` notifications)
        in order, ending with `turnFinished`. `timeout` bounds the wait for each event.
        Events are collected from before the request is sent, so none is missed."""
        with self.subscribe(lambda m: m.get("method") == "turn/event") as events:
            turn = cast("Turn", self.request("turns/start", {"sessionId": session_id, "input": input, **params}))
            while True:
                event: TurnEvent = events.get(timeout)["params"]
                if event.get("turnId") != turn["id"]:
                    continue
                yield event
                if event.get("type") == "turnFinished":
                    return

    # --- notifications and server requests ------------------------------------------

    def subscribe(self, predicate: Callable[[Message], bool] | None = None) -> Subscription:
        """Collect every notification (matching `predicate`) from now on."""
        sub = Subscription(self, predicate)
        with self._lock:
            if self._closed or self._server_ended:
                sub._offer(CLOSED)
            else:
                self._subscriptions.append(sub)
        return sub

    def notifications(self) -> Iterator[Message]:
        """Every notification from now on, until the client closes."""
        return iter(self.subscribe())

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)

    def on_notification(self, callback: NotificationCallback, method: str | None = None) -> None:
        """Call `callback(message)` for every notification (of `method`), on the callback
        thread, in arrival order."""
        with self._lock:
            self._callbacks.append((method, callback))

    def on_request(self, method: str, handler: RequestHandler) -> None:
        """Answer server-to-client requests of `method` with `handler(params)` (its return
        value is the result; an RpcError it raises is the error). Unhandled methods are
        answered -32601."""
        with self._lock:
            self._handlers[method] = handler

    # --- lifecycle ------------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> int | None:
        """End the connection: close the server's input (it finishes running work and
        exits), wait up to `timeout` s, stop it harder if needed, join the threads.
        Returns the server's exit status."""
        with self._lock:
            already = self._closed
            self._closed = True
        if not already:
            try:
                with self._write_lock:
                    self._to_server.close()
            except OSError:
                pass
        status = self._wait_server(timeout)
        if status is None:
            self._stop_server()
            status = self._wait_server(timeout)
        self._reader.join(timeout)
        self._work.put(CLOSED)
        if threading.current_thread() is not self._worker:
            self._worker.join(timeout)
        for release in (self._from_server.close, self._release):
            try:
                release()
            except OSError:
                pass
        self.exit_status = status
        return status

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals ------------------------------------------------------------------

    def _write(self, message: Message) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        try:
            with self._write_lock:
                self._to_server.write(encode_frame(body))
                self._to_server.flush()
        except (OSError, ValueError) as exc:  # ValueError: the pipe was closed by close()
            raise ClientClosed(f"cannot write to the kward server: {exc}") from None

    def _read_loop(self) -> None:
        try:
            while True:
                body = self._reader_stream.read()
                if body is None:
                    return
                msg = self._decode(body)
                if msg is not None:
                    self._route(msg)
        except (OSError, ValueError):
            return
        finally:
            self._ended()

    def _decode(self, body: bytes | FrameFault) -> Message | None:
        """The message of one frame, or None to drop it (a framing fault, a body that is
        not a JSON object). Runs on the reader thread; a subclass may override it to see
        every frame (the test harness checks them strictly)."""
        if isinstance(body, FrameFault):
            return None
        try:
            msg = json.loads(body)
        except ValueError:
            return None
        return msg if isinstance(msg, dict) else None

    def _route(self, msg: Message) -> None:
        if "method" in msg:
            self._work.put(msg)  # callbacks and server requests run on the callback thread
            if "id" not in msg:
                with self._lock:
                    subs = list(self._subscriptions)
                for sub in subs:
                    sub._offer(msg)
            return
        request_id = msg.get("id")  # a response: to one of ours, whose ids are ints
        with self._lock:
            slot = self._pending.get(request_id) if isinstance(request_id, int) else None
        if slot is not None:
            slot.answer = msg
            slot.done.set()

    def _ended(self) -> None:
        """The server's output ended: wake every waiter and every subscription."""
        with self._lock:
            self._server_ended = True
            pending = list(self._pending.values())
            subs = list(self._subscriptions)
        for slot in pending:
            slot.done.set()
        for sub in subs:
            sub._offer(CLOSED)

    def _work_loop(self) -> None:
        while True:
            msg = self._work.get()
            if isinstance(msg, Closed):
                return
            if "id" in msg:
                self._answer_server_request(msg)
                continue
            with self._lock:
                callbacks = [fn for method, fn in self._callbacks if method in (None, msg.get("method"))]
            for fn in callbacks:
                try:
                    fn(msg)
                except Exception:  # a failing callback must not stop the others
                    log.exception("notification callback failed")

    def _answer_server_request(self, msg: Message) -> None:
        method = msg.get("method")
        with self._lock:
            handler = self._handlers.get(method) if isinstance(method, str) else None
        reply: Message = {"jsonrpc": "2.0", "id": msg["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"Method not found: {msg.get('method')}",
                              "data": {"reason": "method_not_found"}}
        else:
            try:
                reply["result"] = handler(msg.get("params"))
            except RpcError as exc:
                reply["error"] = {"code": exc.code, "message": exc.message, "data": exc.data}
            except Exception as exc:
                reply["error"] = {"code": -32603, "message": f"Client handler failed: {type(exc).__name__}",
                                  "data": {"reason": "internal_error"}}
        try:
            self._write(reply)
        except ClientClosed:
            pass
