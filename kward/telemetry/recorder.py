"""A turn's telemetry: what records its model requests, tool calls and the turn itself.

`TurnRecorder(log, categories, headers)` is made per turn with the categories enabled at
its start. The engine passes its provider and tool registry through `provider()` and
`tools()` and runs the turn inside `turn()`; with no category that needs them they come
back unchanged, so a turn with telemetry off pays nothing but the check of the
categories (`kward.runtime.telemetry` then hands out no recorder at all).

Model requests (a wrapper around `Provider.complete`): each attempt ends in a
`performance/model_request` record (`completed`, `failed` or `canceled`); a retry
(reported through the stream sink) adds `performance/model_retry` and `errors/model_retry`;
a final failure `errors/model_request_error`; a completed request with usage
`tokens/model_usage`. `request_bytes` is the size of the request's JSON (instructions,
messages, tools) as kward holds it, before the provider's own encoding.

A `TurnRecorder` is the engine's `kward.agent.plan.Recorder`; its wrappers are a
`Provider` and a `ToolRegistry` like the ones they wrap.

Thread contract: a recorder and its wrappers are used on the turn's worker thread only;
the log they write to is thread-safe.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from kward.cancel import CancelToken
from kward.errors import Canceled, KwardError
from kward.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    RetryInfo,
    StreamSink,
)
from kward.redact import redact_text
from kward.sessions.codec import encode, usage_record
from kward.telemetry.log import TelemetryLog
from kward.tools.base import ToolContext, ToolResult, ToolSpec
from kward.tools.registry import ToolRegistry

Payload = dict[str, object]  # the fields of a record (JSON values)

MESSAGE_CHARS = 500
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")


def trace_fields(headers: Mapping[str, str] | None) -> dict[str, str]:
    """`trace_id` and `parent_id` of a well-formed W3C traceparent header; {} otherwise."""
    value = (headers or {}).get("traceparent")
    match = _TRACEPARENT.match(value.strip().lower()) if isinstance(value, str) else None
    return {"trace_id": match.group(1), "parent_id": match.group(2)} if match else {}


def error_fields(exc: BaseException | str) -> Payload:
    """What a record says of an error: its class and either the provider and a code or a
    redacted message of at most MESSAGE_CHARS characters."""
    if isinstance(exc, str):
        return {"error_class": "ProviderError", "error_message": redact_text(exc)[:MESSAGE_CHARS]}
    out: Payload = {"error_class": type(exc).__name__}
    if isinstance(exc, ProviderError):
        code = exc.status or exc.kind
        out.update(provider=exc.provider, error_code=code, error_message=f"{exc.provider} request failed: {code}")
    else:
        text = exc.message if isinstance(exc, KwardError) else str(exc)
        out["error_message"] = redact_text(text)[:MESSAGE_CHARS]
    if isinstance(exc, KwardError):
        out["reason"] = exc.reason
    return out


def _ms(start: float) -> float:
    return max(0.0, round((time.monotonic() - start) * 1000, 1))


def request_bytes(request: ModelRequest) -> int:
    body = [request.instructions, [encode(m) for m in request.messages], request.tools]
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


class TurnRecorder:
    def __init__(self, log: TelemetryLog, categories: tuple[str, ...], headers: Mapping[str, str] | None = None):
        self._log = log
        self._on = frozenset(categories)
        self._trace = trace_fields(headers)

    def on(self, *categories: str) -> bool:
        return any(c in self._on for c in categories)

    def record(self, category: str, event: str, payload: Payload) -> None:
        if category in self._on:
            self._log.write(category, event, {**payload, **self._trace})

    def provider(self, provider: Provider) -> Provider:
        return _RecordingProvider(provider, self) if self.on("tokens", "performance", "errors") else provider

    def tools(self, tools: ToolRegistry) -> ToolRegistry:
        return _RecordingTools(tools, self) if self.on("tools", "performance", "errors") else tools

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Record the turn run inside: `performance/turn`, and `errors/turn_error` on failure."""
        start = time.monotonic()
        try:
            yield
        except Canceled:
            self.record("performance", "turn", {"duration_ms": _ms(start), "status": "canceled"})
            raise
        except BaseException as exc:
            payload = {"duration_ms": _ms(start), "status": "failed"}
            self.record("performance", "turn", payload)
            self.record("errors", "turn_error", {**payload, **error_fields(exc)})
            raise
        self.record("performance", "turn", {"duration_ms": _ms(start), "status": "completed"})


