"""A scriptable loopback HTTP server: the shared core of the fake Codex and OpenRouter servers.

Real HTTP on 127.0.0.1, port 0 (`http.server.ThreadingHTTPServer`, HTTP/1.1, chunked
streaming). Every request is recorded (`RecordedRequest`: method, path, query,
lower-cased headers, raw body and parsed JSON) and answered by the next `Scenario`
scripted for its route (FIFO), by the route's default, or with
`500 {"error":{"message":"no scenario scripted"}}` so unscripted calls fail loudly.

A `Scenario` describes one answer: status, headers, a plain body or a list of streamed
pieces, and knobs that exercise client pitfalls: `crlf` (CRLF line ends), `split`
(re-chunk the byte stream into pieces of these sizes, e.g. `(1, 2, 3)`, one flushed
HTTP chunk each, so lines, CRLF pairs and UTF-8 characters are split), `delay` between
pieces, and `end`: "complete", "drop" (abort the socket without the final chunk),
"hang" (send the pieces, then wait until the client goes away or the server stops) or
"hang_before_headers".

Usage (`served(FakeCodex)` is the same as a pytest fixture)::

    with FakeCodex() as fake:
        fake.script("responses", codex.text(["Hel", "lo"]), codex.text(["again"]))
        ...  # point the client at fake.base_url
        req = fake.wait_requests(1)[0]
        assert req.json["model"] == "gpt-5.5"

Threads: `serve_forever` runs on a daemon thread owned by the server object; each
connection gets a daemon handler thread. `stop()` sets the release event (ending every
hang within ~50 ms), shuts the loop down (within `POLL_SECONDS`, which every test that
uses a fake waits at its end) and closes the socket; it never waits on a handler.
Scripts and records are guarded by one lock.
"""

from __future__ import annotations

import dataclasses
import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Union
from urllib.parse import parse_qs, urlsplit

__all__ = ["Scenario", "RecordedRequest", "FakeServer", "json_response", "hang_before_headers", "served"]


