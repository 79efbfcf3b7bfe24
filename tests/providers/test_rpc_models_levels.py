"""Reasoning levels through `kward rpc`: every level a client offers (off .. xhigh and max)
is accepted for every model by `reasoning/set` and `runtime/updateSetting
defaultThinkingLevel`, stored as requested, reported as requested plus the effective level
where they differ, and mapped to the nearest level the model offers in the request the
fake Codex / fake OpenRouter receives."""

import json

import pytest

from lib import fake_codex as fc
from lib import fake_openrouter as fo
from lib.config_files import read_config
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.scripts import text, write_script
from lib.turn_events import finished

TOKEN = make_jwt("acct_levels")
KEY = "sk-or-v1-levels0123456789"
LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"]
LLAMA = "meta-llama/llama-3.1-8b-instruct"  # no reasoning in the fake catalog
# what each level becomes ("off": no reasoning sent)
GPT55 = {"off": "off", "minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh",
         "max": "xhigh"}  # Codex gpt-5.5: low .. xhigh
CODEX_MINI = {"off": "off", "minimal": "medium", "low": "medium", "medium": "medium", "high": "high",
              "xhigh": "high", "max": "high"}  # Codex gpt-5.1-codex-mini: medium, high
OPENROUTER_GPT = {**{level: level for level in LEVELS}, "max": "xhigh"}  # minimal .. xhigh
UNKNOWN = OPENROUTER_GPT  # a model whose levels nobody lists: as requested, max as xhigh
NO_REASONING = {level: "off" for level in LEVELS}


@pytest.fixture
def fakes():
    with FakeCodex() as codex, FakeOpenRouter() as router:
        yield codex, router


def start(home, fakes, **env):
    codex, router = fakes
    return start_kward(home, KWARD_CODEX_BASE_URL=codex.base_url, KWARD_OPENROUTER_BASE_URL=router.base_url, **env)


@pytest.fixture
def on_codex(isolated_home, fakes):
    with start(isolated_home, fakes, OPENAI_ACCESS_TOKEN=TOKEN) as client:
        client.session = create_session(client, isolated_home)
        yield client


@pytest.fixture
def on_openrouter(isolated_home, fakes):
    with start(isolated_home, fakes, OPENROUTER_API_KEY=KEY) as client:
        client.session = create_session(client, isolated_home)
        yield client


def set_level(client, level, via):
    """Set the level through `reasoning/set` or `runtime/updateSetting`; returns the current
    model entry the former answers (models/current for the latter)."""
    if via == "reasoning/set":
        return client.request("reasoning/set", {"effort": level})
    result = client.request("runtime/updateSetting", {"sessionId": client.session["id"],
                                                      "settingId": "defaultThinkingLevel", "value": level})
    assert result["applied"] == "live" and f"set to {level.lower()}." in result["message"]
    return client.request("models/current")


def check_reported(client, entry, requested, effective):
    """The entry, models/current and runtime/state tell the requested level and, only when
    it differs, the effective one."""
    current = client.request("models/current")
    assert current == entry
    state = client.request("runtime/state", {"sessionId": client.session["id"]})
    assert state["model"] == entry
    assert entry["reasoningEffort"] == state["thinkingLevel"] == state["defaultThinkingLevel"] == requested
    if effective == requested:
        assert "effectiveReasoningEffort" not in entry and "effectiveThinkingLevel" not in state
    else:
        assert entry["effectiveReasoningEffort"] == state["effectiveThinkingLevel"] == effective


def sent_codex_level(body):
    assert ("reasoning" in body) == ("reasoning.encrypted_content" in body["include"])
    return body["reasoning"]["effort"] if "reasoning" in body else "off"


def sent_chat_level(body):
    return body["reasoning"]["effort"] if "reasoning" in body else "off"


def run_levels(client, home, expected, config_key, via, next_body, sent_level, turns=True):
    for n, (level, effective) in enumerate(expected.items()):
        requested = level.upper() if n % 2 else level  # case-insensitive
        entry = set_level(client, requested, via)
        assert entry["current"] is True
        check_reported(client, entry, level, effective)
        assert read_config(home)[config_key] == level  # stored as requested
        if turns:
            assert finished(run_turn(client, client.session["id"]))["status"] == "completed"
            assert sent_level(next_body()) == effective, level


