"""The Streamable HTTP transport: every message kward sends is its own POST to the
server's one endpoint; the server answers a request with one JSON object or with an SSE
stream (which may carry its notifications, e.g. progress, before the answer), and a
notification or response with 202 Accepted.

The ``Mcp-Session-Id`` the server gives with its ``initialize`` answer is sent with every
later POST, and the negotiated ``MCP-Protocol-Version`` too; a 404 to a POST that carried
the session id means the server ended the session: the connection is lost (the owner
connects again). The configured headers and the caller's (``traceparent``) go with every
POST. `close()` ends the session with a DELETE (best effort) and stops every POST.

`requests` is imported on the first POST only (`kward.providers.http.HttpClient`, whose
cancel shuts the request's socket down, so an abandoned or closed stream ends at once).

Thread contract: `send` returns at once; each POST runs on a thread of its own
(``kward-mcp-http``), which delivers what it reads to `receive`. `_lock` guards the
session id, the threads and the cancel tokens of the POSTs; `close()` cancels them all and
joins their threads.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Mapping

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.mcp.client import Lost, McpError, Receive
from kward.providers.sse import SSEError, SSEParser
from kward.redact import redact_text

log = logging.getLogger("kward.mcp")

CONNECT_TIMEOUT = 10.0
MAX_BODY_BYTES = 16 * 1024 * 1024
JOIN_SECONDS = 2.0


def shown_url(url: str) -> str:
    """`url` as messages and logs show it: scheme, host and path (a query or user info may
    hold a key: ``?exaApiKey=...``)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an MCP endpoint)"
    return f"{parts.scheme}://{host}{port}{parts.path}"


