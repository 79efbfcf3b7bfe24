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


def test_jwt_shaped_tokens_are_masked_in_free_text():
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"
    assert redact_text(f"bad token {jwt} (expired)") == "bad token [REDACTED] (expired)"
    assert redact_text("eyJ is how base64 of {\" starts") == "eyJ is how base64 of {\" starts"


TEXT = "pip install sk-learn-extra-stuff\nAuthorization: Bearer abc.def\npassword=hunter2"


def test_conversation_policies_pass_content_and_redact_the_rest():
    from kward.rpc import protocol
    from kward.rpc.redaction import CONTENT, EVENT, EVENTS, FULL, apply

    def event(type_, payload):
        return {"sequence": 1, "turnId": "t", "type": type_, "payload": payload}

    content = protocol.response(1, {"text": TEXT, "password": "hunter2"})
    assert apply(CONTENT, content) == content
    assert apply(FULL, content)["result"] == {"text": redact_text(TEXT), "password": REDACTED}
    assert redact_text(TEXT) != TEXT  # the full rules do change this text
    for type_ in ("toolResult", "toolCall", "assistantDelta", "assistantMessage", "answer", "turnSteered"):
        note = protocol.notification("turn/event", event(type_, {"content": TEXT, "args": {"password": "x"}}))
        assert apply(EVENT, note) == note
    for type_ in ("error", "turnFinished", "modelRetry", "someNewType"):
        note = protocol.notification("turn/event", event(type_, {"message": "Bearer abcdefgh", "token": "t"}))
        assert apply(EVENT, note)["params"]["payload"] == {"message": "Bearer [REDACTED]", "token": REDACTED}
    replay = protocol.response(2, {"turn": {"error": {"message": "sk-abcdefghijkl"}},
                                   "events": [event("toolResult", {"content": TEXT}), event("error", {"message": TEXT})]})
    out = apply(EVENTS, replay)["result"]
    assert out["turn"] == {"error": {"message": REDACTED}}
    assert out["events"][0]["payload"] == {"content": TEXT} and out["events"][1]["payload"] == {"message": redact_text(TEXT)}
    # an error response is redacted in full whatever the method's policy
    from kward.errors import InvalidParams

    err = protocol.error_response(3, InvalidParams("Unknown session: Bearer abcdefgh", data={"password": "p"}))
    for policy in (CONTENT, EVENT, EVENTS, FULL):
        wire = apply(policy, err)["error"]
        assert wire["message"] == "Unknown session: Bearer [REDACTED]" and wire["data"]["password"] == REDACTED


def test_every_policy_in_the_method_table_is_known():
    from kward.rpc.redaction import CONTENT, EVENTS, FULL, NOTIFICATIONS, EVENT
    from kward.rpc.method_table import METHODS

    assert {m.redaction for m in METHODS.values()} <= {FULL, CONTENT, EVENTS}
    assert METHODS["initialize"].redaction == FULL
    assert set(NOTIFICATIONS.values()) <= {CONTENT, EVENT}
    assert METHODS["config/read"].redaction == FULL and METHODS["sessions/transcript"].redaction == CONTENT
