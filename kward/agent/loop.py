"""The agent loop: one user input becomes model calls and tool calls until the model answers.

A plain function over a session, a provider, the tools and an `emit(type, payload)`
callback; it knows nothing of JSON-RPC. It runs on the turn's worker thread and holds no
lock of its own: the caller guarantees one turn per session at a time.

Persistence rule: every message and `tool_execution_end` record is appended to the
session (one whole line, written before `append_*` returns) *before* the event that
reports it is emitted, so a client never sees what the file does not hold.

Interrupted answers: when a model call is cancelled or fails after it streamed text or
reasoning, what the client was shown is kept as an assistant message marked
``"interrupted": true`` (a failure adds its ``errorMessage``; no tool calls, no usage),
reported by `assistantMessage` like any other, then the turn ends canceled or failed.
The next request sends its text as ordinary assistant content. A call that streamed
nothing leaves nothing behind.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from kward.agent import payloads
from kward.cancel import CancelToken
from kward.errors import Canceled, KwardError
from kward.providers.base import ModelRequest, ModelResponse, Provider, RetryInfo
from kward.redact import redact_text
from kward.steering import SteeringInbox, SteerInput
from kward.tools import CANCELLED, ToolContext, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

Emit = Callable[[str, dict[str, Any]], None]
DEFAULT_MAX_STEPS = 50


class SessionPort(Protocol):
    """What the loop needs from an open session (kward.sessions.OpenSession)."""

    def append_message(self, message: dict[str, Any]) -> None: ...

    def append_record(self, record_type: str, **fields: Any) -> dict[str, Any]: ...

    def entry_messages(self) -> list[dict[str, Any]]: ...


class StepLimitReached(KwardError):
    reason = "internal_error"


@dataclass
class TurnSetup:
    """Everything one run of the loop needs besides the session."""

    provider: Provider
    tools: ToolRegistry
    tool_ctx: ToolContext
    instructions: str
    model: str
    reasoning_effort: str | None
    cancel: CancelToken
    emit: Emit
    steering: SteeringInbox | None = None
    headers: dict[str, str] = field(default_factory=dict)
    session_key: str | None = None
    has_ui: bool = False
    max_steps: int = DEFAULT_MAX_STEPS
    refresh_instructions: Callable[[], str] | None = None  # called before each model request


_second: tuple[int, str] = (-1, "")  # (whole second, its formatted prefix): events come thousands a second


def now_iso() -> str:
    """UTC time as ISO-8601 with milliseconds (`2026-01-02T03:04:05.678Z`). Any thread."""
    global _second
    t = time.time()
    whole, prefix = _second
    if whole != int(t):
        whole = int(t)
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _second = (whole, prefix)  # one atomic rebinding; a racing thread computes the same value
    return f"{prefix}.{int(t * 1000) % 1000:03d}Z"


class _Sink:
    """Forwards streaming progress as events and keeps the text and reasoning shown so far
    by the current model call (`start_call` forgets them). Used on the turn's thread only."""

    def __init__(self, emit: Emit):
        self._emit = emit
        self.text: list[str] = []
        self.reasoning: list[str] = []

    def start_call(self) -> None:
        self.text, self.reasoning = [], []

    def text_delta(self, delta: str) -> None:
        if delta:
            self.text.append(delta)
            self._emit("assistantDelta", {"delta": delta})

    def reasoning_delta(self, delta: str) -> None:
        if delta:
            self.reasoning.append(delta)
            self._emit("reasoningDelta", {"delta": delta})

    def retry(self, info: RetryInfo) -> None:
        self._emit("modelRetry", {"provider": info.provider, "model": info.model, "attempt": info.attempt,
                                  "maxAttempts": info.max_attempts, "delaySeconds": info.delay_seconds,
                                  "error": info.error})


