"""HTTP transport for the providers: a pooled `requests.Session`, streaming POSTs that
read raw bytes, an idle-read timeout, and cancellation that interrupts a blocked read.

`requests` is imported lazily, inside functions only, so `import kward.providers.*` stays
cheap (kward must start without importing it).

Cancellation: closing a response does not unblock a thread blocked in a
socket read; shutting the socket down does. Every request runs with a
`tracking.Inflight` record that the pool's connections report to (see
``kward.providers.tracking``), so a cancel shuts down the socket of the request, from the
TLS handshake to the end of the body, and never touches a pooled connection.

The seam: a streaming provider takes any `HttpTransport` (`http=`; `HttpClient` is the
real one, tools/bench_providers.py passes a timed one), whose `open_stream` answers a
`ResponseStream` (`HttpStream`).

Thread contract: an `HttpClient` is shared by every thread of a provider; its session is
created once under `_lock` and used concurrently (one connection per request from the
pool). An `HttpStream` belongs to the thread that opened it; `Inflight.abort` may run on
any thread (the cancelling one) and only takes the record's own lock.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator, Mapping, Protocol

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.providers import tracking
from kward.providers.tracking import Inflight
from kward.redact import redact_text

if TYPE_CHECKING:  # pragma: no cover - `requests` is imported on first use only
    import requests

log = logging.getLogger(__name__)

__all__ = ["HttpClient", "HttpResult", "HttpStream", "HttpTransport", "ResponseStream", "TransportError"]

READ_SIZE = 65536
ERROR_BODY_LIMIT = 256 * 1024

class TransportError(Exception):
    """The request failed below HTTP: connect failure, reset, idle timeout, cut body.

    `timeout` is True for connect/idle timeouts; `phase` is "connect", "headers" or "body".
    The message never contains credentials (requests' messages hold only host and path).
    """

    def __init__(self, message: str, *, timeout: bool = False, phase: str = "body"):
        super().__init__(message)
        self.timeout = timeout
        self.phase = phase


@dataclass(frozen=True, slots=True)
class HttpResult:
    """A complete (non-streamed) response: status, lower-cased headers, body text/JSON."""

    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        """The body decoded as JSON (any JSON value); ValueError when it is not JSON."""
        return json.loads(self.text)


class ResponseStream(Protocol):
    """An open streamed response, owned by the thread that opened it: its status and
    lower-cased headers, then the body. A context manager; `close()` is idempotent."""

    status: int
    headers: dict[str, str]

    def __enter__(self) -> ResponseStream: ...

    def __exit__(self, *exc: object) -> None: ...

    def chunks(self) -> Generator[bytes, None, None]:
        """Body bytes as they arrive; closing the generator abandons the body. Raises
        `Canceled` or `TransportError` (idle timeout, broken connection)."""
        ...

    def set_read_timeout(self, seconds: float) -> None: ...

    def read_text(self, limit: int = ...) -> str: ...

    def close(self) -> None: ...


class HttpTransport(Protocol):
    """What a streaming provider and the model listings need of HTTP (`HttpClient`).
    Shared by every thread of a provider."""

    def open_stream(self, url: str, *, headers: Mapping[str, str], body: dict[str, Any], cancel: CancelToken,
                    connect_timeout: float = ..., idle_timeout: float = ...) -> ResponseStream:
        """POST `body` as JSON; the open response once its headers arrived (any status)."""
        ...

    def get(self, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = ...,
            cancel: CancelToken | None = None, limit: int = ...) -> HttpResult:
        """GET `url` and read the whole body; HTTP error statuses are returned, not raised."""
        ...


class HttpStream:
    """An open streamed response (a `ResponseStream`). Use as a context manager; read with
    `chunks()`.

    Owned by the thread that opened it. `close()` is idempotent and returns the
    connection to the pool (or discards it when the body was not fully read).
    """

    def __init__(self, resp: requests.Response, inflight: Inflight, unregister: Callable[[], None],
                 idle_timeout: float):
        self._resp = resp
        self._inflight = inflight
        self._unregister = unregister
        self._idle_timeout = idle_timeout
        self.status: int = resp.status_code
        self.headers: dict[str, str] = {k.lower(): v for k, v in resp.headers.items()}
        self._closed = False

    def __enter__(self) -> HttpStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self) -> Generator[bytes, None, None]:
        """Yield body bytes as they arrive (one HTTP chunk at a time for chunked bodies).

        Raises `Canceled` when the cancel token fired, `TransportError` on an idle timeout
        (no byte for `idle_timeout` seconds) or a broken connection.
        """
        raw = self._resp.raw
        try:
            if raw.chunked and raw.supports_chunked_reads():
                for data in raw.read_chunked(READ_SIZE, decode_content=True):
                    if data:
                        yield data
            else:  # Content-Length or close-delimited body: read1 returns what is there
                read = getattr(raw, "read1", None) or raw.read
                while True:
                    data = read(READ_SIZE, decode_content=True)
                    if not data:
                        break
                    yield data
        except Exception as exc:
            if self._inflight.cancelled:
                raise Canceled("Canceled.") from None
            raise _transport_error(exc, "body", self._idle_timeout) from None
        if self._inflight.cancelled:
            raise Canceled("Canceled.")

    def set_read_timeout(self, seconds: float) -> None:
        """Shorten the idle timeout for the rest of this body (e.g. draining its end)."""
        conn = getattr(self._resp.raw, "connection", None)
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                sock.settimeout(seconds)
            except OSError:
                pass
        self._idle_timeout = seconds

    def read_text(self, limit: int = ERROR_BODY_LIMIT) -> str:
        """Read up to `limit` bytes of the body as text (for error responses)."""
        parts: list[bytes] = []
        size = 0
        for data in self.chunks():
            parts.append(data)
            size += len(data)
            if size >= limit:
                break
        return b"".join(parts)[:limit].decode("utf-8", "replace")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unregister()
        self._inflight.detach()
        try:
            self._resp.close()
        except Exception:  # a response torn down by a cancel may fail to close cleanly
            log.debug("closing a response failed", exc_info=True)


def _transport_error(exc: BaseException, phase: str, idle_timeout: float) -> TransportError:
    from requests import exceptions as rex
    from urllib3 import exceptions as uex

    text = redact_text(str(exc))
    if isinstance(exc, (rex.ConnectTimeout, uex.ConnectTimeoutError)):
        return TransportError(f"connection timed out ({text})", timeout=True, phase="connect")
    if isinstance(exc, (rex.ReadTimeout, uex.ReadTimeoutError, socket.timeout)):
        return TransportError(
            f"no data received for {idle_timeout:g} s while waiting for the "
            f"{'response' if phase == 'headers' else 'stream'}; the request was abandoned",
            timeout=True, phase=phase)
    if isinstance(exc, rex.ConnectionError) and "Connection refused" in text:
        return TransportError(f"could not connect ({text})", phase="connect")
    return TransportError(f"connection error ({type(exc).__name__}: {text})", phase=phase)


class HttpClient:
    """A requests.Session with a connection pool, shared by one provider's threads."""

    def __init__(self, *, pool_maxsize: int = 32, user_agent: str | None = None):
        self._pool_maxsize = pool_maxsize
        self._user_agent = user_agent
        self._session: requests.Session | None = None
        self._lock = threading.Lock()

    @property
    def session(self) -> requests.Session:
        """The shared session, created (and `requests` imported) on first use."""
        with self._lock:
            if self._session is None:
                import requests

                s = requests.Session()
                adapter = tracking.make_adapter(self._pool_maxsize)
                s.mount("http://", adapter)
                s.mount("https://", adapter)
                if self._user_agent:
                    s.headers["User-Agent"] = self._user_agent
                self._session = s
            return self._session

    def close(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def _send(self, method: str, url: str, *, headers: Mapping[str, str], data: bytes | None,
              stream: bool, timeout: tuple[float, float], cancel: CancelToken | None,
              idle_timeout: float) -> tuple[requests.Response, Inflight, Callable[[], None]]:
        session = self.session
        inflight = Inflight()
        unregister = cancel.on_cancel(inflight.abort) if cancel is not None else (lambda: None)
        if inflight.cancelled:
            unregister()
            raise Canceled("Canceled.")
        tracking.local.inflight = inflight
        try:
            resp = session.request(method, url, headers=dict(headers), data=data, stream=stream,
                                   timeout=timeout, allow_redirects=method == "GET")
        except Exception as exc:
            unregister()
            inflight.detach()
            if inflight.cancelled:
                raise Canceled("Canceled.") from None
            raise _transport_error(exc, "headers", idle_timeout) from None
        finally:
            tracking.local.inflight = None
        if inflight.responded(resp):  # cancelled between the headers and now: the socket may be intact
            unregister()
            inflight.detach()
            resp.close()
            raise Canceled("Canceled.")
        return resp, inflight, unregister

    def open_stream(self, url: str, *, headers: Mapping[str, str], body: dict[str, Any], cancel: CancelToken,
                    connect_timeout: float = 10.0, idle_timeout: float = 300.0) -> HttpStream:
        """POST `body` as JSON and return the open response (any status) once headers arrived.

        Called on the request's own (worker) thread; blocks until the headers arrive.
        Raises `Canceled` or `TransportError`. The caller must close the stream.
        """
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        h = {"Content-Type": "application/json", "Accept": "text/event-stream",
             "Accept-Encoding": "identity"}
        h.update(headers)
        resp, inflight, unregister = self._send("POST", url, headers=h, data=data, stream=True,
                                                timeout=(connect_timeout, idle_timeout),
                                                cancel=cancel, idle_timeout=idle_timeout)
        log.debug("POST %s -> %s", redact_text(url), resp.status_code)
        return HttpStream(resp, inflight, unregister, idle_timeout)

    def get(self, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0,
            cancel: CancelToken | None = None, limit: int = 64 * 1024 * 1024) -> HttpResult:
        """GET `url` and read the whole body (at most `limit` bytes). Any thread.

        Raises `Canceled` or `TransportError`; HTTP error statuses are returned, not raised.
        """
        h = {"Accept": "application/json"}
        h.update(headers or {})
        token = cancel if cancel is not None else CancelToken()
        resp, inflight, unregister = self._send("GET", url, headers=h, data=None, stream=True,
                                                timeout=(timeout, timeout), cancel=token,
                                                idle_timeout=timeout)
        stream = HttpStream(resp, inflight, unregister, timeout)
        with stream:
            text = stream.read_text(limit)
        log.debug("GET %s -> %s", redact_text(url), stream.status)
        return HttpResult(stream.status, stream.headers, text)
