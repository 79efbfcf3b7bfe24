"""runtime/updateSetting and runtime/reload through `kward rpc`, checked by what the next
model request carries."""

import json

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.config_files import read_config
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.turn_events import finished

TOKEN = make_jwt("acct_settings")
KEY = "sk-or-v1-settings0123456789"


@pytest.fixture
def fakes():
    with FakeCodex() as codex, FakeOpenRouter() as router:
        yield codex, router


@pytest.fixture
def kward(isolated_home, fakes):
    codex, router = fakes
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=codex.base_url, KWARD_OPENROUTER_BASE_URL=router.base_url,
                     OPENAI_ACCESS_TOKEN=TOKEN, OPENROUTER_API_KEY=KEY) as client:
        client.session = create_session(client, isolated_home)
        yield client


def update(client, setting, value):
    return client.request("runtime/updateSetting", {"sessionId": client.session["id"], "settingId": setting,
                                                    "value": value})


def state(client):
    return client.request("runtime/state", {"sessionId": client.session["id"]})


@pytest.mark.slow
def test_default_model_keeps_the_slashes_after_the_provider(kward, fakes, isolated_home):
    codex, router = fakes
    result = update(kward, "defaultModel", "OpenRouter/openai/gpt-5.5")
    assert result["applied"] == "live" and "OpenRouter/openai/gpt-5.5" in result["message"]
    assert read_config(isolated_home) == {"provider": "openrouter", "openrouter_model": "openai/gpt-5.5"}
    s = state(kward)
    assert (s["defaultModel"], s["defaultProvider"], s["model"]["id"]) == \
        ("OpenRouter/openai/gpt-5.5", "OpenRouter", "openai/gpt-5.5")
    current = kward.request("models/current")
    assert (current["provider"], current["id"], current["model"]) == ("OpenRouter", "openai/gpt-5.5", "openai/gpt-5.5")
    router.script("chat", fo.text(["ok"]))
    assert finished(run_turn(kward, kward.session["id"]))["status"] == "completed"
    assert router.requests("chat")[0].json["model"] == "openai/gpt-5.5" and codex.requests() == []

    update(kward, "defaultModel", "OpenRouter/meta-llama/llama-3.1-8b-instruct:free")
    assert read_config(isolated_home)["openrouter_model"] == "meta-llama/llama-3.1-8b-instruct:free"
    update(kward, "defaultModel", "Codex/gpt-5.4")
    assert read_config(isolated_home)["provider"] == "codex" and read_config(isolated_home)["openai_model"] == "gpt-5.4"
    codex.script("responses", fc.text(["ok"]))
    run_turn(kward, kward.session["id"])
    assert codex.requests("responses")[0].json["model"] == "gpt-5.4"


def test_default_model_rejects_malformed_values(kward, isolated_home):
    for value in ["gpt-5.5", "OpenRouter/", "/gpt-5.5", "Nope/model", "Codex/bad id"]:
        error = kward.error("runtime/updateSetting", {"sessionId": kward.session["id"], "settingId": "defaultModel",
                                                     "value": value})
        assert error.code == -32602 and error.error["data"]["param"] == "value", (value, error.error)
    assert not (isolated_home / ".kward" / "config.json").exists()


@pytest.mark.slow
def test_default_thinking_level(kward, fakes, isolated_home):
    codex, _ = fakes
    result = update(kward, "defaultThinkingLevel", "high")
    assert result["applied"] == "live" and "high" in result["message"]
    assert read_config(isolated_home)["openai_reasoning_effort"] == "high"
    assert state(kward)["thinkingLevel"] == "high" and kward.request("models/current")["reasoningEffort"] == "high"
    codex.script("responses", fc.text(["ok"]), fc.text(["ok"]))
    run_turn(kward, kward.session["id"])
    assert codex.requests("responses")[0].json["reasoning"] == {"effort": "high", "summary": "auto"}
    update(kward, "defaultThinkingLevel", "off")
    assert state(kward)["thinkingLevel"] == "off"
    run_turn(kward, kward.session["id"])
    assert "reasoning" not in codex.requests("responses")[1].json

    result = update(kward, "defaultThinkingLevel", "minimal")  # gpt-5.5 offers no minimal: low is sent
    assert result["message"] == "Default thinking level set to minimal. gpt-5.5 uses low."
    error = kward.error("runtime/updateSetting", {"sessionId": kward.session["id"],
                                                 "settingId": "defaultThinkingLevel", "value": "extreme"})
    assert error.code == -32602 and error.error["data"]["param"] == "value" and "extreme" in str(error)
    assert read_config(isolated_home)["openai_reasoning_effort"] == "minimal"


def test_unknown_setting_and_bad_session(kward):
    error = kward.error("runtime/updateSetting", {"sessionId": kward.session["id"], "settingId": "theme",
                                                 "value": "dark"})
    assert error.code == -32602 and "theme" in str(error) and error.error["data"]["param"] == "settingId"
    error = kward.error("runtime/updateSetting", {"sessionId": "nope", "settingId": "defaultModel",
                                                 "value": "Codex/gpt-5.5"})
    assert error.code == -32602 and str(error) == "Unknown session: nope" and error.reason == "session_not_found"
    error = kward.error("runtime/updateSetting", {"sessionId": kward.session["id"], "settingId": "defaultModel"})
    assert error.code == -32602 and "value" in str(error)


