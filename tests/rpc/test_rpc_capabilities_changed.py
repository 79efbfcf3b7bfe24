"""`runtime/capabilitiesChanged` over the real `kward rpc` (issue 23, beyond the original):
the whole new capabilities object, as `initialize` would answer it now, sent before the
answer of the request that changed it (a provider switch through
`runtime/updateSetting`, `config/update`, a login and a logout, `runtime/reload` after
config.json was edited), only when it differs from the last one answered or sent, never
before `initialize` was answered, never to a client that opted out of it."""

from __future__ import annotations

import json

import pytest

from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, start_kward
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.session_notices import before_response, capabilities_changed

TOKEN = make_jwt("acct_caps")
KEY = "sk-or-v1-caps0123456789abcdef"
METHOD = "runtime/capabilitiesChanged"


def call(client, method, params=None, timeout=10.0):
    """The request's result and how many capabilitiesChanged came right before its answer."""
    rid = client.send(method, params)
    response = client.response(rid, timeout)
    assert "result" in response, response
    return response["result"], before_response(client, rid, METHOD)


def steering(caps):
    return caps["turns"]["busyInput"]["steer"], caps["turns"]["busyInput"]["defaultWhenBusy"], \
        caps["events"]["steering"]["supported"]


@pytest.fixture
def fakes():
    with FakeCodex() as codex, FakeOpenRouter() as router:
        yield codex, router


def test_a_provider_switch_and_a_reload_send_the_new_capabilities_only_when_they_differ(isolated_home, fakes):
    codex, router = fakes
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=codex.base_url, KWARD_OPENROUTER_BASE_URL=router.base_url,
                     OPENAI_ACCESS_TOKEN=TOKEN, OPENROUTER_API_KEY=KEY) as c:
        sid = create_session(c, isolated_home)["id"]
        first = c.request("initialize")["capabilities"]
        assert steering(first) == ("native", "steer", True)  # Codex steers a running turn
        assert first["rpc"]["capabilitiesChanged"] == {"supported": True, "notification": METHOD}
        assert first["rpc"]["optOutNotificationTypes"] is True

        def setting(value):
            return call(c, "runtime/updateSetting", {"sessionId": sid, "settingId": "defaultModel", "value": value})

        _, sent = setting("OpenRouter/openai/gpt-5.5")  # OpenRouter does not steer
        assert sent == 1
        [changed] = capabilities_changed(c)
        assert steering(changed) == ("unsupported", "followUp", False)
        differing = {k for k in first if first[k] != changed[k]}
        assert differing == {"turns", "events"}  # the whole object, of which only these changed
        assert setting("OpenRouter/anthropic/claude-sonnet-4")[1] == 0  # the same capabilities again
        assert call(c, "runtime/reload", {"sessionId": sid})[1] == 0  # a reload that changes nothing

        config = isolated_home / ".kward" / "config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()), "provider": "codex"}))  # by hand
        assert call(c, "runtime/reload", {"sessionId": sid})[1] == 1
        assert steering(capabilities_changed(c)[-1]) == ("native", "steer", True)
        assert capabilities_changed(c)[-1] == c.request("initialize")["capabilities"] == first  # as initialize says
        assert c.protocol_errors == [] and c.stderr == ""


def test_a_login_and_a_logout_that_switch_the_provider(isolated_home):
    with start_kward(isolated_home) as c:  # no credentials: the default provider, Codex
        assert steering(c.request("initialize")["capabilities"])[0] == "native"
        _, sent = call(c, "auth/loginWithApiKey", {"providerId": "openrouter", "apiKey": KEY})
        assert sent == 1 and steering(capabilities_changed(c)[-1])[0] == "unsupported"  # chosen by the new key
        _, sent = call(c, "auth/logoutProvider", {"providerId": "openrouter"})
        assert sent == 1 and steering(capabilities_changed(c)[-1])[0] == "native"
        assert len(capabilities_changed(c)) == 2


def logging_on(*categories):
    """config/update params switching on exactly these telemetry categories (a top-level
    key replaces what config.json had)."""
    return {"values": {"logging": {"enabled": True, **{c: True for c in categories}}}}


def test_never_before_initialize_and_never_to_a_client_that_opted_out(kward):
    k = kward()
    assert call(k, "config/update", logging_on("tools"))[1] == 0  # initialize was not answered yet
    caps = k.request("initialize")["capabilities"]
    assert caps["logging"]["enabledCategories"] == ["tools"]  # what it answers is already the new state
    _, sent = call(k, "config/update", logging_on("tools", "errors"))
    assert sent == 1 and capabilities_changed(k)[-1]["logging"]["enabledCategories"] == ["tools", "errors"]
    assert call(k, "config/update", {"values": {"compaction": {"enabled": True}}})[1] == 0  # no capability changed

    k.request("initialize", {"capabilities": {"optOutNotificationMethods": [METHOD]}})
    assert call(k, "config/update", logging_on("tokens"))[1] == 0
    assert len(capabilities_changed(k)) == 1
    # a client that opts in again compares with what its initialize answered
    again = k.request("initialize")["capabilities"]
    assert again["logging"]["enabledCategories"] == ["tokens"]
    assert call(k, "config/update", {"values": {"logging": {"enabled": False}}})[1] == 1
    assert capabilities_changed(k)[-1]["logging"]["enabledCategories"] == []
    assert capabilities_changed(k)[-1] == k.request("initialize")["capabilities"]
