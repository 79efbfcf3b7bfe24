"""Model methods through `kward rpc` against the fake servers: models/list (endpoints and
fallbacks, and the `source` each result names), openrouter/catalog, models/current,
models/set, and the usage capability flags. Reasoning levels: test_rpc_models_levels.py."""

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.config_files import read_config
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_http import served
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import DEAD, create_session, run_turn, start_kward
from lib.turn_events import finished

TOKEN = make_jwt("acct_models")
KEY = "sk-or-v1-models0123456789"
FIELDS = {"provider", "id", "name", "reasoning", "reasoningEffort", "contextWindow", "current", "model"}
BUILTIN_CODEX = ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex-spark", "gpt-5.3-codex", "gpt-5.2-codex",
                 "gpt-5.2", "gpt-5.1-codex-max", "gpt-5.1-codex", "gpt-5.1-codex-mini", "gpt-5.1"]
OPENROUTER_DEFAULT_IDS = ["openai/gpt-5.5", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro"]


codex = served(FakeCodex)
router = served(FakeOpenRouter)


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


def check_entries(models):
    for m in models:
        assert FIELDS <= set(m), m
        assert m["model"] == m["id"]  # legacy alias
        assert isinstance(m["reasoning"], bool) and isinstance(m["current"], bool)
    assert sum(m["current"] for m in models) <= 1


# --- Codex ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_codex_models_from_the_endpoint(on_codex, codex):
    result = on_codex.request("models/list")
    assert set(result) == {"models", "source"} and result["source"] == "api"
    models = result["models"]
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
    again = on_codex.request("models/list")
    assert len(codex.requests("models")) == 1  # cached
    assert again == {"models": models, "source": "cache"}
    assert on_codex.request("models/list", {"refresh": True}) == {"models": models, "source": "api"}
    assert len(codex.requests("models")) == 2


@pytest.mark.slow
def test_codex_models_fall_back_to_the_builtin_table(on_codex, codex):
    codex.script("models", fc.http_error(500, {"detail": "down"}))
    result = on_codex.request("models/list")
    assert (result["source"], result["sourceError"]) == ("builtin", "HTTP 500")
    models = result["models"]
    check_entries(models)
    assert [m["id"] for m in models] == BUILTIN_CODEX
    assert all(m["provider"] == "Codex" and isinstance(m["contextWindow"], int) for m in models)
    mini = next(m for m in models if m["id"] == "gpt-5.1-codex-mini")
    assert mini["reasoningEfforts"] == ["medium", "high"] and not mini["current"]
    assert [m["id"] for m in models if m["current"]] == ["gpt-5.5"]
    # A fallback is not cached: the next call asks the endpoint again.
    result = on_codex.request("models/list")
    assert [m["id"] for m in result["models"]] == ["gpt-5.5", "gpt-5.1-codex-mini"] and result["source"] == "api"


@pytest.mark.slow
def test_codex_models_when_the_endpoint_is_down_or_nobody_is_logged_in(isolated_home):
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=DEAD + "/backend-api/codex",
                     OPENAI_ACCESS_TOKEN=TOKEN) as client:  # connection refused
        result = client.request("models/list")
        assert result["source"] == "builtin" and result["sourceError"]
        assert [m["id"] for m in result["models"]] == BUILTIN_CODEX
        assert client.request("models/list")["source"] == "builtin"  # still not cached
    with start_kward(isolated_home, KWARD_PROVIDER="codex") as client:
        result = client.request("models/list")
        assert result["source"] == "builtin" and "not logged in" in result["sourceError"].lower()


def test_scripted_models_are_built_in(isolated_home):
    with start_kward(isolated_home, KWARD_PROVIDER="scripted") as client:
        result = client.request("models/list")
        assert result["source"] == "builtin" and "sourceError" not in result
        assert [(m["provider"], m["current"]) for m in result["models"]] == [("Scripted", True)]


@pytest.mark.slow
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
    assert read_config(isolated_home)["openai_model"] == "gpt-5.1-codex-mini" and "provider" not in read_config(isolated_home)
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
    assert read_config(isolated_home) == {"provider": "openrouter", "openrouter_model": "anthropic/claude-sonnet-4.5"}
    # Back to Codex by hint, with the Codex model kept separately.
    result = on_codex.request("models/set", {"model": "gpt-5.4", "provider": "Codex"})
    assert (result["provider"], result["id"]) == ("Codex", "gpt-5.4")
    assert read_config(isolated_home)["provider"] == "codex"
    assert read_config(isolated_home)["openrouter_model"] == "anthropic/claude-sonnet-4.5"


@pytest.mark.slow
def test_models_set_rejects_bad_params(on_codex):
    for params, param in [({}, "model"), ({"model": ""}, "model"), ({"model": "bad model id"}, "model"),
                          ({"model": "x", "provider": "Nope"}, "provider")]:
        error = on_codex.error("models/set", params)
        assert error.code == -32602 and error.error["data"].get("param") == param, (params, error.error)


# --- OpenRouter -----------------------------------------------------------------------------

@pytest.mark.slow
def test_openrouter_models_for_the_key(on_openrouter, router):
    result = on_openrouter.request("models/list")
    assert set(result) == {"models", "source"} and result["source"] == "api"
    models = result["models"]
    check_entries(models)
    assert [m["id"] for m in models] == [m["id"] for m in router.user_models]
    gpt = models[0]
    assert gpt == {"provider": "OpenRouter", "id": "openai/gpt-5.5", "name": "OpenAI: GPT-5.5", "reasoning": True,
                   "reasoningEffort": "off", "contextWindow": 400000, "current": True, "model": "openai/gpt-5.5",
                   "reasoningEfforts": ["minimal", "low", "medium", "high", "xhigh"]}
    assert router.requests("models_user")[0].headers["authorization"] == f"Bearer {KEY}"
    assert router.requests("models") == []
    assert on_openrouter.request("models/list") == {"models": models, "source": "cache"}
    assert len(router.requests("models_user")) == 1


