"""A listening server (`kward rpc --listen unix://PATH`): one runtime, one worker pool and
one method table for every client that connects; each connection gets the server stdio
uses (`RpcServer`, with the connection's own transport, `initialize` and answers), routed
through the hub (`kward.rpc.hub`).

Threads: the main thread runs `serve()` (signals are handled there) and watches for the
end: `shutdown` from any client, SIGTERM/SIGINT/SIGHUP, `idle_exit` seconds with no
connection and no turn at work (a turn waiting for the answer to a question counts as
idle), or no connection while its socket file is gone or replaced (nobody can come back). The acceptor thread (``kward-accept``) takes
connections; a peer of another user is closed at once (`listen.same_user`). Each
connection runs its server's dispatcher on a thread of its own (``kward-conn-N``; its
transport adds a reader and a writer) and warms up as a stdio server does once it was
given a session (`kward.rpc.warmup`: the imports happen once per process). When a connection ends its turns go on, unless its
client asked for ``closeBehavior: "cancelTurns"`` in `initialize`.

At the end: the listener is closed and its socket file removed (only when it is still the
one this server made), every connection is stopped and joined, then the runtime shuts down
(turns cancelled, sessions closed) and the pool is joined.

Thread contract: `_lock` guards the connection threads and the idle clock; `stop()` may be
called from any thread (and from a signal handler: it only sets an event).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from kward.rpc.connection import Connection
from kward.rpc.hub import Hub
from kward.rpc.server import RpcServer
from kward.rpc.transport import SIGNAL, WRITER_FAILED, Transport

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.listen import Listening
    from kward.rpc.method_table import MethodTable
    from kward.rpc.pool import WorkerPool
    from kward.rpc.warmup import WarmUp
    from kward.runtime import Runtime

log = logging.getLogger(__name__)

DEFAULT_IDLE_EXIT = 600.0
MAX_CONNECTIONS = 64  # more at once are closed as they come (each costs three threads)
POLL = 0.2  # seconds between the main thread's looks at the idle clock and the stop event
JOIN_SECONDS = 3.0


class _Client:
    """One accepted connection and its server."""

    __slots__ = ("sock", "server", "thread")

    def __init__(self, sock: socket.socket, server: RpcServer, thread: threading.Thread):
        self.sock = sock
        self.server = server
        self.thread = thread


class Daemon:
    def __init__(self, listening: Listening, path: str, *, runtime: Runtime, pool: WorkerPool,
                 methods: MethodTable, hub: Hub, secrets: Any, max_frame_bytes: int,
                 idle_exit: float = DEFAULT_IDLE_EXIT, make_warm_up: Callable[[], WarmUp] | None = None):
        self.listener = listening.sock
        self.path = path
        self.runtime = runtime
        self.pool = pool
        self.methods = methods
        self.hub = hub
        self._secrets = secrets
        self._max_frame_bytes = max_frame_bytes
        self.idle_exit = idle_exit
        self._make_warm_up = make_warm_up  # (each connection may warm up; the imports happen once)
        self._lock = threading.Lock()
        self._clients: dict[int, _Client] = {}
        self._next = 0
        self._idle_since = time.monotonic()
        self._stop = threading.Event()
        self._inode = listening.inode  # the socket file this server made (dev, ino)
        self._acceptor = threading.Thread(target=self._accept_loop, name="kward-accept", daemon=True)

    def stop(self) -> None:
        """End the server (signal-safe)."""
        self._stop.set()

    # --- serving --------------------------------------------------------------------

    def serve(self) -> int:
        """Serve until told to stop or idle; returns the exit status (0)."""
        self._acceptor.start()
        while not self._stop.wait(POLL):
            if self._idle_too_long():
                log.info("no client and no turn for %g s: exiting", self.idle_exit)
                break
        self._shutdown()
        return 0

    def _idle_too_long(self) -> bool:
        """No client, and no turn at work (one waiting for the user's answer to a question
        counts as idle: with nobody connected it would wait forever) for `idle_exit` s; or
        no client and the socket file is gone (nobody can connect again)."""
        rt = self.runtime
        working = rt.turns.active() if rt.has_service("turns") else 0
        if working and rt.has_service("questions"):
            working -= rt.questions.waiting()
        with self._lock:
            if self._clients:
                self._idle_since = time.monotonic()
                return False
        if not self._still_ours():
            log.info("the socket %s is gone: exiting", self.path)
            return True
        with self._lock:
            if working > 0:
                self._idle_since = time.monotonic()
                return False
            return time.monotonic() - self._idle_since >= self.idle_exit

    def _still_ours(self) -> bool:
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._inode

    def _accept_loop(self) -> None:
        from kward.rpc.listen import same_user

        self.listener.settimeout(POLL)  # (a closed listener does not wake a blocked accept everywhere)
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError as exc:
                if self._stop.is_set():  # the listener was closed: the end
                    return
                log.warning("accepting a connection failed (%s): trying again", exc.strerror or exc)
                self._stop.wait(POLL)  # (out of descriptors: give the others time to close theirs)
                continue
            sock.setblocking(True)
            if not same_user(sock):
                log.warning("a connection from another user was refused")
                sock.close()
                continue
            with self._lock:
                full = len(self._clients) >= MAX_CONNECTIONS
            if full:
                log.warning("a connection was refused: %d clients are connected already", MAX_CONNECTIONS)
                sock.close()
                continue
            try:
                self._start_client(sock)
            except Exception:  # one connection's failure must not end the acceptor
                log.exception("a connection could not be served")
                sock.close()

    def _start_client(self, sock: socket.socket) -> None:
        reader = sock.makefile("rb", buffering=256 * 1024)
        writer = sock.makefile("wb", buffering=0)
        transport = Transport(reader, writer, max_frame_bytes=self._max_frame_bytes,  # type: ignore[arg-type]
                              on_writer_failed=lambda: transport.inbox.put_control(WRITER_FAILED))
        conn = Connection(transport.outbox, self._secrets)
        conn.hub = self.hub
        conn.paced = False
        conn.describe_capabilities = lambda: self._capabilities(conn)
        server = RpcServer(transport, self.pool, self.methods, self.runtime, conn, self._make_warm_up, hub=self.hub,
                           on_closed=self._closed, on_shutdown=self.stop)
        with self._lock:
            self._next += 1
            key = self._next
            thread = threading.Thread(target=self._run_client, args=(key,), name=f"kward-conn-{key}", daemon=True)
            self._clients[key] = _Client(sock, server, thread)
        self.hub.add(conn, server.stop_now)
        thread.start()

    def _capabilities(self, conn: Connection) -> dict[str, Any]:
        from kward.rpc import capabilities

        return dict(capabilities.build(self.methods, capabilities.facts(self.runtime.info())._replace(
            experimental_client=conn.experimental, listening=True)))

    def _run_client(self, key: int) -> None:
        with self._lock:
            client = self._clients[key]
        try:
            client.server.serve()
        except Exception:
            log.exception("a connection's server failed")
        finally:
            try:
                client.sock.shutdown(socket.SHUT_RDWR)  # (wakes its reader, and a writer stuck on a full socket)
            except OSError:
                pass
            transport = client.server.transport
            if not (transport.join_reader(JOIN_SECONDS) and transport.join_writer(JOIN_SECONDS)):
                log.warning("a connection's reader or writer did not end")
            client.sock.close()
            with self._lock:
                self._clients.pop(key, None)
                self._idle_since = time.monotonic()

    def _closed(self, conn: Connection, turns: set[str]) -> None:
        """A connection ended (its server's thread): its turns go on, or are cancelled
        when its client asked for that."""
        if conn.close_behavior != "cancelTurns" or not self.runtime.has_service("turns"):
            return
        for turn_id in turns:
            try:
                self.runtime.cancel_turn(turn_id)
            except Exception:  # (finished meanwhile, or forgotten)
                log.debug("cancelling turn %s of a closed connection failed", turn_id, exc_info=True)

    # --- the end ----------------------------------------------------------------------

    def _shutdown(self) -> None:
        self._stop.set()
        if self._still_ours():  # (a later server's socket is left alone)
            try:
                os.unlink(self.path)
            except OSError:
                pass
        try:
            self.listener.close()
        except OSError:
            pass
        self._acceptor.join(1.0)
        with self._lock:
            clients = list(self._clients.values())
        for client in clients:
            client.server.transport.inbox.put_control(SIGNAL)
        for client in clients:
            client.thread.join(JOIN_SECONDS)
        self.runtime.shutdown()
        self.pool.shutdown(JOIN_SECONDS)