@pytest.mark.slow
def test_kward_provider_in_the_environment_is_mentioned(isolated_home, fakes):
    codex, _ = fakes
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=codex.base_url, OPENAI_ACCESS_TOKEN=TOKEN,
                     KWARD_PROVIDER="codex") as c:
        c.session = create_session(c, isolated_home)
        result = update(c, "defaultModel", "OpenRouter/openai/gpt-5.5")
        assert "KWARD_PROVIDER" in result["message"]
        assert state(c)["defaultProvider"] == "Codex"  # the environment still wins


@pytest.mark.slow
def test_reload_rereads_config_and_refetches_models(kward, fakes, isolated_home):
    codex, _ = fakes
    kward.request("models/list")
    kward.request("models/list")
    assert len(codex.requests("models")) == 1  # cached
    result = kward.request("runtime/reload", {"sessionId": kward.session["id"]})
    assert result == {"ok": True, "message": "Resources reloaded."}
    kward.request("models/list")
    assert len(codex.requests("models")) == 2  # the cache was cleared

    (isolated_home / ".kward").mkdir(exist_ok=True)
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"openai_model": "gpt-5.2"}))
    kward.request("runtime/reload", {"sessionId": kward.session["id"]})
    assert state(kward)["defaultModel"] == "Codex/gpt-5.2"
    codex.script("responses", fc.text(["ok"]))
    run_turn(kward, kward.session["id"])
    assert codex.requests("responses")[0].json["model"] == "gpt-5.2"

    error = kward.error("runtime/reload", {"sessionId": "nope"})
    assert error.code == -32602 and error.reason == "session_not_found"


@pytest.mark.slow
def test_switching_model_keeps_the_requested_level_and_sends_one_the_model_offers(kward, fakes, isolated_home):
    codex, _ = fakes
    codex.script("models", fc.http_error(500, {"error": "down"}))  # the built-in table answers
    assert kward.request("reasoning/set", {"effort": "low"})["reasoningEffort"] == "low"
    current = kward.request("models/set", {"model": "gpt-5.1-codex-mini"})
    assert (current["id"], current["reasoningEffort"], current["effectiveReasoningEffort"]) == \
        ("gpt-5.1-codex-mini", "low", "medium")
    s = state(kward)
    assert (s["thinkingLevel"], s["defaultThinkingLevel"], s["effectiveThinkingLevel"]) == ("low", "low", "medium")
    codex.script("responses", fc.text(["ok"]))
    assert finished(run_turn(kward, kward.session["id"]))["status"] == "completed"
    assert codex.requests("responses")[-1].json["reasoning"]["effort"] == "medium"
    current = kward.request("models/set", {"model": "gpt-5.5"})
    assert current["reasoningEffort"] == "low" and "effectiveReasoningEffort" not in current
    assert read_config(isolated_home)["openai_reasoning_effort"] == "low"


@pytest.mark.slow
def test_a_hand_edit_of_config_json_applies_at_once_and_a_bad_key_gives_way(kward, fakes, isolated_home):
    codex, _ = fakes
    (isolated_home / ".kward").mkdir(exist_ok=True)
    path = isolated_home / ".kward" / "config.json"
    path.write_text(json.dumps({"openai_model": "gpt-5.4", "openai_reasoning_effort": "high"}))
    current = kward.request("models/current")  # no reload: the settings follow the file's content
    assert (current["id"], current["reasoningEffort"]) == ("gpt-5.4", "high")
    path.write_text(json.dumps({"openai_model": 5, "model": "gpt-5.2", "openai_reasoning_effort": "loud",
                                "reasoning_effort": "low"}))
    current = kward.request("models/current")
    assert (current["id"], current["reasoningEffort"]) == ("gpt-5.2", "low")  # the next key of each
    codex.script("responses", fc.text(["ok"]))
    assert finished(run_turn(kward, kward.session["id"]))["status"] == "completed"
    body = codex.requests("responses")[-1].json
    assert (body["model"], body["reasoning"]["effort"]) == ("gpt-5.2", "low")


@pytest.mark.slow
def test_bad_model_keys_are_warned_about_at_start(isolated_home, fakes):
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"openai_model": 5, "thinking_level": "loud"}))
    with start_kward(isolated_home, OPENAI_ACCESS_TOKEN=TOKEN) as c:
        warnings = c.request("initialize")["warnings"]
        assert [w["message"] for w in warnings] == [
            "config.json: ignoring openai_model: must be a string",
            "config.json: ignoring thinking_level: must be one of off, minimal, low, medium, high, xhigh, max"]
        assert {w["reason"] for w in warnings} == {"invalid_config"}
        assert c.request("models/current")["id"] == "gpt-5.5"
        assert c.close() == 0 and c.stderr == ""