# --- Codex ----------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["reasoning/set", "runtime/updateSetting"])
@pytest.mark.slow
def test_every_level_on_a_codex_model(on_codex, fakes, isolated_home, via):
    codex, _ = fakes
    codex.script("responses", *[fc.text(["ok"]) for _ in LEVELS])
    run_levels(on_codex, isolated_home, GPT55, "openai_reasoning_effort", via,
               lambda: codex.requests("responses")[-1].json, sent_codex_level)


@pytest.mark.slow
def test_every_level_on_a_codex_model_without_low(on_codex, fakes, isolated_home):
    codex, _ = fakes
    assert on_codex.request("models/set", {"model": "gpt-5.1-codex-mini"})["reasoningEfforts"] == ["medium", "high"]
    codex.script("responses", *[fc.text(["ok"]) for _ in LEVELS])
    run_levels(on_codex, isolated_home, CODEX_MINI, "openai_reasoning_effort", "reasoning/set",
               lambda: codex.requests("responses")[-1].json, sent_codex_level)


@pytest.mark.slow
def test_a_model_nobody_lists_gets_the_requested_level(on_codex, fakes, isolated_home):
    codex, _ = fakes
    entry = on_codex.request("models/set", {"model": "gpt-9-preview"})
    assert entry["id"] == "gpt-9-preview" and entry["reasoningEfforts"] is None
    codex.script("responses", *[fc.text(["ok"]) for _ in LEVELS])
    run_levels(on_codex, isolated_home, UNKNOWN, "openai_reasoning_effort", "runtime/updateSetting",
               lambda: codex.requests("responses")[-1].json, sent_codex_level)


@pytest.mark.slow
def test_models_set_keeps_the_requested_level_and_maps_it(on_codex, fakes, isolated_home):
    codex, _ = fakes
    assert "effectiveReasoningEffort" not in on_codex.request("reasoning/set", {"effort": "xhigh"})
    entry = on_codex.request("models/set", {"model": "gpt-5.1-codex-mini"})
    assert (entry["id"], entry["reasoningEffort"], entry["effectiveReasoningEffort"]) == \
        ("gpt-5.1-codex-mini", "xhigh", "high")
    assert read_config(isolated_home) == {"openai_reasoning_effort": "xhigh", "openai_model": "gpt-5.1-codex-mini"}
    codex.script("responses", fc.text(["ok"]), fc.text(["ok"]))
    run_turn(on_codex, on_codex.session["id"])
    assert codex.requests("responses")[-1].json["reasoning"]["effort"] == "high"
    entry = on_codex.request("models/set", {"model": "gpt-5.5"})
    assert entry["reasoningEffort"] == "xhigh" and "effectiveReasoningEffort" not in entry
    run_turn(on_codex, on_codex.session["id"])
    assert codex.requests("responses")[-1].json["reasoning"]["effort"] == "xhigh"


@pytest.mark.slow
def test_a_fresh_process_maps_a_stored_level_without_fetching_a_known_model(isolated_home, fakes):
    codex, _ = fakes
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"openai_reasoning_effort": "max"}))
    with start(isolated_home, fakes, OPENAI_ACCESS_TOKEN=TOKEN) as client:
        codex.script("responses", fc.text(["ok"]))
        run_turn(client, create_session(client, isolated_home)["id"])
        assert codex.requests("responses")[0].json["reasoning"]["effort"] == "xhigh"
        assert codex.requests("models") == []  # the built-in table knows gpt-5.5


@pytest.mark.slow
def test_unknown_levels_are_refused_and_change_nothing(on_codex, isolated_home):
    on_codex.request("reasoning/set", {"effort": "high"})
    for bad in ["extreme", "", "max!", "minimal low"]:
        error = on_codex.error("reasoning/set", {"effort": bad})
        assert error.code == -32602 and error.reason == "invalid_params" and error.error["data"]["param"] == "effort"
        assert "off, minimal, low, medium, high, xhigh, max" in str(error)
        error = on_codex.error("runtime/updateSetting", {"sessionId": on_codex.session["id"],
                                                        "settingId": "defaultThinkingLevel", "value": bad})
        assert error.code == -32602 and error.error["data"]["param"] == "value", bad
    for params in [{}, {"effort": 3}, {"effort": None}]:
        assert on_codex.error("reasoning/set", params).code == -32602
    assert read_config(isolated_home) == {"openai_reasoning_effort": "high"}


