"""Retry policy and error classification: the one table deciding what is retried.

`classify` turns an HTTP status, an error code/type and the error text into a
`ProviderError` whose `kind` and `retryable` come from `RULES` (first match wins);
`run_with_retries` re-runs an attempt while the error is retryable, reporting each retry
to the sink and waiting interruptibly. Messages say what happened and what to do, and are
redacted with `kward.redact.redact_text`.

| match                                          | kind             | retried | reason           |
|------------------------------------------------|------------------|---------|------------------|
| code usage_limit_reached / usage_not_included /| usage_limit      | no      | usage_limit      |
|   insufficient_quota / billing... ; HTTP 402   |                  |         |                  |
| code context_length_exceeded, overflow wording | context_overflow | no      | context_overflow |
| quota / billing / credit / balance wording     | usage_limit      | no      | usage_limit      |
| HTTP 401                                       | auth             | no      | not_logged_in    |
| HTTP 403                                       | auth             | no      | provider_error   |
| HTTP 408                                       | timeout          | yes     | provider_error   |
| HTTP 429, code rate_limit_exceeded             | rate_limit       | yes     | rate_limited     |
| HTTP 5xx, code server_error / overloaded       | server           | yes     | provider_error   |
| other HTTP 4xx                                 | bad_request      | no      | provider_error   |
| network errors, idle timeouts, cut streams     | network/timeout/ | yes (only before any output
|                                                | stream_incomplete|  reached the sink); provider_error

The reason (`error.data.reason` / a failed turn's `error.reason`) follows from the kind
(`base.KIND_REASONS`), except that HTTP 401 is `not_logged_in`.

Pure functions plus `run_with_retries`, which runs on the request's (turn's) thread.
"""

from __future__ import annotations