class _RetrySink:
    """Passes the stream on; a retry ends the failed attempt's records first."""

    def __init__(self, sink: StreamSink, call: _Call):
        self._sink = sink
        self._call = call

    def text_delta(self, delta: str) -> None:
        self._sink.text_delta(delta)

    def reasoning_delta(self, delta: str) -> None:
        self._sink.reasoning_delta(delta)

    def retry(self, info: RetryInfo) -> None:
        self._call.retried(info)
        self._sink.retry(info)


class _Call:
    """One `complete` call: its attempts."""

    def __init__(self, rec: TurnRecorder, provider: str, request: ModelRequest):
        self.rec = rec
        self.base: Payload = {"provider": provider, "model": request.model, "request_bytes": request_bytes(request)}
        self.start = time.monotonic()

    def ended(self, status: str) -> Payload:
        payload = {**self.base, "duration_ms": _ms(self.start), "status": status}
        self.rec.record("performance", "model_request", payload)
        return payload

    def retried(self, info: RetryInfo) -> None:
        self.ended("failed")
        payload = {**self.base, "attempt": info.attempt, "max_attempts": info.max_attempts,
                   "delay_seconds": info.delay_seconds, **error_fields(info.error)}
        self.rec.record("performance", "model_retry", payload)
        self.rec.record("errors", "model_retry", payload)
        self.start = time.monotonic() + info.delay_seconds  # the next attempt starts after the wait


class _RecordingProvider(Provider):
    """The provider `inner` (its name, model and steering), recording each `complete` call."""

    def __init__(self, inner: Provider, rec: TurnRecorder):
        self._inner = inner
        self._rec = rec
        self.name = inner.name
        self.supports_steering = inner.supports_steering
        self.model = inner.model

    def complete(self, request: ModelRequest, sink: StreamSink, cancel: CancelToken) -> ModelResponse:
        call = _Call(self._rec, self.name, request)
        try:
            response = self._inner.complete(request, _RetrySink(sink, call), cancel)
        except Canceled:
            call.ended("canceled")
            raise
        except BaseException as exc:
            payload = call.ended("failed")
            self._rec.record("errors", "model_request_error", {**payload, **error_fields(exc)})
            raise
        payload = call.ended("completed")
        if response.usage is not None:
            self._rec.record("tokens", "model_usage", {**payload, "usage": usage_record(response.usage)})
        return response


class _RecordingTools(ToolRegistry):
    """The tool registry `inner`, timing each call (`tools/tool_call`,
    `performance/tool_call`, and `errors/tool_error` for an error result)."""

    def __init__(self, inner: ToolRegistry, rec: TurnRecorder):
        super().__init__(())  # the tools are inner's
        self._inner = inner
        self._rec = rec

    def with_specs(self, *specs: ToolSpec) -> ToolRegistry:
        return _RecordingTools(self._inner.with_specs(*specs), self._rec)

    def names(self, has_ui: bool) -> list[str]:
        return self._inner.names(has_ui)

    def read_only(self, name: str) -> bool:
        return self._inner.read_only(name)

    def schemas(self, has_ui: bool) -> list[dict[str, Any]]:
        return self._inner.schemas(has_ui)

    def run(self, name: str, arguments: str | dict[str, Any] | None, ctx: ToolContext) -> ToolResult:
        start = time.monotonic()
        try:
            result = self._inner.run(name, arguments, ctx)
        except Canceled:
            payload: Payload = {"tool_name": name, "duration_ms": _ms(start), "status": "canceled", "result_bytes": 0}
            self._rec.record("tools", "tool_call", payload)
            self._rec.record("performance", "tool_call", payload)
            raise
        payload = {"tool_name": name, "duration_ms": _ms(start), "status": "error" if result.is_error else "completed",
                   "result_bytes": len(result.content.encode("utf-8", "replace"))}
        self._rec.record("tools", "tool_call", payload)
        self._rec.record("performance", "tool_call", payload)
        if result.is_error:
            self._rec.record("errors", "tool_error", {**payload, "error_class": "ToolError",
                                                      "error_message": redact_text(result.content)[:MESSAGE_CHARS]})
        return result