@pytest.mark.slow
def test_openrouter_models_fall_back_to_the_catalog(on_openrouter, router):
    failures = [fo.http_error(404, "No eligible endpoints found"), fo.http_error(500, "x"),
                fo.json_response(200, {"data": []})]
    for n, failure in enumerate(failures):
        router.script("models_user", failure)
        result = on_openrouter.request("models/list", {"refresh": True})
        assert result["source"] == "api" and result["sourceError"].startswith(("models for the key", "no models"))
        models = result["models"]
        check_entries(models)
        assert [m["id"] for m in models] == [m["id"] for m in fo.CATALOG], failure.name
        llama = models[2]
        assert (llama["reasoning"], llama["contextWindow"], llama["current"]) == (False, 131072, False)
        assert "authorization" not in router.requests("models")[n].headers


@pytest.mark.slow
def test_openrouter_models_fall_back_to_defaults(on_openrouter, router):
    router.script("models_user", fo.http_error(500, "down"))
    router.script("models", fo.http_error(503, "down"))
    result = on_openrouter.request("models/list")
    assert result["source"] == "builtin"
    assert result["sourceError"] == "models for the key: HTTP 500; catalog: HTTP 503"
    models = result["models"]
    check_entries(models)
    assert [m["id"] for m in models] == OPENROUTER_DEFAULT_IDS
    assert [m["id"] for m in models if m["current"]] == ["openai/gpt-5.5"]


@pytest.mark.slow
def test_openrouter_catalog_is_the_full_public_catalog(on_codex, router):
    # Works while Codex is the active provider and no OpenRouter key exists.
    result = on_codex.request("openrouter/catalog")
    assert set(result) == {"models", "source"} and result["source"] == "api"
    models = result["models"]
    check_entries(models)
    assert [m["id"] for m in models] == [m["id"] for m in fo.CATALOG]
    assert {m["provider"] for m in models} == {"OpenRouter"} and not any(m["current"] for m in models)
    assert [m["contextWindow"] for m in models] == [400000, 1000000, 131072]
    assert [m["reasoning"] for m in models] == [True, True, False]
    assert "authorization" not in router.requests("models")[0].headers
    assert on_codex.request("openrouter/catalog") == {"models": models, "source": "cache"}
    assert len(router.requests("models")) == 1


@pytest.mark.slow
def test_openrouter_catalog_falls_back_to_the_builtin_defaults(on_codex, router, isolated_home):
    router.script("models", fo.http_error(503, "down"))
    result = on_codex.request("openrouter/catalog")
    assert (result["source"], result["sourceError"]) == ("builtin", "catalog: HTTP 503")
    assert [m["id"] for m in result["models"]] == OPENROUTER_DEFAULT_IDS
    assert on_codex.request("openrouter/catalog")["source"] == "api"  # the fallback was not cached
    with start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=DEAD + "/api/v1") as client:  # connection refused
        result = client.request("openrouter/catalog")
        assert result["source"] == "builtin" and result["sourceError"].startswith("catalog: ")
        assert [m["id"] for m in result["models"]] == OPENROUTER_DEFAULT_IDS


@pytest.mark.slow
def test_openrouter_current_set_and_turn(on_openrouter, router, isolated_home):
    assert on_openrouter.request("models/current")["id"] == "openai/gpt-5.5"
    result = on_openrouter.request("models/set", {"model": "anthropic/claude-sonnet-4.5"})
    assert (result["provider"], result["id"], result["contextWindow"]) == \
        ("OpenRouter", "anthropic/claude-sonnet-4.5", 1000000)
    assert read_config(isolated_home) == {"openrouter_model": "anthropic/claude-sonnet-4.5"}
    session = create_session(on_openrouter, isolated_home)
    router.script("chat", fo.text(["ok"]))
    assert finished(run_turn(on_openrouter, session["id"]))["status"] == "completed"
    assert router.requests("chat")[0].json["model"] == "anthropic/claude-sonnet-4.5"


@pytest.mark.slow
def test_openrouter_current_describes_a_model_without_reasoning(on_openrouter, router):
    router.user_models = list(fo.CATALOG)  # the key may use llama, which cannot reason
    on_openrouter.request("models/set", {"model": "meta-llama/llama-3.1-8b-instruct"})
    current = on_openrouter.request("models/current")
    assert (current["name"], current["reasoning"], current["reasoningEfforts"], current["contextWindow"]) == \
        ("Meta: Llama 3.1 8B Instruct", False, [], 131072)
    assert current["reasoningEffort"] == "off" and "effectiveReasoningEffort" not in current


# --- capabilities ---------------------------------------------------------------------------

def test_initialize_reports_token_and_cost_stats_and_model_methods(on_codex):
    caps = on_codex.request("initialize")["capabilities"]
    assert caps["runtime"]["stats"]["tokens"] is True and caps["runtime"]["stats"]["cost"] is True
    assert set(caps["models"]["methods"]) == {"models/list", "models/current", "models/set", "reasoning/set",
                                              "openrouter/catalog"}
    assert caps["events"]["modelRetry"] == {"supported": True, "event": "modelRetry"}
    assert set(caps["runtimeSettings"]["methods"]) >= {"runtime/updateSetting", "runtime/reload"}
    assert caps["runtimeSettings"]["settings"] == ["defaultModel", "defaultThinkingLevel", "approvalMode"]


def test_initialize_reports_trace_forwarding(on_codex):
    assert on_codex.request("initialize")["capabilities"]["rpc"]["trace"]["supported"] is True
