"""Model methods through `kward rpc` against the fake servers: models/list (endpoints and
fallbacks), openrouter/catalog, models/current, models/set, reasoning/set, and the
usage capability flags."""

import json

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.rpc_models import create_session, finished, run_turn, start_kward

TOKEN = make_jwt("acct_models")
KEY = "sk-or-v1-models0123456789"
FIELDS = {"provider", "id", "name", "reasoning", "reasoningEffort", "contextWindow", "current", "model"}
BUILTIN_CODEX = ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex-spark", "gpt-5.3-codex", "gpt-5.2-codex",
                 "gpt-5.2", "gpt-5.1-codex-max", "gpt-5.1-codex", "gpt-5.1-codex-mini", "gpt-5.1"]
OPENROUTER_DEFAULT_IDS = ["openai/gpt-5.5", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro"]


@pytest.fixture
def codex():
    with FakeCodex() as server:
        yield server


@pytest.fixture
def router():
    with FakeOpenRouter() as server:
        yield server


@pytest.fixture
def on_codex(isolated_home, codex, router):
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=codex.base_url, KWARD_OPENROUTER_BASE_URL=router.base_url,
                     OPENAI_ACCESS_TOKEN=TOKEN) as client:
        yield client


@pytest.fixture
def on_openrouter(isolated_home, codex, router):
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=codex.base_url, KWARD_OPENROUTER_BASE_URL=router.base_url,
                     OPENROUTER_API_KEY=KEY) as client:
        yield client


def config(home):
    return json.loads((home / ".kward" / "config.json").read_text())


def check_entries(models):
    for m in models:
        assert FIELDS <= set(m), m
        assert m["model"] == m["id"]  # legacy alias
        assert isinstance(m["reasoning"], bool) and isinstance(m["current"], bool)
    assert sum(m["current"] for m in models) <= 1


# --- Codex ----------------------------------------------------------------------------------

def test_codex_models_from_the_endpoint(on_codex, codex):
    models = on_codex.request("models/list")["models"]
    check_entries(models)
    assert models == [
        {"provider": "Codex", "id": "gpt-5.5", "name": "GPT-5.5", "reasoning": True, "reasoningEffort": "medium",
         "contextWindow": 400000, "current": True, "model": "gpt-5.5",
         "reasoningEfforts": ["low", "medium", "high", "xhigh"]},
        {"provider": "Codex", "id": "gpt-5.1-codex-mini", "name": "GPT-5.1 Codex Mini", "reasoning": True,
         "reasoningEffort": "medium", "contextWindow": 272000, "current": False, "model": "gpt-5.1-codex-mini",
         "reasoningEfforts": ["medium", "high"]},
    ]  # the hidden model is left out
    [req] = codex.requests("models")
    assert req.query["client_version"] and req.headers["authorization"] == f"Bearer {TOKEN}"
    assert req.headers["chatgpt-account-id"] == "acct_models"
    on_codex.request("models/list")
    assert len(codex.requests("models")) == 1  # cached
    on_codex.request("models/list", {"refresh": True})
    assert len(codex.requests("models")) == 2


def test_codex_models_fall_back_to_the_builtin_table(on_codex, codex):
    codex.script("models", fc.http_error(500, {"detail": "down"}))
    models = on_codex.request("models/list")["models"]
    check_entries(models)
    assert [m["id"] for m in models] == BUILTIN_CODEX
    assert all(m["provider"] == "Codex" and isinstance(m["contextWindow"], int) for m in models)
    mini = next(m for m in models if m["id"] == "gpt-5.1-codex-mini")
    assert mini["reasoningEfforts"] == ["medium", "high"] and not mini["current"]
    assert [m["id"] for m in models if m["current"]] == ["gpt-5.5"]
    # A fallback is not cached: the next call asks the endpoint again.
    assert [m["id"] for m in on_codex.request("models/list")["models"]] == ["gpt-5.5", "gpt-5.1-codex-mini"]


def test_codex_current_and_set(on_codex, codex, isolated_home):
    current = on_codex.request("models/current")
    assert current == {"provider": "Codex", "id": "gpt-5.5", "name": "GPT-5.5", "reasoning": True,
                       "reasoningEffort": "medium", "contextWindow": 400000, "current": True, "model": "gpt-5.5",
                       "reasoningEfforts": ["low", "medium", "high", "xhigh"]}
    result = on_codex.request("models/set", {"model": "gpt-5.1-codex-mini"})
    assert (result["provider"], result["id"], result["model"], result["current"]) == \
        ("Codex", "gpt-5.1-codex-mini", "gpt-5.1-codex-mini", True)
    assert result["contextWindow"] and result["name"] == "GPT-5.1 Codex Mini"
    assert on_codex.request("models/current")["id"] == "gpt-5.1-codex-mini"
    assert config(isolated_home)["openai_model"] == "gpt-5.1-codex-mini" and "provider" not in config(isolated_home)
    listed = on_codex.request("models/list")["models"]
    assert [m["id"] for m in listed if m["current"]] == ["gpt-5.1-codex-mini"]

    session = create_session(on_codex, isolated_home)
    codex.script("responses", fc.text(["ok"]))
    run_turn(on_codex, session["id"])
    assert codex.requests("responses")[0].json["model"] == "gpt-5.1-codex-mini"