@dataclass
class Scenario:
    """One scripted answer. Build with the factories of fake_codex / fake_openrouter."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # a plain (Content-Length) body; None = stream `pieces`
    pieces: list[bytes] = field(default_factory=list)  # streamed body, one chunk per piece
    end: str = "complete"  # complete | drop | hang | hang_before_headers
    crlf: bool = False
    split: Union[int, tuple[int, ...], None] = None
    delay: float = 0.0
    ping: bytes | None = None  # while hanging, send this piece every `ping_every` seconds
    ping_every: float = 0.2
    name: str = ""

    def with_(self, **changes: Any) -> "Scenario":
        """A copy with knobs changed, e.g. `text(["a"]).with_(crlf=True, split=(1, 2, 3))`."""
        return dataclasses.replace(self, **changes)

    def stream_pieces(self) -> list[bytes]:
        """The body pieces after applying `crlf` and `split`."""
        pieces = [p.replace(b"\n", b"\r\n") for p in self.pieces] if self.crlf else list(self.pieces)
        if not self.split:
            return pieces
        sizes = (self.split,) if isinstance(self.split, int) else tuple(self.split)
        data, out, i, k = b"".join(pieces), [], 0, 0
        while i < len(data):
            n = max(1, sizes[k % len(sizes)])
            out.append(data[i:i + n])
            i, k = i + n, k + 1
        return out


Responder = Union[Scenario, Callable[["RecordedRequest"], Scenario]]


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Scenario:
    """A plain JSON answer (Content-Length body)."""
    body = json.dumps(payload).encode("utf-8")
    return Scenario(status=status, headers={"Content-Type": "application/json", **(headers or {})},
                    body=body, name=f"json {status}")


def hang_before_headers() -> Scenario:
    """No status line at all until the client disconnects or the server stops."""
    return Scenario(end="hang_before_headers", name="hang_before_headers")


@dataclass
class RecordedRequest:
    """What the server received, plus what happened while answering."""

    route: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: Any
    scenario: str = ""
    client_port: int = 0  # the client's source port: equal ports = a reused connection
    t: float = field(default_factory=time.monotonic)
    disconnected: threading.Event = field(default_factory=threading.Event)  # client went away
    finished: threading.Event = field(default_factory=threading.Event)  # handler done answering

    @property
    def bearer(self) -> str | None:
        """The credential of an `Authorization: Bearer ...` header (None without one)."""
        value = self.headers.get("authorization", "")
        return value[len("Bearer "):] if value.startswith("Bearer ") else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"
    timeout = 30  # idle keep-alive connections end eventually

    def setup(self) -> None:
        super().setup()
        # Like real streaming servers: no Nagle delay between small SSE writes.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        url = urlsplit(self.path)
        route = fake.route_for(self.command, url.path)
        record = RecordedRequest(route=route or "", method=self.command, path=url.path,
                                 query=parse_qs(url.query), headers={k.lower(): v for k, v in self.headers.items()},
                                 body=body, json=parsed, client_port=self.client_address[1])
        scenario = fake._next(route, record)
        record.scenario = scenario.name
        fake._record(record)
        try:
            self._play(scenario, record)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            record.disconnected.set()
            self.close_connection = True
        finally:
            record.finished.set()

    def _play(self, sc: Scenario, record: RecordedRequest) -> None:
        if sc.end == "hang_before_headers":
            self._hang(record, None, 0)
            self.close_connection = True
            return
        self.send_response(sc.status)
        if sc.body is not None:
            for name, value in sc.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(sc.body)))
            self.end_headers()
            self.wfile.write(sc.body)
            self.wfile.flush()
            return
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **sc.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i, piece in enumerate(sc.stream_pieces()):
            if i and sc.delay:
                if self.server.fake.release.wait(sc.delay):
                    break
            self._chunk(piece)
        if sc.end == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if sc.end == "hang":
            self._hang(record, sc.ping, sc.ping_every)
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, piece: bytes) -> None:
        if piece:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()

    def _hang(self, record: RecordedRequest, ping: bytes | None, every: float) -> None:
        """Wait until the client disconnects or the server is stopped (50 ms steps)."""
        release = self.server.fake.release
        next_ping = time.monotonic() + every
        while not release.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    data = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    record.disconnected.set()
                    return
                release.wait(0.05)  # the client sent bytes early; keep waiting
            if ping and time.monotonic() >= next_ping:
                self._chunk(ping)
                next_ping = time.monotonic() + every


POLL_SECONDS = 0.005  # how often the serving loop looks for stop()'s request


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: "FakeServer"


class FakeServer:
    """Base of the fakes: routes, scripts, records, start/stop. Subclasses set `ROUTES`
    ({(method, path): route}) and `PREFIX` (the base URL path), and may override `default`."""

    ROUTES: dict[tuple[str, str], str] = {}
    PREFIX = ""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Responder]] = {}
        self._records: list[RecordedRequest] = []
        self._arrived = threading.Condition(self._lock)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> "FakeServer":
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": POLL_SECONDS},
                                        name=f"{type(self).__name__}-serve", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging handlers, stop serving, close the socket. Idempotent."""
        self.release.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.origin + self.PREFIX

    # --- scripting and records ----------------------------------------------------------

    def script(self, route: str, *answers: Responder) -> None:
        """Queue answers for `route`; each is a Scenario or a callable(record) -> Scenario."""
        if route not in self.ROUTES.values():
            raise ValueError(f"unknown route {route!r}; routes: {sorted(set(self.ROUTES.values()))}")
        with self._lock:
            self._scripts.setdefault(route, []).extend(answers)

    def pending(self, route: str) -> int:
        with self._lock:
            return len(self._scripts.get(route, []))

    def requests(self, route: str | None = None) -> list[RecordedRequest]:
        """Recorded requests (all, or of one route) in arrival order."""
        with self._lock:
            return [r for r in self._records if route is None or r.route == route]

    def wait_requests(self, count: int, route: str | None = None, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `count` requests (of `route`) arrived; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                found = [r for r in self._records if route is None or r.route == route]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} requests, got {len(found)}")
                self._arrived.wait(left)

    def route_for(self, method: str, path: str) -> str | None:
        return self.ROUTES.get((method, path.rstrip("/") or "/"))

    def default(self, route: str | None, record: RecordedRequest) -> Scenario | None:
        """The answer when nothing is scripted for `route` (None = fail loudly)."""
        return None

    def _next(self, route: str | None, record: RecordedRequest) -> Scenario:
        if route is None:
            return json_response(404, {"error": {"message": f"no route {record.method} {record.path}"}})
        with self._lock:
            queue = self._scripts.get(route)
            answer = queue.pop(0) if queue else None
        if answer is None:
            answer = self.default(route, record)
        if answer is None:
            return json_response(500, {"error": {"message": "no scenario scripted"}})
        return answer(record) if callable(answer) else answer

    def _record(self, record: RecordedRequest) -> None:
        with self._arrived:
            self._records.append(record)
            self._arrived.notify_all()


def served(server_class: type[FakeServer], **kwargs: Any) -> Any:
    """A pytest fixture serving a `server_class(**kwargs)` for one test: started before
    it, stopped after it. Bind it to the fixture's name in the test module:
    ``fake = served(FakeCodex)``."""
    import pytest

    @pytest.fixture
    def serve() -> Iterator[FakeServer]:
        with server_class(**kwargs) as server:
            yield server

    return serve