import email.utils
import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.providers.base import ProviderError, RetryInfo, StreamSink
from kward.redact import redact_text

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_RETRY_DELAYS: tuple[float, ...] = (1.0, 2.0)
RETRY_AFTER_CAP = 60.0  # a longer Retry-After is not waited for: the error is shown instead
DETAIL_LIMIT = 600


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Delays between attempts; `len(delays) + 1` attempts in all."""

    delays: tuple[float, ...] = DEFAULT_RETRY_DELAYS

    @property
    def max_attempts(self) -> int:
        return len(self.delays) + 1

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if retry_after is not None:
            return max(0.0, min(retry_after, RETRY_AFTER_CAP))
        return self.delays[min(attempt, len(self.delays)) - 1]


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds (fractions accepted) or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_TRY_AGAIN = re.compile(r"(?i)try again in\s*([0-9.]+)\s*(ms|s|sec|secs|seconds)?\b")


def retry_hint_from_text(text: str) -> float | None:
    """The delay in "Please try again in 1.5s" / "in 20ms" messages (Codex style)."""
    m = _TRY_AGAIN.search(text or "")
    if not m:
        return None
    try:
        value = float(m.group(1))
    except ValueError:
        return None
    return value / 1000.0 if (m.group(2) or "").lower() == "ms" else value


# --- the table ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    retryable: bool
    summary: str  # what happened, after "<Provider> "


_LIMIT_CODES = frozenset({"usage_limit_reached", "usage_not_included", "insufficient_quota",
                          "billing_hard_limit_reached", "insufficient_credits", "quota_exceeded"})
_OVERFLOW = re.compile(r"(?i)context_length_exceeded|context[ _]length|context window|maximum context"
                       r"|too many tokens|prompt is too long|input is too long")
_LIMIT_TEXT = re.compile(r"(?i)usage[ _]limit|quota|billing|insufficient[ _]credits|credit balance"
                         r"|more credits|payment required|provider limit")

USAGE_LIMIT = Rule("usage_limit", False, "usage limit or quota reached")
CONTEXT_OVERFLOW = Rule("context_overflow", False, "rejected the request: the conversation is too long")
AUTH = Rule("auth", False, "rejected the credentials")
FORBIDDEN = Rule("auth", False, "refused access")
TIMEOUT = Rule("timeout", True, "timed out")
RATE_LIMIT = Rule("rate_limit", True, "is rate limiting requests")
SERVER = Rule("server", True, "had a server error")
BAD_REQUEST = Rule("bad_request", False, "rejected the request")

HINTS: dict[str, str] = {
    "usage_limit": "Check your plan or credits, or switch to another provider or model.",
    "context_overflow": "Compact the session or start a new one.",
    "rate_limit": "Wait a moment, then try again.",
    "server": "The service may be busy or down; try again later.",
    "timeout": "Check your network connection, then try again.",
    "network": "Check your network connection and the provider's base URL, then try again.",
    "stream_incomplete": "Try again.",
    "bad_request": "",
}

RULES: list[tuple[Callable[[int | None, str, str], bool], Rule]] = [
    (lambda status, code, text: code in _LIMIT_CODES or status == 402, USAGE_LIMIT),
    (lambda status, code, text: bool(_OVERFLOW.search(code) or _OVERFLOW.search(text)), CONTEXT_OVERFLOW),
    (lambda status, code, text: bool(_LIMIT_TEXT.search(text)), USAGE_LIMIT),
    (lambda status, code, text: status == 401, AUTH),
    (lambda status, code, text: status == 403, FORBIDDEN),
    (lambda status, code, text: status == 408, TIMEOUT),
    (lambda status, code, text: status == 429 or code in ("rate_limit_exceeded", "rate_limit_error"),
     RATE_LIMIT),
    (lambda status, code, text: (status or 0) >= 500
     or code in ("server_error", "server_is_overloaded", "slow_down", "overloaded_error"), SERVER),
]


def match_rule(status: int | None, code: str, text: str, fallback: Rule = BAD_REQUEST) -> Rule:
    """First rule of `RULES` matching; unmatched errors get `fallback` (default: a bad
    request, not retried; mid-stream failures with an unknown code pass SERVER)."""
    for test, rule in RULES:
        if test(status, code or "", text or ""):
            return rule
    return fallback


def _when(resets_at: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(resets_at))
    left = int(resets_at - time.time())
    if left <= 0:
        return f"It should have reset at {stamp}; try again."
    hours, rest = divmod(left, 3600)
    minutes = max(1, rest // 60) if hours == 0 else rest // 60
    span = f"{hours} h {minutes} min" if hours else f"{minutes} min"
    return f"It resets at {stamp} (in about {span}); wait until then or switch provider."


def classify(provider: str, *, status: int | None, code: str = "", detail: str = "",
             retry_after: float | None = None, resets_at: float | None = None,
             plan_type: str | None = None, auth_hint: str = "", fallback: Rule = BAD_REQUEST,
             extra: Mapping[str, Any] | None = None) -> ProviderError:
    """Build the ProviderError for a failed request from the table above.

    `detail` is the server's message (redacted and shortened here); `auth_hint` says how to
    fix credentials for this provider. A `retry_after` beyond `RETRY_AFTER_CAP` makes the
    error final: we tell the user when to try again instead of blocking the turn.
    """
    detail = redact_text(" ".join((detail or "").split()))[:DETAIL_LIMIT]
    rule = match_rule(status, code, detail, fallback)
    where = f" (HTTP {status})" if status else ""
    parts = [f"{provider} {rule.summary}{where}" + (f": {detail}" if detail else ".")]
    if parts[0][-1] not in ".!?":
        parts[0] += "."
    data: dict[str, Any] = {"provider": provider, "kind": rule.kind}
    if status:
        data["status"] = status
    if code:
        data["code"] = code
    if rule.kind == "usage_limit" and plan_type:
        parts.append(f"Plan: {plan_type}.")
        data["planType"] = plan_type
    if rule.kind == "usage_limit" and resets_at:
        parts.append(_when(resets_at))
        data["resetsAt"] = int(resets_at)
    elif rule.kind == "auth":
        parts.append(auth_hint or "Check your credentials.")
    elif HINTS.get(rule.kind):
        parts.append(HINTS[rule.kind])
    retryable = rule.retryable
    if retryable and retry_after is not None and retry_after > RETRY_AFTER_CAP:
        retryable = False
        parts.append(f"The server asks to wait {retry_after:.0f} s before trying again.")
    if extra:
        data.update(extra)
    reason = "not_logged_in" if status == 401 else None
    return ProviderError(" ".join(parts), provider=provider, kind=rule.kind, status=status,
                         retryable=retryable, retry_after=retry_after, reason=reason, data=data)


def transport_failure(provider: str, message: str, *, timeout: bool) -> ProviderError:
    """A network error or idle timeout (retryable; the caller may clear `retryable`)."""
    kind = "timeout" if timeout else "network"
    text = f"{provider} {'timed out' if timeout else 'connection failed'}: {redact_text(message)}. {HINTS[kind]}"
    return ProviderError(text, provider=provider, kind=kind, retryable=True,
                         data={"provider": provider, "kind": kind})


def run_with_retries(attempt_fn: Callable[[int], T], *, policy: RetryPolicy, provider: str, model: str,
                     sink: StreamSink, cancel: CancelToken) -> T:
    """Call `attempt_fn(attempt)` until it returns, a non-retryable error, or attempts run out.

    Runs on the request's thread. Each retry first calls `sink.retry(RetryInfo(...))`,
    then waits on the cancel token (so a cancel ends the wait at once: `Canceled`).
    The final retryable failure is re-raised as "<Provider> request failed after N
    attempts: ...".
    """
    attempts = policy.max_attempts
    for attempt in range(1, attempts + 1):
        cancel.raise_if_cancelled()
        try:
            return attempt_fn(attempt)
        except ProviderError as err:
            if not err.retryable:
                raise
            if attempt >= attempts:
                if attempts == 1:
                    raise
                raise ProviderError(
                    f"{provider} request failed after {attempts} attempts: {err.message}",
                    provider=err.provider, kind=err.kind, status=err.status, retryable=False,
                    retry_after=err.retry_after, reason=err.reason,
                    data=dict(err.data, attempts=attempts)) from None
            delay = policy.delay(attempt, err.retry_after)
            log.warning("%s request failed (attempt %d of %d), retrying in %.2f s: %s",
                        provider, attempt, attempts, delay, err.message)
            sink.retry(RetryInfo(provider=provider, model=model, attempt=attempt + 1, max_attempts=attempts,
                                 delay_seconds=delay, error=err.message))
            if cancel.wait(delay):
                raise Canceled("Canceled.") from None
    raise AssertionError("unreachable")