def test_models_set_with_a_provider_hint_switches_provider(on_codex, codex, router, isolated_home):
    (isolated_home / ".kward").mkdir(exist_ok=True)
    result = on_codex.request("models/set", {"model": "anthropic/claude-sonnet-4.5", "provider": "OpenRouter"})
    assert (result["provider"], result["id"], result["current"]) == ("OpenRouter", "anthropic/claude-sonnet-4.5", True)
    assert config(isolated_home) == {"provider": "openrouter", "openrouter_model": "anthropic/claude-sonnet-4.5"}
    # Back to Codex by hint, with the Codex model kept separately.
    result = on_codex.request("models/set", {"model": "gpt-5.4", "provider": "Codex"})
    assert (result["provider"], result["id"]) == ("Codex", "gpt-5.4")
    assert config(isolated_home)["provider"] == "codex"
    assert config(isolated_home)["openrouter_model"] == "anthropic/claude-sonnet-4.5"


def test_models_set_rejects_bad_params(on_codex):
    for params, param in [({}, "model"), ({"model": ""}, "model"), ({"model": "bad model id"}, "model"),
                          ({"model": "x", "provider": "Nope"}, "provider")]:
        error = on_codex.error("models/set", params)
        assert error.code == -32602 and error.error["data"].get("param") == param, (params, error.error)


def test_codex_reasoning_set_accepts_usable_efforts(on_codex, isolated_home):
    for effort in ["off", "low", "medium", "high", "xhigh", "HIGH"]:
        result = on_codex.request("reasoning/set", {"effort": effort})
        assert result["reasoningEffort"] == effort.lower() and result["id"] == "gpt-5.5"
        assert config(isolated_home)["openai_reasoning_effort"] == effort.lower()
        assert on_codex.request("models/current")["reasoningEffort"] == effort.lower()


def test_codex_reasoning_set_refuses_what_the_model_cannot_use(on_codex, isolated_home):
    error = on_codex.error("reasoning/set", {"effort": "minimal"})
    assert error.code == -32602 and error.reason == "invalid_params" and error.error["data"]["param"] == "effort"
    assert "gpt-5.5" in str(error) and "'minimal'" in str(error) and "low, medium, high, xhigh" in str(error)
    on_codex.request("models/set", {"model": "gpt-5.1-codex-mini"})
    error = on_codex.error("reasoning/set", {"effort": "low"})
    assert error.code == -32602 and "choose one of: medium, high (or off)" in str(error)
    error = on_codex.error("reasoning/set", {"effort": "extreme"})
    assert error.code == -32602 and "off, minimal, low, medium, high, xhigh" in str(error)
    assert "openai_reasoning_effort" not in config(isolated_home)  # nothing was written


# --- OpenRouter -----------------------------------------------------------------------------

def test_openrouter_models_for_the_key(on_openrouter, router):
    models = on_openrouter.request("models/list")["models"]
    check_entries(models)
    assert [m["id"] for m in models] == [m["id"] for m in router.user_models]
    gpt = models[0]
    assert gpt == {"provider": "OpenRouter", "id": "openai/gpt-5.5", "name": "OpenAI: GPT-5.5", "reasoning": True,
                   "reasoningEffort": "off", "contextWindow": 400000, "current": True, "model": "openai/gpt-5.5",
                   "reasoningEfforts": ["minimal", "low", "medium", "high", "xhigh"]}
    assert router.requests("models_user")[0].headers["authorization"] == f"Bearer {KEY}"
    assert router.requests("models") == []


def test_openrouter_models_fall_back_to_the_catalog(on_openrouter, router):
    failures = [fo.http_error(404, "No eligible endpoints found"), fo.http_error(500, "x"),
                fo.json_response(200, {"data": []})]
    for n, failure in enumerate(failures):
        router.script("models_user", failure)
        models = on_openrouter.request("models/list", {"refresh": True})["models"]
        check_entries(models)
        assert [m["id"] for m in models] == [m["id"] for m in fo.CATALOG], failure.name
        llama = models[2]
        assert (llama["reasoning"], llama["contextWindow"], llama["current"]) == (False, 131072, False)
        assert "authorization" not in router.requests("models")[n].headers


