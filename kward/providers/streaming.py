"""The request/stream/retry loop shared by every HTTP provider.

A concrete provider supplies three things: `_prepare` (URL, headers, JSON body for one
attempt), `_assembler` (turns SSE events into sink calls and a `ModelResponse`) and
`_http_error` (classifies a non-2xx response). `StreamingProvider.complete` does the rest:
credentials per attempt, the POST, one re-authorization on 401 when the provider has a
hook for it, SSE parsing, retries through `retry.run_with_retries`, and cancellation.
HTTP goes through the injected `http=` transport (`kward.providers.http.HttpTransport`;
an `HttpClient` by default).

After the terminal event the rest of the body is drained so the connection can go back to
the pool, but at most `DRAIN_MAX_BYTES` and `DRAIN_TIMEOUT` seconds in all; past either
the connection is dropped instead (a server trickling bytes cannot keep the turn open).
An SSE line or event over `sse.MAX_LINE_BYTES` ends the attempt with a retryable error.

Partial output is never duplicated: once a delta reached the sink, a failure of that
attempt is final (not retried), since the sink cannot take deltas back.

Thread contract: `complete` runs on the calling (turn's) thread and blocks; a provider
object is shared by many sessions and keeps no per-request state on `self` (the
`HttpClient` is thread-safe; everything else is local to the call). Cancellation comes
from the `CancelToken`, fired on another thread.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from kward.cancel import CancelToken
from kward.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    ProviderSetup,
    StreamSink,
    ToolCall,
    Usage,
)
from kward.providers.http import (
    HttpClient,
    HttpTransport,
    ResponseStream,
    TransportError,
)
from kward.providers.retry import run_with_retries, transport_failure
from kward.providers.settings import ProviderSettings
from kward.providers.sse import SSEError, SSEEvent, SSEParser

log = logging.getLogger(__name__)

DRAIN_TIMEOUT = 2.0  # after the final event, wait at most this long in all for the body's end
DRAIN_MAX_BYTES = 256 * 1024  # ... and read at most this much of it


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """One attempt's HTTP request. `headers` must not be logged unredacted."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]  # the JSON body
    secrets: tuple[str, ...] = ()  # credential values scrubbed from any error message


@dataclass(slots=True)
class Assembler:
    """Collects one streamed answer; owned by the request's thread.

    Subclasses implement `on_event` (return True at the terminal event) and may override
    `finish`. `emitted` turns True with the first delta delivered to the sink.
    """

    provider: str
    model: str
    sink: StreamSink
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # ModelResponse.message_extras (JSON)
    emitted: bool = False
    done: bool = False

    def emit_text(self, delta: str) -> None:
        if delta:
            self.emitted = True
            self.text.append(delta)
            self.sink.text_delta(delta)

    def emit_reasoning(self, delta: str) -> None:
        if delta:
            self.emitted = True
            self.reasoning.append(delta)
            self.sink.reasoning_delta(delta)

    def on_event(self, event: SSEEvent) -> bool:
        raise NotImplementedError

    def end_of_stream(self) -> None:
        """The body ended. Raise ProviderError when the terminal event never came."""
        if not self.done:
            raise ProviderError(
                f"{self.provider} stream ended before the response was complete. Try again.",
                provider=self.provider, kind="stream_incomplete", retryable=True,
                data={"provider": self.provider, "kind": "stream_incomplete"})

    def finish(self) -> ModelResponse:
        return ModelResponse(text="".join(self.text), reasoning="".join(self.reasoning),
                             tool_calls=list(self.tool_calls), usage=self.usage,
                             provider=self.provider, model=self.model, message_extras=dict(self.extras))


@dataclass(slots=True)
class _CallState:
    """Per-call state shared by the attempts of one `complete` call (one thread)."""

    reauthorized: bool = False
    secrets: tuple[str, ...] = ()


def http_settings(setup: ProviderSetup) -> ProviderSettings:
    """The HTTP settings selection gives every provider whose spec has a base URL
    (`kward.providers.settings.for_provider`); ValueError for a spec that names a streaming
    provider without one (a mistake in `kward.providers.specs`)."""
    if setup.settings is None:
        raise ValueError("a streaming provider's spec needs a base_url (kward.providers.specs)")
    return setup.settings


