"""The provider interface: what the agent loop asks of a model, and what it gets back.

Messages are the typed conversation of `kward.model` (user, assistant, tool results,
compaction summaries, system). An assistant message may also be the kept partial answer
of a cancelled or failed call (`interrupted`, `error`, never tool calls); it is sent like
any other. Each provider converts them to its wire format. Providers know nothing of
JSON-RPC or session files; they report progress through a `StreamSink`.

Thread contract: `Provider.complete` runs on a turn's worker thread and blocks until the
model answered, failed, or `cancel` fired (it must return or raise `Canceled` within
200 ms of cancellation). A provider object may serve several sessions at once. Requests,
responses and setups are frozen values; the sink is called on the provider's (the turn's)
thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from kward.cancel import CancelToken
from kward.errors import PROVIDER_ERROR, KwardError
from kward.model import Message, RetryInfo, ToolCall, Usage

__all__ = ["KIND_REASONS", "Message", "ModelRequest", "ModelResponse", "Provider", "ProviderError", "ProviderSetup",
           "QuietSink", "RetryInfo", "Steering", "StreamSink", "ToolCall", "Usage"]

if TYPE_CHECKING:  # pragma: no cover - settings imports retry, which imports this module
    from kward.providers.settings import ProviderSettings


class Steering(Protocol):
    """The running turn's steering inbox as a provider sees it (`kward.steering.SteeringInbox`):
    `wait` blocks the turn's thread until input is pending (True), the inbox closed or
    `timeout` seconds passed; `close` (any thread) closes the inbox and wakes the waiter."""

    def wait(self, timeout: float) -> bool: ...

    def close(self) -> object: ...


@dataclass(frozen=True, slots=True)
class ModelRequest:
    instructions: str
    messages: list[Message]  # the conversation (kward.model), system messages included
    tools: list[dict[str, Any]]  # JSON schemas: [{"type": "function", "function": {name, description, parameters}}]
    model: str
    reasoning_effort: str | None = None  # None or "off": no reasoning requested
    headers: dict[str, str] = field(default_factory=dict)  # extra headers, e.g. traceparent
    session_id: str | None = None  # stable per conversation (Codex session_id / prompt_cache_key)
    steering: Steering | None = None  # the running turn's inbox (Scripted's waitForSteer)
    purpose: str = "turn"  # or "compaction": a summarizer call (kward.compaction), no tools
    max_output_tokens: int | None = None  # a cap on the answer, where the wire format has one


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    usage: Usage | None
    provider: str
    model: str
    # Provider fields (JSON) to store on the assistant message so the next request can
    # replay them (Codex `reasoning_items`, OpenRouter `reasoning_details`); may be empty.
    message_extras: dict[str, Any] = field(default_factory=dict)


class StreamSink(Protocol):
    """Receives streaming progress; called on the provider's (the turn's) thread."""

    def text_delta(self, delta: str) -> None: ...

    def reasoning_delta(self, delta: str) -> None: ...

    def retry(self, info: RetryInfo) -> None: ...


class QuietSink:
    """A StreamSink that drops everything (a call whose progress nobody watches, such as
    a compaction's summarizer)."""

    def text_delta(self, delta: str) -> None:
        pass

    def reasoning_delta(self, delta: str) -> None:
        pass

    def retry(self, info: RetryInfo) -> None:
        pass


#: The stable error reason (kward.errors.REASONS) of each ProviderError kind; a kind not
#: listed is "provider_error". An HTTP 401 is "not_logged_in" (set by `retry.classify`).
KIND_REASONS: dict[str, str] = {"usage_limit": "usage_limit", "context_overflow": "context_overflow",
                                "rate_limit": "rate_limited"}


class ProviderError(KwardError):
    """A model request failed. `kind` is one of: auth, rate_limit, usage_limit,
    context_overflow, server, network, timeout, stream_incomplete, bad_request.
    Without an explicit `reason` the reason follows from `kind` (`KIND_REASONS`). Answered
    as an error response (a method's own model request: `sessions/compact`), code -32005."""

    code = PROVIDER_ERROR

    def __init__(self, message: str, *, provider: str, kind: str, status: int | None = None,
                 retryable: bool = False, retry_after: float | None = None, reason: str | None = None,
                 data: dict[str, Any] | None = None):
        super().__init__(message, reason=reason or KIND_REASONS.get(kind, "provider_error"), data=data)
        self.provider = provider
        self.kind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class ProviderSetup:
    """What selection hands to `Provider.create`. The callables are read per request, on the
    request's thread: `secret` the API key or access token (its variable, else the value
    stored in config.json; None: none), `login` a stored OpenAI login (access token,
    account id) or None. `options` holds the spec's provider-specific settings by key.
    `refresh` (None: none) is called once after an HTTP 401: True when fresh credentials
    are available; it raises a KwardError (`not_logged_in`) when they cannot be had."""

    settings: ProviderSettings | None  # None for a provider without a base URL
    secret: Callable[[], str | None] = lambda: None
    login: Callable[[], tuple[str, str | None] | None] = lambda: None
    options: Mapping[str, str | None] = field(default_factory=dict)
    refresh: Callable[[], bool] | None = None


class Provider:
    """Base class of every provider. Subclasses set `name`, implement `complete`, and build
    themselves from a `ProviderSetup` in `create` (how `kward.providers.select` makes one
    from the spec in `kward.providers.specs`)."""

    name: str = "Provider"
    supports_steering: bool = False
    model: str = ""  # the provider's own model, used when none is configured (Scripted: the script's)

    @classmethod
    def create(cls, setup: ProviderSetup) -> Provider:
        raise NotImplementedError

    def complete(self, request: ModelRequest, sink: StreamSink, cancel: CancelToken) -> ModelResponse:
        raise NotImplementedError