def test_openrouter_models_fall_back_to_defaults(on_openrouter, router):
    router.script("models_user", fo.http_error(500, "down"))
    router.script("models", fo.http_error(503, "down"))
    models = on_openrouter.request("models/list")["models"]
    check_entries(models)
    assert [m["id"] for m in models] == OPENROUTER_DEFAULT_IDS
    assert [m["id"] for m in models if m["current"]] == ["openai/gpt-5.5"]


def test_openrouter_catalog_is_the_full_public_catalog(on_codex, router):
    # Works while Codex is the active provider and no OpenRouter key exists.
    models = on_codex.request("openrouter/catalog")["models"]
    check_entries(models)
    assert [m["id"] for m in models] == [m["id"] for m in fo.CATALOG]
    assert {m["provider"] for m in models} == {"OpenRouter"} and not any(m["current"] for m in models)
    assert [m["contextWindow"] for m in models] == [400000, 1000000, 131072]
    assert [m["reasoning"] for m in models] == [True, True, False]
    assert "authorization" not in router.requests("models")[0].headers


def test_openrouter_current_set_and_turn(on_openrouter, router, isolated_home):
    assert on_openrouter.request("models/current")["id"] == "openai/gpt-5.5"
    result = on_openrouter.request("models/set", {"model": "anthropic/claude-sonnet-4.5"})
    assert (result["provider"], result["id"], result["contextWindow"]) == \
        ("OpenRouter", "anthropic/claude-sonnet-4.5", 1000000)
    assert config(isolated_home) == {"openrouter_model": "anthropic/claude-sonnet-4.5"}
    session = create_session(on_openrouter, isolated_home)
    router.script("chat", fo.text(["ok"]))
    assert finished(run_turn(on_openrouter, session["id"]))["status"] == "completed"
    assert router.requests("chat")[0].json["model"] == "anthropic/claude-sonnet-4.5"


def test_openrouter_reasoning_set_each_effort(on_openrouter, isolated_home):
    for effort in ["off", "minimal", "low", "medium", "high", "xhigh"]:
        result = on_openrouter.request("reasoning/set", {"effort": effort})
        assert result["reasoningEffort"] == effort and result["provider"] == "OpenRouter"
        assert config(isolated_home)["openrouter_reasoning_effort"] == effort


def test_openrouter_reasoning_set_refuses_a_model_without_reasoning(on_openrouter, router, isolated_home):
    router.user_models = list(fo.CATALOG)  # the key may use llama, which cannot reason
    on_openrouter.request("models/set", {"model": "meta-llama/llama-3.1-8b-instruct"})
    error = on_openrouter.error("reasoning/set", {"effort": "high"})
    assert error.code == -32602 and error.error["data"]["param"] == "effort"
    assert "meta-llama/llama-3.1-8b-instruct does not support reasoning" in str(error) and "off" in str(error)
    assert on_openrouter.request("reasoning/set", {"effort": "off"})["reasoningEffort"] == "off"
    current = on_openrouter.request("models/current")
    assert (current["name"], current["reasoning"], current["contextWindow"]) == \
        ("Meta: Llama 3.1 8B Instruct", False, 131072)


def test_openrouter_reasoning_set_checks_the_catalog_for_models_the_key_lacks(on_openrouter, router):
    on_openrouter.request("models/set", {"model": "meta-llama/llama-3.1-8b-instruct"})  # not in /models/user
    error = on_openrouter.error("reasoning/set", {"effort": "low"})
    assert error.code == -32602 and "does not support reasoning" in str(error)


# --- capabilities ---------------------------------------------------------------------------

def test_initialize_reports_token_and_cost_stats_and_model_methods(on_codex):
    caps = on_codex.request("initialize")["capabilities"]
    assert caps["runtime"]["stats"]["tokens"] is True and caps["runtime"]["stats"]["cost"] is True
    assert set(caps["models"]["methods"]) == {"models/list", "models/current", "models/set", "reasoning/set",
                                              "openrouter/catalog"}
    assert caps["events"]["modelRetry"] == {"supported": True, "event": "modelRetry"}
    assert set(caps["runtimeSettings"]["methods"]) >= {"runtime/updateSetting", "runtime/reload"}
    assert caps["runtimeSettings"]["settings"] == ["defaultModel", "defaultThinkingLevel"]


def test_initialize_reports_trace_forwarding(on_codex):
    assert on_codex.request("initialize")["capabilities"]["rpc"]["trace"]["supported"] is True
