"""Cancellation of in-flight HTTP requests: the per-request record and the pooled
connection classes that report to it (used by ``kward.providers.http``).

Closing a response does not unblock a thread blocked in a socket read; shutting the
socket down does. Every request runs with an `Inflight` record. The pool's connection
classes report themselves to the record of the request being made on the current thread
(``local.inflight``, set by the HTTP client around ``session.request``), so a cancel can
shut the socket down even while waiting for the response headers. A new connection
reports its plain socket as soon as the TCP connect returned, before the TLS handshake (or
a proxy tunnel): the record keeps a duplicate descriptor of it until ``connect`` returns
(the TLS wrap detaches the original socket object), so a cancel also ends a handshake the
server never completes. A TCP connect that hangs is bounded by the connect timeout only:
there is no socket to shut down before it returns. After the headers the record also
holds the response and targets the connection that response still owns. When the request
ends the record is detached (under its lock) before the connection can go back to the
pool, so a late cancel never touches a pooled connection. A connection whose socket was
shut down is closed and discarded; the pool opens a fresh one for the next request.

Thread contract: `Inflight.abort` may run on any thread (the cancelling one) and only
takes the record's own lock; every other method runs on the requesting thread.
`requests`/`urllib3` are imported lazily, on first use of `make_adapter`.
"""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pragma: no cover - `requests` and `urllib3` are imported on first use only
    from requests import Response
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection
    from urllib3.connectionpool import HTTPConnectionPool

C = TypeVar("C")  # a urllib3 connection class

local = threading.local()  # .inflight: the Inflight of the request made on this thread


class Inflight:
    """Cancellation handle of one request; `abort` may be called from any thread."""

    __slots__ = ("conn", "resp", "raw", "cancelled", "detached", "lock")

    def __init__(self) -> None:
        self.conn: HTTPConnection | None = None
        self.resp: Response | None = None
        self.raw: socket.socket | None = None  # a dup of a connecting plain socket (ours)
        self.cancelled = False
        self.detached = False
        self.lock = threading.Lock()

    def connecting(self, sock: socket.socket) -> None:
        """On the requesting thread, when a new connection's TCP connect returned: keep a
        duplicate of its descriptor so that `abort` can shut it down during the handshake."""
        with self.lock:
            if self.detached:
                return
            if self.cancelled:
                _shutdown_socket(sock)
                return
            try:
                self.raw = sock.dup()
            except OSError:
                pass

    def connected(self) -> None:
        """On the requesting thread, when `connect` returned or failed: drop the duplicate."""
        with self.lock:
            raw, self.raw = self.raw, None
        if raw is not None:
            raw.close()

    def attach(self, conn: HTTPConnection) -> None:
        """Called on the requesting thread when a connection is used or connected."""
        with self.lock:
            if self.detached:
                return
            self.conn = conn
            if self.cancelled:
                _shutdown(conn)

    def responded(self, resp: Response) -> bool:
        """On the requesting thread, when the headers arrived: keep the response (a cancel
        now targets the connection it owns); True when the request was cancelled already."""
        with self.lock:
            self.resp = resp
            return self.cancelled

    def abort(self) -> None:
        with self.lock:
            if self.cancelled:
                return
            self.cancelled = True
            if self.detached:
                return
            if self.resp is not None:
                conn = getattr(self.resp.raw, "connection", None)  # None once released
            else:
                conn = self.conn
            _shutdown(conn)
            if self.raw is not None:
                _shutdown_socket(self.raw)

    def detach(self) -> None:
        with self.lock:
            self.detached = True
            self.conn = None
            raw, self.raw = self.raw, None
        if raw is not None:
            raw.close()


def _shutdown(conn: HTTPConnection | None) -> None:
    sock = getattr(conn, "sock", None)
    if sock is not None:
        _shutdown_socket(sock)


def _shutdown_socket(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed, or detached by a TLS wrap
        pass


def _tracked(base: type[C]) -> type[C]:
    """A subclass of a urllib3 connection class that reports itself to `local.inflight`."""

    class Tracked(base):  # type: ignore[misc, valid-type]  # a base chosen at run time (HTTP or HTTPS)
        def _new_conn(self) -> socket.socket:
            sock: socket.socket = super()._new_conn()
            inflight = getattr(local, "inflight", None)
            if inflight is not None:
                inflight.connecting(sock)
            return sock

        def connect(self) -> None:
            inflight = getattr(local, "inflight", None)
            try:
                super().connect()
            finally:
                if inflight is not None:
                    inflight.connected()
            if inflight is not None:
                inflight.attach(self)

        def putrequest(self, *args: Any, **kwargs: Any) -> None:
            inflight = getattr(local, "inflight", None)
            if inflight is not None:
                inflight.attach(self)
            super().putrequest(*args, **kwargs)

    Tracked.__name__ = "Tracked" + base.__name__
    return Tracked


_POOL_CLASSES: dict[str, type[HTTPConnectionPool]] | None = None


def _pool_classes() -> dict[str, type[HTTPConnectionPool]]:
    global _POOL_CLASSES
    if _POOL_CLASSES is None:
        from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

        class TrackedHTTPPool(HTTPConnectionPool):
            ConnectionCls = _tracked(HTTPConnectionPool.ConnectionCls)

        class TrackedHTTPSPool(HTTPSConnectionPool):
            ConnectionCls = _tracked(HTTPSConnectionPool.ConnectionCls)

        _POOL_CLASSES = {"http": TrackedHTTPPool, "https": TrackedHTTPSPool}
    return _POOL_CLASSES


def make_adapter(pool_maxsize: int) -> HTTPAdapter:
    """A requests adapter whose pools (direct and through HTTP proxies) use the tracked
    connection classes."""
    from requests.adapters import HTTPAdapter

    class TrackingAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = _pool_classes()

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            manager = super().proxy_manager_for(proxy, **kwargs)
            if proxy.lower().startswith(("http://", "https://")):
                manager.pool_classes_by_scheme = _pool_classes()
            return manager

    return TrackingAdapter(pool_connections=4, pool_maxsize=pool_maxsize)
