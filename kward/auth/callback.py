"""The one-shot loopback HTTP listener that receives an OAuth redirect.

`CallbackServer` listens on 127.0.0.1 and, when this machine has an IPv6 loopback, on ::1
with the same port (the redirect names `localhost`, which a browser may resolve to
either), so nothing but this machine can connect and no other process can hold the other
loopback of the port the browser is sent to. Ports are tried in order: the configured one
(1455 by default; when that is busy 1457, the other port OpenAI allows), then any free
port; a port another socket holds on either loopback is skipped. Each GET is answered by
the `respond(path, query)` callable the login passes in, which returns (HTTP status, plain
text for the page); every answer is a small HTML page sent with ``Connection: close``.
Nothing is written to stderr; a failing request is logged to the log file.

Connections are served side by side without threads: the login's thread calls
`handle_one(timeout)`, which waits at most `timeout` seconds for any socket to be ready,
accepts new connections, reads what has arrived of each request head, answers those that
are complete, and drops those whose head has not arrived whole `HEAD_DEADLINE` seconds
after they connected (a 408), however steadily their bytes trickle in. So a client that
connects and sends nothing, or one byte a second, neither holds the listener nor the
login past its own timeout. At most `MAX_CONNECTIONS` are kept open at once: when one
more arrives, the oldest is dropped (a 408) and the new one kept, so idle connections
cannot shut the browser out; a head longer than `MAX_HEAD_BYTES` is a 431.

Thread contract: owned by one login's thread, which calls `handle_one` in a loop and
`close` at the end. `wake()` may be called from any thread: it ends the current wait at
once (the login was finished elsewhere).
"""

from __future__ import annotations

import contextlib
import errno
import html
import logging
import selectors
import socket
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

from kward.auth.oauth import DEFAULT_PORT, FALLBACK_PORT

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
HOST6 = "::1"
HEAD_DEADLINE = 5.0  # seconds for a whole request head, from the connect
MAX_HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS = 16
SEND_TIMEOUT = 2.0  # for the small answer page
_BUSY = (errno.EADDRINUSE, errno.EACCES)
_ANY_PORT_TRIES = 16  # a free IPv4 port whose ::1 twin is taken: try another

Responder = Callable[[str, str], "tuple[int, str]"]
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
            409: "Conflict", 431: "Request Header Fields Too Large", 500: "Internal Server Error"}


def page(text: str) -> bytes:
    """A plain page showing `text` (escaped)."""
    body = html.escape(text)
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kward</title></head>"
            f"<body><p>{body}</p></body></html>\n").encode("utf-8")


def answer(status: int, text: str) -> bytes:
    """The whole HTTP response: `page(text)` with status `status`."""
    data = page(text)
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nServer: kward\r\n"
            f"Content-Type: text/html; charset=utf-8\r\nContent-Length: {len(data)}\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n")
    return head.encode("ascii") + data


def _candidates(preferred: int) -> list[int]:
    ports = [preferred] if preferred else []
    if preferred == DEFAULT_PORT:
        ports.append(FALLBACK_PORT)
    return ports + [0]