# --- OpenRouter -----------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["reasoning/set", "runtime/updateSetting"])
@pytest.mark.slow
def test_every_level_on_an_openrouter_model(on_openrouter, fakes, isolated_home, via):
    _, router = fakes
    router.script("chat", *[fo.text(["ok"]) for _ in LEVELS])
    run_levels(on_openrouter, isolated_home, OPENROUTER_GPT, "openrouter_reasoning_effort", via,
               lambda: router.requests("chat")[-1].json, sent_chat_level)


@pytest.mark.slow
def test_every_level_on_a_model_without_reasoning(on_openrouter, fakes, isolated_home):
    _, router = fakes
    router.user_models = list(fo.CATALOG)  # the key may use llama
    entry = on_openrouter.request("models/set", {"model": LLAMA})
    assert (entry["reasoning"], entry["reasoningEfforts"]) == (False, [])
    router.script("chat", *[fo.text(["ok"]) for _ in LEVELS])
    run_levels(on_openrouter, isolated_home, NO_REASONING, "openrouter_reasoning_effort", "reasoning/set",
               lambda: router.requests("chat")[-1].json, sent_chat_level)


@pytest.mark.slow
def test_a_model_only_the_catalog_lists(on_openrouter, fakes, isolated_home):
    _, router = fakes
    on_openrouter.request("models/set", {"model": LLAMA})  # not in /models/user: known from /models
    entry = on_openrouter.request("reasoning/set", {"effort": "low"})
    assert (entry["name"], entry["reasoningEffort"], entry["effectiveReasoningEffort"]) == \
        ("Meta: Llama 3.1 8B Instruct", "low", "off")
    router.script("chat", fo.text(["ok"]))
    run_turn(on_openrouter, on_openrouter.session["id"])
    assert "reasoning" not in router.requests("chat")[0].json


@pytest.mark.slow
def test_a_fresh_process_looks_an_unknown_model_up_before_the_request(isolated_home, fakes):
    _, router = fakes
    router.user_models = list(fo.CATALOG)
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text(json.dumps(
        {"openrouter_model": LLAMA, "openrouter_reasoning_effort": "high"}))
    with start(isolated_home, fakes, OPENROUTER_API_KEY=KEY) as client:
        router.script("chat", fo.text(["ok"]), fo.text(["ok"]))
        session = create_session(client, isolated_home)
        run_turn(client, session["id"])
        assert "reasoning" not in router.requests("chat")[0].json
        assert len(router.requests("models_user")) == 1  # the engine looked the model up
        run_turn(client, session["id"])
        assert "reasoning" not in router.requests("chat")[1].json
        assert len(router.requests("models_user")) == 1  # then the cached listing answered
        current = client.request("models/current")
        assert (current["reasoningEffort"], current["effectiveReasoningEffort"]) == ("high", "off")


# --- Scripted -------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["reasoning/set", "runtime/updateSetting"])
@pytest.mark.slow
def test_every_level_on_the_scripted_provider(isolated_home, fakes, via):
    script = write_script(isolated_home, [[text("ok")]], loop=True)
    with start(isolated_home, fakes, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script)) as client:
        client.session = create_session(client, isolated_home)
        assert client.request("models/current")["provider"] == "Scripted"
        run_levels(client, isolated_home, UNKNOWN, "reasoning_effort", via, None, None, turns=False)
        assert finished(run_turn(client, client.session["id"]))["status"] == "completed"


@pytest.mark.slow
def test_config_json_takes_every_level(on_codex, fakes, isolated_home):
    codex, _ = fakes
    for key in ["openai_reasoning_effort", "openrouter_reasoning_effort", "reasoning_effort", "thinking_level"]:
        assert on_codex.request("config/update", {"values": {key: "max"}})["config"][key] == "max"
        error = on_codex.error("config/update", {"values": {key: "maximum"}})
        assert error.code == -32602 and error.reason == "invalid_config", key
    assert read_config(isolated_home)["openai_reasoning_effort"] == "max"
    codex.script("responses", fc.text(["ok"]))
    run_turn(on_codex, on_codex.session["id"])
    assert codex.requests("responses")[0].json["reasoning"]["effort"] == "xhigh"
