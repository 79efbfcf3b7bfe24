"""The one-shot loopback HTTP listener that receives an OAuth redirect.

`CallbackServer` binds 127.0.0.1 only (so nothing but this machine can connect), on the
configured port (1455 by default; when that is busy 1457, the other port OpenAI allows;
then any free port). Each GET is answered by the `respond(path, query)` callable the login
passes in, which returns (HTTP status, plain text for the page); every answer is a small
HTML page sent with ``Connection: close``. Nothing is written to stderr: the request log
is silenced and a failing request is logged (to the log file) instead of printed.

Thread contract: owned by one login's thread, which calls `handle_one` in a loop (each
call waits up to `timeout` seconds for one request and answers it on that thread) and
`close` at the end. `wake()` may be called from any thread: it ends the current wait at
once (the login was finished elsewhere). A client that connects and sends nothing is
dropped after `REQUEST_TIMEOUT` seconds.
"""

from __future__ import annotations

import contextlib
import errno
import html
import logging
import selectors
import socket
import socketserver
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Callable
from urllib.parse import urlsplit

from kward.auth.oauth import DEFAULT_PORT, FALLBACK_PORT

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
REQUEST_TIMEOUT = 5.0

Responder = Callable[[str, str], "tuple[int, str]"]


def page(text: str) -> bytes:
    """A plain page showing `text` (escaped)."""
    body = html.escape(text)
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kward</title></head>"
            f"<body><p>{body}</p></body></html>\n").encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    server_version = "kward"
    sys_version = ""
    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: object) -> None:  # the request line holds the code
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        status, text = self.server.respond(url.path, url.query)
        data = page(text)
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True


class _Server(HTTPServer):
    respond: Responder

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN (a DNS lookup); not needed here.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: object, client_address: object) -> None:
        log.warning("OAuth callback: a request failed", exc_info=True)


def _candidates(preferred: int) -> list[int]:
    ports = [preferred] if preferred else []
    if preferred == DEFAULT_PORT:
        ports.append(FALLBACK_PORT)
    return ports + [0]


class CallbackServer:
    """See the module docstring. Raises OSError when no port can be bound at all."""

    def __init__(self, respond: Responder, preferred_port: int):
        last: OSError | None = None
        for port in _candidates(preferred_port):
            try:
                httpd = _Server((HOST, port), _Handler)
            except OSError as exc:
                if exc.errno not in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
                    raise
                last = exc
                continue
            httpd.respond = respond
            self._httpd = httpd
            self._wake_r, self._wake_w = socket.socketpair()
            self._wake_w.setblocking(False)
            self._selector = selectors.DefaultSelector()  # not select(): fds past 1024 work too
            self._selector.register(httpd.socket, selectors.EVENT_READ)
            self._selector.register(self._wake_r, selectors.EVENT_READ)
            if port != preferred_port and preferred_port:
                log.info("OAuth callback: port %d is busy; listening on %d", preferred_port, self.port)
            return
        assert last is not None
        raise last

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def port(self) -> int:
        return self.address[1]

    def handle_one(self, timeout: float) -> None:
        """Answer at most one request, waiting up to `timeout` seconds (or a `wake`) for it."""
        readable = [key.fileobj for key, _ in self._selector.select(max(0.0, timeout))]
        if self._wake_r in readable:
            with contextlib.suppress(OSError):
                self._wake_r.recv(64)
        if self._httpd.socket in readable:
            self._httpd.timeout = 0.0
            self._httpd.handle_request()

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def close(self) -> None:
        self._selector.close()
        self._httpd.server_close()
        self._wake_r.close()
        self._wake_w.close()