def _listener(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (a listening socket still refuses it)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(8)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _bind_both(port: int) -> list[socket.socket]:
    """Listeners on 127.0.0.1:`port` and ::1 on the same port (0: one the kernel picks),
    or just the first where this machine has no IPv6 loopback. OSError (EADDRINUSE) when
    either is held by another socket."""
    v4 = _listener(socket.AF_INET, HOST, port)
    if not socket.has_ipv6:
        return [v4]
    try:
        v6 = _listener(socket.AF_INET6, HOST6, v4.getsockname()[1])
    except OSError as exc:
        if exc.errno in _BUSY:
            v4.close()
            raise
        return [v4]  # EADDRNOTAVAIL, EAFNOSUPPORT: no IPv6 loopback here
    return [v4, v6]


def bind_listeners(preferred_port: int) -> list[socket.socket]:
    """The listeners of the first candidate port free on both loopbacks (see the module
    docstring); OSError naming the ports when none is."""
    last: OSError | None = None
    for port in _candidates(preferred_port):
        for _ in range(_ANY_PORT_TRIES if port == 0 else 1):
            try:
                return _bind_both(port)
            except OSError as exc:
                if exc.errno not in _BUSY + (errno.EADDRNOTAVAIL,):
                    raise
                last = exc
    assert last is not None
    tried = ", ".join(str(p) for p in _candidates(preferred_port) if p)
    raise OSError(last.errno, f"no loopback port for the login callback is free on both 127.0.0.1 and ::1 "
                              f"(tried {tried or 'none'} and free ports): {last.strerror}")


@dataclass(slots=True)
class _Connection:
    sock: socket.socket
    deadline: float
    head: bytearray = field(default_factory=bytearray)


def parse_request_line(head: bytes) -> tuple[str, str, str] | None:
    """(method, path, query) of a request head's first line; None when it is not one."""
    line = head.split(b"\r\n", 1)[0].split(b"\n", 1)[0]
    try:
        method, target, version = line.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        return None
    if not version.startswith("HTTP/") or not target.startswith("/"):
        return None
    url = urlsplit(target)
    return method, url.path, url.query


class CallbackServer:
    """See the module docstring. Raises OSError when no port can be bound at all."""

    def __init__(self, respond: Responder, preferred_port: int):
        self._respond = respond
        self._listeners = bind_listeners(preferred_port)
        host, port = self._listeners[0].getsockname()[:2]
        self._address = (str(host), int(port))
        self._connections: dict[socket.socket, _Connection] = {}
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()  # not select(): fds past 1024 work too
        for sock in self._listeners:
            self._selector.register(sock, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        if preferred_port and self.port != preferred_port:
            log.info("OAuth callback: port %d is busy; listening on %d", preferred_port, self.port)

    @property
    def address(self) -> tuple[str, int]:
        """The IPv4 address (host, port); ::1 listens on the same port when it exists."""
        return self._address

    @property
    def port(self) -> int:
        return self.address[1]

    def handle_one(self, timeout: float) -> None:
        """Wait at most `timeout` seconds (less when a connection's head deadline comes
        first, or on a `wake`), then serve what is ready and drop connections past their
        deadline. The login's thread."""
        now = time.monotonic()
        wait = max(0.0, timeout)
        if self._connections:
            wait = min(wait, max(0.0, min(c.deadline for c in self._connections.values()) - now))
        for key, _ in self._selector.select(wait):
            sock = key.fileobj
            if not isinstance(sock, socket.socket):
                continue
            if sock is self._wake_r:
                with contextlib.suppress(OSError):
                    self._wake_r.recv(64)
            elif sock in self._listeners:
                self._accept(sock)
            else:
                connection = self._connections.get(sock)
                if connection is not None:
                    self._read(connection)
        now = time.monotonic()
        for connection in [c for c in self._connections.values() if c.deadline <= now]:
            self._finish(connection, answer(408, "The request took too long."))

    def _accept(self, listener: socket.socket) -> None:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError:
            log.warning("OAuth callback: accept failed", exc_info=True)
            return
        if len(self._connections) >= MAX_CONNECTIONS:  # the oldest goes (insertion order)
            self._finish(next(iter(self._connections.values())), answer(408, "The request took too long."))
        sock.setblocking(False)
        connection = _Connection(sock, time.monotonic() + HEAD_DEADLINE)
        self._connections[sock] = connection
        self._selector.register(sock, selectors.EVENT_READ)

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(MAX_HEAD_BYTES + 1 - len(connection.head))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client went away before its head was whole
            self._finish(connection, None)
            return
        connection.head += data
        if b"\r\n\r\n" in connection.head or b"\n\n" in connection.head:
            self._finish(connection, self._answer(bytes(connection.head)))
        elif len(connection.head) > MAX_HEAD_BYTES:
            self._finish(connection, answer(431, "The request is too large."))

    def _answer(self, head: bytes) -> bytes:
        request = parse_request_line(head)
        if request is None:
            return answer(400, "Bad request.")
        method, path, query = request
        if method != "GET":
            return answer(405, "Only GET is served here.")
        try:
            status, text = self._respond(path, query)
        except Exception:
            log.warning("OAuth callback: a request failed", exc_info=True)
            return answer(500, "The login callback failed; start the login again.")
        return answer(status, text)

    def _finish(self, connection: _Connection, response: bytes | None) -> None:
        """Send `response` (if any) and close the connection."""
        sock = connection.sock
        self._connections.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(sock)
        if response is not None:
            try:
                sock.settimeout(SEND_TIMEOUT)
                sock.sendall(response)
                sock.shutdown(socket.SHUT_WR)
                sock.setblocking(False)
                while sock.recv(65536):  # what arrived unread would make the close a reset
                    pass
            except OSError:
                pass
        sock.close()

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def close(self) -> None:
        for connection in list(self._connections.values()):
            self._finish(connection, None)
        self._selector.close()
        for sock in self._listeners:
            sock.close()
        self._wake_r.close()
        self._wake_w.close()
