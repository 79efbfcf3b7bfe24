"""The retry table, Retry-After parsing, delay settings, and the retry loop."""

import email.utils
import time

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled, ConfigError
from kward.providers.base import ProviderError
from kward.providers import specs
from kward.providers.retry import (RETRY_AFTER_CAP, RetryPolicy, classify, parse_retry_after, retry_hint_from_text,
                                   run_with_retries)
from kward.providers.settings import for_provider
from kward.config.settings import resolve_settings
from lib.fake_sink import RecordingSink


@pytest.mark.parametrize("status,code,detail,kind,retryable", [
    (429, "rate_limit_exceeded", "slow down", "rate_limit", True),
    (429, "usage_limit_reached", "The usage limit has been reached", "usage_limit", False),
    (429, "", "You exceeded your current quota", "usage_limit", False),
    (402, "", "Insufficient credits", "usage_limit", False),
    (400, "context_length_exceeded", "too long", "context_overflow", False),
    (400, "", "This endpoint's maximum context length is 8192 tokens.", "context_overflow", False),
    (500, "", "oops", "server", True),
    (503, "server_is_overloaded", "", "server", True),
    (502, "", "Your credit balance is too low", "usage_limit", False),
    (401, "", "", "auth", False),
    (403, "", "no entitlement", "auth", False),
    (408, "", "", "timeout", True),
    (400, "", "Instructions are required", "bad_request", False),
    (404, "", "No eligible endpoints", "bad_request", False),
])
def test_table(status, code, detail, kind, retryable):
    err = classify("Codex", status=status, code=code, detail=detail)
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert err.message.startswith("Codex ")


def test_messages_say_what_to_do():
    assert "Set THE_TOKEN." in classify("Codex", status=401, auth_hint="Set THE_TOKEN.").message
    assert "Compact" in classify("X", status=400, code="context_length_exceeded").message
    msg = classify("Codex", status=429, code="usage_limit_reached", resets_at=time.time() + 600).message
    assert "resets at" in msg and "wait until then" in msg


def test_error_text_is_redacted_and_shortened():
    err = classify("OpenRouter", status=500, detail="bad key sk-or-v1-abcdefabcdef123456 Bearer abc.def.ghi " + "x" * 2000)
    assert "sk-or-v1-abcdef" not in err.message and "abc.def.ghi" not in err.message
    assert len(err.message) < 800


def test_retry_after_parsing():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= parse_retry_after(date, now=now) <= 31
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_retry_after_beyond_the_cap_is_final():
    err = classify("OpenRouter", status=429, retry_after=RETRY_AFTER_CAP + 1)
    assert not err.retryable and "wait 61 s" in err.message
    assert RetryPolicy((1.0,)).delay(1, 5.0) == 5.0


def test_try_again_hint():
    assert retry_hint_from_text("Please try again in 1.5s.") == 1.5
    assert retry_hint_from_text("try again in 20ms") == 0.02
    assert retry_hint_from_text("nothing") is None


def resolve_retry_delays(config, env):
    """The delays a provider gets from config + env (a ConfigError as its turn would see)."""
    return for_provider(specs.get("codex"), resolve_settings(config, env)).retry.delays


def test_delay_settings():
    assert resolve_retry_delays({}, {}) == (1.0, 2.0)
    assert resolve_retry_delays({"retry_delays": [0.5]}, {}) == (0.5,)
    assert resolve_retry_delays({"retry_delays": [0.5]}, {"KWARD_RETRY_DELAYS": "0.05,0.1"}) == (0.05, 0.1)
    assert resolve_retry_delays({}, {"KWARD_RETRY_DELAYS": ""}) == ()
    with pytest.raises(ConfigError):
        resolve_retry_delays({}, {"KWARD_RETRY_DELAYS": "a,b"})
    settings = resolve_settings({"codex_base_url": "http://c/", "retry_delays": [0]},
                                {"KWARD_OPENROUTER_BASE_URL": "http://o/api/v1/"})
    urls = settings.providers.base_urls
    assert (urls["codex"], urls["openrouter"], urls["openai-compatible"]) == ("http://c", "http://o/api/v1", None)
    assert for_provider(specs.get("codex"), settings).retry.max_attempts == 2


@pytest.mark.parametrize("configured", [["x"], [1e9], [-1], [True], "1,2", [0.1] * 21, {"a": 1}])
def test_config_retry_delays_are_checked_like_the_environment(configured):
    with pytest.raises(ConfigError) as info:
        resolve_retry_delays({"retry_delays": configured}, {})
    assert info.value.reason == "invalid_config" and "retry_delays" in info.value.message
    for env in ("nan", "1e9", ",".join(["1"] * 21)):
        with pytest.raises(ConfigError):
            resolve_retry_delays({}, {"KWARD_RETRY_DELAYS": env})
    assert resolve_retry_delays({"retry_delays": [0, 3600, 2]}, {}) == (0.0, 3600.0, 2.0)
    assert resolve_retry_delays({"retry_delays": None}, {}) == (1.0, 2.0)


def _failing(errors):
    calls = []

    def attempt(n):
        calls.append(n)
        err = errors.pop(0)
        if err is None:
            return "ok"
        raise err

    return attempt, calls


def test_run_with_retries_reports_each_retry():
    sink = RecordingSink()
    attempt, calls = _failing([classify("P", status=500), classify("P", status=429, retry_after=0.0), None])
    assert run_with_retries(attempt, policy=RetryPolicy((0.01, 0.02)), provider="P", model="m",
                            sink=sink, cancel=CancelToken()) == "ok"
    assert calls == [1, 2, 3]
    assert [(r.attempt, r.max_attempts, r.delay_seconds) for r in sink.retries] == [(2, 3, 0.01), (3, 3, 0.0)]


def test_non_retryable_is_raised_at_once():
    attempt, calls = _failing([classify("P", status=400)])
    with pytest.raises(ProviderError):
        run_with_retries(attempt, policy=RetryPolicy((0.01,)), provider="P", model="m",
                         sink=RecordingSink(), cancel=CancelToken())
    assert calls == [1]


def test_cancel_interrupts_the_wait():
    token = CancelToken()
    seen = []

    class CancelOnRetry(RecordingSink):
        def retry(self, info):
            seen.append(info)
            token.cancel()

    attempt, _ = _failing([classify("P", status=500)])
    t0 = time.monotonic()
    with pytest.raises(Canceled):
        run_with_retries(attempt, policy=RetryPolicy((60.0,)), provider="P", model="m",
                         sink=CancelOnRetry(), cancel=token)
    assert time.monotonic() - t0 < 1 and [i.delay_seconds for i in seen] == [60.0]