def _scrub(err: ProviderError, secrets: tuple[str, ...]) -> None:
    """Remove literal credential values from an error (servers sometimes echo them)."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in err.message:
            err.message = err.message.replace(secret, "[REDACTED]")
            err.args = (err.message,)


class StreamingProvider(Provider):
    """Base of Codex, OpenRouter and OpenAICompatible. See the module docstring."""

    auth_hint = "Check your credentials."
    no_base_url = "No base URL is configured for this provider."

    def __init__(self, settings: ProviderSettings, *, http: HttpTransport | None = None):
        self.settings = settings
        self.http: HttpTransport = http or HttpClient(user_agent=settings.user_agent)

    @property
    def base_url(self) -> str:
        """The configured base URL without a trailing slash; `invalid_config` when none is."""
        base = self.settings.base_url
        if not base:
            raise ProviderError(self.no_base_url, provider=self.name, kind="bad_request", reason="invalid_config",
                                data={"provider": self.name, "kind": "bad_request"})
        return base.rstrip("/")

    # --- hooks ------------------------------------------------------------------------

    def _prepare(self, request: ModelRequest) -> PreparedRequest:
        raise NotImplementedError

    def _assembler(self, request: ModelRequest, sink: StreamSink) -> Assembler:
        raise NotImplementedError

    def _http_error(self, status: int, headers: dict[str, str], body: str) -> ProviderError:
        raise NotImplementedError

    def _reauthorize(self) -> bool:
        """Called once per request after a 401; True when fresh credentials are available."""
        return False

    # --- the loop ---------------------------------------------------------------------

    def complete(self, request: ModelRequest, sink: StreamSink, cancel: CancelToken) -> ModelResponse:
        """Stream one model answer; see the module docstring for the thread contract."""
        cancel.raise_if_cancelled()
        state = _CallState()

        def attempt(number: int) -> ModelResponse:
            try:
                return self._attempt(request, sink, cancel, state)
            except ProviderError as err:
                _scrub(err, state.secrets)
                raise

        return run_with_retries(attempt, policy=self.settings.retry, provider=self.name,
                                model=request.model, sink=sink, cancel=cancel)

    def _attempt(self, request: ModelRequest, sink: StreamSink, cancel: CancelToken,
                 state: _CallState) -> ModelResponse:
        while True:
            prepared = self._prepare(request)
            state.secrets = prepared.secrets
            try:
                stream = self.http.open_stream(
                    prepared.url, headers=prepared.headers, body=prepared.body, cancel=cancel,
                    connect_timeout=self.settings.connect_timeout, idle_timeout=self.settings.idle_timeout)
            except TransportError as exc:
                raise transport_failure(self.name, str(exc), timeout=exc.timeout) from None
            with stream:
                if stream.status == 401 and not state.reauthorized:
                    state.reauthorized = True
                    body = _error_body(stream)
                    if self._reauthorize():
                        log.info("%s answered 401; retrying with refreshed credentials", self.name)
                        continue
                    raise self._http_error(401, stream.headers, body)
                if not 200 <= stream.status < 300:
                    raise self._error_from_response(stream)
                return self._read_stream(stream, request, sink)

    def _error_from_response(self, stream: ResponseStream) -> ProviderError:
        body = _error_body(stream)
        request_id = stream.headers.get("x-request-id") or stream.headers.get("x-oai-request-id")
        log.warning("%s answered HTTP %s%s", self.name, stream.status,
                    f" (request id {request_id})" if request_id else "")
        return self._http_error(stream.status, stream.headers, body)

    def _read_stream(self, stream: ResponseStream, request: ModelRequest, sink: StreamSink) -> ModelResponse:
        asm = self._assembler(request, sink)
        parser = SSEParser()
        chunks = stream.chunks()
        try:
            try:
                # One generator for the whole body: abandoning it closes the connection.
                # After the terminal event the rest is drained (bounded) so that the
                # connection can go back to the pool.
                drain: _Drain | None = None
                for chunk in chunks:
                    if drain is not None:
                        if not drain.more(len(chunk), stream):
                            log.debug("%s: dropping a connection that kept sending after the final event",
                                      self.name)
                            break
                        continue
                    for event in parser.feed(chunk):
                        if asm.on_event(event):
                            asm.done = True
                            break
                    if asm.done:
                        drain = _Drain(time.monotonic() + DRAIN_TIMEOUT, DRAIN_MAX_BYTES)
                        stream.set_read_timeout(DRAIN_TIMEOUT)
                if not asm.done:
                    for event in parser.close():
                        if asm.on_event(event):
                            asm.done = True
                            break
            except TransportError as exc:
                if not asm.done:
                    raise transport_failure(self.name, str(exc), timeout=exc.timeout) from None
                log.debug("%s: the body did not end cleanly after the final event: %s", self.name, exc)
            except SSEError as exc:
                raise ProviderError(f"{self.name} sent a malformed stream ({exc}). Try again.",
                                    provider=self.name, kind="stream_incomplete", retryable=True,
                                    data={"provider": self.name, "kind": "stream_incomplete"}) from None
            finally:
                chunks.close()
            asm.end_of_stream()
        except ProviderError as err:
            if asm.emitted:
                err.retryable = False  # the sink already showed partial output
            raise
        return asm.finish()


def _error_body(stream: ResponseStream) -> str:
    """The start of an error response's body; a note when it cannot be read."""
    try:
        return stream.read_text(64 * 1024)
    except TransportError as exc:
        return f"(the error body could not be read: {exc})"


@dataclass(slots=True)
class _Drain:
    """The budget for reading a body's rest after its terminal event."""

    deadline: float
    left: int

    def more(self, size: int, stream: ResponseStream) -> bool:
        """Count `size` more bytes; False when the budget is spent (drop the connection).
        Otherwise the next read may wait only for what is left of the time."""
        self.left -= size
        remaining = self.deadline - time.monotonic()
        if self.left < 0 or remaining <= 0:
            return False
        stream.set_read_timeout(remaining)
        return True
