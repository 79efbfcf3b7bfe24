"""One redaction function for results, notifications, errors and logs."""

from kward.redact import REDACTED, redact, redact_text


def test_secret_keys_redacted_numbers_and_bools_kept():
    data = {
        "access_token": "abc", "apiKey": "k1", "OPENROUTER_API_KEY": "k2", "Authorization": "Bearer x",
        "password": "p", "client_secret": "s", "credentials": {"openrouter": "raw", "count": 3},
        "tokens": {"input": 10, "output": 5, "cached": True}, "hasToken": False, "secret": None,
        "empty_token": "",
        "apiKeyProviders": ["openrouter"], "storedCredentialType": "api_key", "name": "plain",
    }
    out = redact(data)
    assert out["access_token"] == out["apiKey"] == out["OPENROUTER_API_KEY"] == REDACTED
    assert out["Authorization"] == out["password"] == out["client_secret"] == REDACTED
    assert out["credentials"] == {"openrouter": REDACTED, "count": 3}
    assert out["tokens"] == {"input": 10, "output": 5, "cached": True}
    assert out["hasToken"] is False and out["secret"] is None and out["empty_token"] == ""
    assert out["apiKeyProviders"] == ["openrouter"] and out["storedCredentialType"] == "api_key"
    assert out["name"] == "plain"
    assert data["access_token"] == "abc"  # the input is not modified


def test_patterns_inside_strings():
    assert redact_text("header Authorization: Bearer eyJhbGciOi.abc.def") == "header Authorization: Bearer [REDACTED]"
    assert redact_text("key sk-or-v1-0123456789abcdef used") == "key [REDACTED] used"
    assert redact_text("task-manager-123456789 risk-assessment") == "task-manager-123456789 risk-assessment"
    assert redact_text("GET /cb?code=1&access_token=xyz&x=1") == "GET /cb?code=1&access_token=[REDACTED]&x=1"
    assert redact_text('{"refresh_token": "r-123", "n": 1}') == '{"refresh_token": "[REDACTED]", "n": 1}'
    assert redact(["Bearer abcdef", 5, True]) == ["Bearer [REDACTED]", 5, True]


def test_idempotent():
    once = redact({"msg": "Bearer abcdefgh sk-abcdefghijkl", "token": "t"})
    assert redact(once) == once