class HttpTransport:
    kind = "http"

    def __init__(self, url: str, headers: Mapping[str, str], *, idle_timeout: float = 300.0):
        from kward import __version__
        from kward.providers.http import HttpClient

        self._url = url
        self._headers = dict(headers)
        self._idle_timeout = idle_timeout
        self._http = HttpClient(pool_maxsize=8, user_agent=f"kward/{__version__}")
        self._lock = threading.Lock()
        self._session_id: str | None = None
        self._version: str | None = None
        self._posts: dict[threading.Thread, tuple[CancelToken, object]] = {}  # thread -> (cancel, request id)
        self._receive: Receive | None = None
        self._lost: Lost | None = None
        self._closed = False

    def start(self, receive: Receive, lost: Lost) -> None:
        self._receive, self._lost = receive, lost

    def set_protocol_version(self, version: str) -> None:
        self._version = version

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str] | None = None) -> None:
        """A request is POSTed on a thread of its own (its answer may stream); a notification
        or a response is POSTed before this returns, so what follows it reaches the server
        after it (``notifications/initialized`` before ``tools/list``)."""
        if not ("method" in message and "id" in message):
            with self._lock:
                if self._closed:
                    raise McpError("the connection was closed")
            self._post(message, dict(headers or {}), CancelToken(), own_thread=False)
            return
        token = CancelToken()
        thread = threading.Thread(target=self._post, args=(message, dict(headers or {}), token),
                                  name="kward-mcp-http", daemon=True)
        with self._lock:
            if self._closed:
                raise McpError("the connection was closed")
            request_id = message.get("id") if "method" in message else None
            self._posts[thread] = (token, request_id)
        thread.start()

    def abandon(self, request_id: int) -> None:
        with self._lock:
            tokens = [token for token, rid in self._posts.values() if rid == request_id]
        for token in tokens:
            token.cancel()

    def _post(self, message: dict[str, Any], headers: dict[str, str], token: CancelToken, *,
              own_thread: bool = True) -> None:
        try:
            self._exchange(message, headers, token)
        except Canceled:
            pass
        except Exception as exc:  # a bug here must not take the thread's caller down
            log.exception("MCP POST to %s failed", shown_url(self._url))
            self._fail(message, f"kward could not read the answer: {type(exc).__name__}")
        finally:
            if own_thread:
                with self._lock:
                    self._posts.pop(threading.current_thread(), None)

    def _exchange(self, message: dict[str, Any], headers: dict[str, str], token: CancelToken) -> None:
        from kward.providers.http import TransportError

        h = {"Accept": "application/json, text/event-stream", **self._headers, **headers}
        with self._lock:
            if self._session_id is not None:
                h["Mcp-Session-Id"] = self._session_id
            if self._version is not None:
                h["MCP-Protocol-Version"] = self._version
        sent_session = "Mcp-Session-Id" in h
        try:
            stream = self._http.open_stream(self._url, headers=h, body=message, cancel=token,
                                            connect_timeout=CONNECT_TIMEOUT, idle_timeout=self._idle_timeout)
        except TransportError as exc:
            self._fail(message, f"could not connect to {shown_url(self._url)}" if exc.phase == "connect"
                       else redact_text(str(exc)))
            return
        with stream:
            status = stream.status
            session = stream.headers.get("mcp-session-id")
            if session and message.get("method") == "initialize" and status < 300:
                with self._lock:
                    self._session_id = session[:1024]
            if status == 404 and sent_session:
                if self._lost is not None:
                    self._lost("the server ended the session (HTTP 404)")
                return
            if status >= 400:
                body = " ".join(stream.read_text(2048).split())[:300]
                self._fail(message, f"HTTP {status}" + (f": {body}" if body else ""))
                return
            if status in (202, 204):
                self._fail(message, f"HTTP {status} without an answer")
                return
            kind = stream.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind == "text/event-stream":
                error = self._read_events(stream, message.get("id"))
                if error is not None:
                    self._fail(message, error)
                    return
            elif kind == "application/json":
                body = stream.read_text(MAX_BODY_BYTES + 1)
                if len(body) > MAX_BODY_BYTES:
                    self._fail(message, f"an answer larger than {MAX_BODY_BYTES} bytes")
                    return
                try:
                    self._deliver(json.loads(body))
                except ValueError:
                    self._fail(message, "an answer that is not JSON")
                    return
            else:
                self._fail(message, f"an answer of type {kind[:60] or 'none'}")
                return
        self._fail(message, "the server ended the answer without a result")

    def _read_events(self, stream: Any, request_id: object) -> str | None:
        """Deliver the stream's messages until the answer to `request_id` came (the stream
        is left then: a server may keep it open) or it ended; the error text when it broke."""
        from kward.providers.http import TransportError

        parser = SSEParser(max_line=MAX_BODY_BYTES)
        try:
            for chunk in stream.chunks():
                for event in parser.feed(chunk):
                    if self._event(event.data, request_id):
                        return None
            for event in parser.close():
                self._event(event.data, request_id)
        except SSEError as exc:
            log.warning("MCP server %s: %s", shown_url(self._url), exc)
            return str(exc)
        except TransportError as exc:
            return f"the answer broke off: {exc}"
        return None

    def _event(self, data: str, request_id: object) -> bool:
        """Deliver one event's message; True when it answered `request_id`."""
        if not data.strip():
            return False
        try:
            message = json.loads(data)
        except ValueError:
            log.warning("MCP server %s sent an event that is not JSON", shown_url(self._url))
            return False
        self._deliver(message)
        return isinstance(message, dict) and message.get("id") == request_id and "method" not in message

    def _deliver(self, message: Any) -> None:
        if self._receive is not None:
            self._receive(message)

    def _fail(self, message: dict[str, Any], text: str) -> None:
        """The POST of `message` got no usable answer: a request's caller gets `text`
        as its error (ignored when its answer came already)."""
        if "method" in message and "id" in message and self._receive is not None:
            self._receive({"jsonrpc": "2.0", "id": message["id"], "error": {"message": text}})
        elif "method" not in message or "id" not in message:
            if not text.startswith("HTTP 20"):
                log.debug("MCP %s: %s", shown_url(self._url), text)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            session, posts = self._session_id, dict(self._posts)
        for token, _ in posts.values():
            token.cancel()
        current = threading.current_thread()  # (a POST's own thread closes when it learns the session ended)
        for thread in posts:
            if thread is not current:
                thread.join(JOIN_SECONDS)
        if session is not None:
            headers = {**self._headers, "Mcp-Session-Id": session}
            if self._version is not None:
                headers["MCP-Protocol-Version"] = self._version
            try:
                self._http.session.delete(self._url, headers=headers, timeout=2.0, allow_redirects=False)
            except Exception:  # the server may be gone: nothing to end
                log.debug("MCP DELETE %s failed", shown_url(self._url))
        self._http.close()