def run_agent(session: SessionPort, user_message: dict[str, Any], setup: TurnSetup) -> str:
    """Run one turn; returns the final answer text. Raises Canceled when cancelled, or the
    provider's/tools' KwardError when the turn fails (the caller reports it)."""
    setup.cancel.raise_if_cancelled()
    session.append_message(user_message)
    sink = _Sink(setup.emit)
    schemas = setup.tools.schemas(setup.has_ui)
    for _ in range(setup.max_steps):
        setup.cancel.raise_if_cancelled()
        if setup.refresh_instructions is not None:  # e.g. an AGENTS.md the last tool call edited
            setup.instructions = setup.refresh_instructions()
        request = ModelRequest(instructions=setup.instructions, messages=session.entry_messages(), tools=schemas,
                               model=setup.model, reasoning_effort=setup.reasoning_effort, headers=setup.headers,
                               session_id=setup.session_key, steering=setup.steering)
        sink.start_call()
        try:
            response = setup.provider.complete(request, sink, setup.cancel)
        except Exception as exc:  # Canceled, ProviderError, or a provider bug
            _keep_interrupted(session, sink, setup, exc)
            raise
        message = assistant_message(response)
        session.append_message(message)
        setup.emit("assistantMessage", {"message": message})
        if response.tool_calls:
            _run_tools(session, message["tool_calls"], setup)
            _apply_steering(session, setup, final=False)
            continue
        if _apply_steering(session, setup, final=True):
            continue
        setup.emit("answer", {"content": response.text})
        return response.text
    raise StepLimitReached(f"The turn stopped after {setup.max_steps} model calls without a final answer")


def assistant_message(response: ModelResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.text}
    if response.reasoning:
        message["reasoning_summary"] = response.reasoning
    if response.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in response.tool_calls]
    if response.usage is not None:
        message["usage"] = response.usage.to_record()
    message["provider"] = response.provider
    message["model"] = response.model
    message.update(response.message_extras or {})
    return message


def interrupted_message(text: str, reasoning: str, provider: str, model: str,
                        error: str | None = None) -> dict[str, Any]:
    """The assistant message that keeps what an interrupted model call streamed."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning:
        message["reasoning_summary"] = reasoning
    message.update({"provider": provider, "model": model, "interrupted": True})
    if error:
        message["errorMessage"] = error
    return message


def _keep_interrupted(session: SessionPort, sink: _Sink, setup: TurnSetup, exc: Exception) -> None:
    """Persist (then report) what the interrupted call streamed; nothing when it streamed
    nothing. A failure to persist is logged: the turn still ends with `exc`."""
    if not sink.text and not sink.reasoning:
        return
    error = None
    if not isinstance(exc, Canceled) and not setup.cancel.cancelled:  # a failure, not the user's stop
        error = redact_text(exc.message if isinstance(exc, KwardError) else f"Internal error: {type(exc).__name__}")
    message = interrupted_message("".join(sink.text), "".join(sink.reasoning), setup.provider.name, setup.model, error)
    try:
        session.append_message(message)
    except Exception:
        log.exception("could not keep the interrupted answer of the turn")
        return
    setup.emit("assistantMessage", {"message": message})


def _run_tools(session: SessionPort, calls: list[dict[str, Any]], setup: TurnSetup) -> None:
    canceled = False
    for call in calls:
        name = call["function"]["name"]
        setup.emit("toolCall", payloads.tool_call(call))
        if canceled:
            result = ToolResult.text(CANCELLED)
        else:
            try:
                result = setup.tools.run(name, call["function"]["arguments"], setup.tool_ctx)
            except Canceled:
                canceled = True
                result = ToolResult.text(CANCELLED)
        session.append_message({"role": "tool", "tool_call_id": call["id"], "name": name, "content": result.content})
        record = payloads.tool_execution_record(call, result)
        session.append_record("tool_execution_end", **record)
        setup.emit("toolResult", payloads.tool_result(call, result))
    if canceled:
        raise Canceled("Canceled.")


def _apply_steering(session: SessionPort, setup: TurnSetup, *, final: bool) -> bool:
    """Append steered input as user messages; True when there was any. On the final answer
    the inbox is closed atomically so that later input becomes a follow-up turn."""
    if setup.steering is None:
        return False
    items: list[SteerInput] = setup.steering.close_if_empty() if final else setup.steering.drain()
    for item in items:
        content: Any = item.text if not item.attachments else [{"type": "text", "text": item.text}, *item.attachments]
        session.append_message({"role": "user", "content": content})
        setup.emit("turnSteered", {"input": item.text, "createdAt": item.created_at})
    return bool(items)
