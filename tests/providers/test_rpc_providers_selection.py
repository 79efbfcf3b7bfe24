"""Provider selection through `kward rpc`: KWARD_PROVIDER / config
`provider`, else an OpenAI token -> Codex, else an OpenRouter key -> OpenRouter, else
Codex failing at request time with `not_logged_in`."""

import json

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.turn_events import failed_error, finished

TOKEN = make_jwt("acct_from_jwt")
KEY = "sk-or-v1-selection0123456789"


@pytest.fixture
def fakes():
    with FakeCodex() as codex, FakeOpenRouter() as router:
        codex.script("responses", fc.text(["from codex"]))
        router.script("chat", fo.text(["from openrouter"]))
        yield codex, router


def launch(home, fakes, **env):
    codex, router = fakes
    return start_kward(home, KWARD_CODEX_BASE_URL=codex.base_url, KWARD_OPENROUTER_BASE_URL=router.base_url, **env)


def state_and_turn(client, home):
    session = create_session(client, home)
    state = client.request("runtime/state", {"sessionId": session["id"]})
    return state, run_turn(client, session["id"])


def write_auth(home, tokens):
    (home / ".kward").mkdir(exist_ok=True)
    (home / ".kward" / "auth.json").write_text(json.dumps({"tokens": tokens}))


@pytest.mark.slow
def test_openai_token_wins_over_openrouter_key(isolated_home, fakes):
    with launch(isolated_home, fakes, OPENAI_ACCESS_TOKEN=TOKEN, OPENROUTER_API_KEY=KEY) as c:
        state, events = state_and_turn(c, isolated_home)
    assert (state["defaultProvider"], state["providerReason"]) == ("Codex", "OpenAI login")
    assert state["defaultModel"] == "Codex/gpt-5.5"
    assert finished(events)["status"] == "completed"
    codex, router = fakes
    assert len(codex.requests("responses")) == 1 and router.requests() == []
    assert codex.requests("responses")[0].headers["chatgpt-account-id"] == "acct_from_jwt"


@pytest.mark.slow
def test_openrouter_key_alone_selects_openrouter(isolated_home, fakes):
    with launch(isolated_home, fakes, OPENROUTER_API_KEY=KEY) as c:
        state, events = state_and_turn(c, isolated_home)
    assert (state["defaultProvider"], state["providerReason"]) == ("OpenRouter", "OpenRouter API key")
    assert state["defaultModel"] == "OpenRouter/openai/gpt-5.5"
    assert finished(events)["status"] == "completed"
    codex, router = fakes
    assert codex.requests() == [] and router.requests("chat")[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.slow
def test_no_credentials_selects_codex_and_fails_at_request_time(isolated_home, fakes):
    with launch(isolated_home, fakes) as c:
        caps = c.request("initialize")["capabilities"]
        state, events = state_and_turn(c, isolated_home)
        models = c.request("models/list")["models"]
    assert "warnings" not in caps  # not being logged in is no start-up problem
    assert state["defaultProvider"] == "Codex" and "no credentials" in state["providerReason"]
    error = failed_error(events)
    assert error["reason"] == "not_logged_in"
    assert "Not logged in to Codex" in error["message"] and "`kward login`" in error["message"]
    assert "OPENAI_ACCESS_TOKEN" in error["message"] and "OPENROUTER_API_KEY" in error["message"]
    assert fakes[0].requests() == [] and fakes[1].requests() == []  # nothing was sent anywhere
    assert "gpt-5.5" in [m["id"] for m in models]  # the built-in table


@pytest.mark.slow
def test_stored_login_selects_codex_with_its_account_id(isolated_home, fakes):
    write_auth(isolated_home, {"access_token": TOKEN, "account_id": "acct_stored"})
    with launch(isolated_home, fakes, OPENROUTER_API_KEY=KEY) as c:
        state, events = state_and_turn(c, isolated_home)
    assert state["defaultProvider"] == "Codex" and finished(events)["status"] == "completed"
    headers = fakes[0].requests("responses")[0].headers
    assert headers["authorization"] == f"Bearer {TOKEN}" and headers["chatgpt-account-id"] == "acct_stored"


@pytest.mark.slow
def test_stored_login_without_account_id_uses_the_jwt_claim(isolated_home, fakes):
    write_auth(isolated_home, {"access_token": TOKEN})
    with launch(isolated_home, fakes) as c:
        _, events = state_and_turn(c, isolated_home)
    assert finished(events)["status"] == "completed"
    assert fakes[0].requests("responses")[0].headers["chatgpt-account-id"] == "acct_from_jwt"


@pytest.mark.slow
def test_kward_provider_overrides_the_token(isolated_home, fakes):
    with launch(isolated_home, fakes, OPENAI_ACCESS_TOKEN=TOKEN, OPENROUTER_API_KEY=KEY,
                KWARD_PROVIDER="OpenRouter") as c:
        state, events = state_and_turn(c, isolated_home)
    assert (state["defaultProvider"], state["providerReason"]) == ("OpenRouter", "KWARD_PROVIDER")
    assert finished(events)["status"] == "completed" and fakes[0].requests() == []


def test_configured_openrouter_without_key_is_not_logged_in(isolated_home, fakes):
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text('{"provider": "openrouter"}')
    with launch(isolated_home, fakes, OPENAI_ACCESS_TOKEN=TOKEN) as c:
        state, events = state_and_turn(c, isolated_home)
    assert (state["defaultProvider"], state["providerReason"]) == ("OpenRouter", "config provider")
    error = failed_error(events)
    assert error["reason"] == "not_logged_in" and "OPENROUTER_API_KEY" in error["message"]
    assert fakes[1].requests() == []


def test_unknown_provider_in_config_is_a_config_error(isolated_home, fakes):
    """(KWARD_PROVIDER=bogus stops `kward rpc` at start: tests/config/test_env_settings.py.)"""
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text('{"provider": "bogus"}')
    with launch(isolated_home, fakes) as c:
        warnings = c.request("initialize").get("warnings")
        error = c.error("models/current")
    assert warnings and warnings[0]["reason"] == "invalid_config" and "bogus" in warnings[0]["message"]
    assert error.reason == "invalid_config" and "codex, openrouter" in str(error) and "provider" in str(error)
