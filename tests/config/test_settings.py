"""Settings resolved once (kward/config/settings.py): environment over config.json over defaults,
one rule per key shared with config/update, warnings for bad config values (never an
exception), problems for the strict keys raised only by what needs them, and LiveSettings
following config.json's content."""

import json

import pytest

from kward.config import rules
from kward.config.store import ConfigStore, resolve_paths, validate_values
from kward.errors import ConfigError, InvalidParams
from kward.providers import specs
from kward.config.settings import LiveSettings, ModelChoice, Settings, resolve_settings

BAD = [[1]]  # refused by every rule: not a string, number, boolean, URL or list of numbers


def config_for(path, value):
    group, dot, name = path.partition(".")
    return {group: {name: value}} if dot else {path: value}


@pytest.mark.parametrize("path", sorted(rules.KEYS))
def test_every_key_has_one_rule_for_config_update_and_for_resolution(path):
    values = config_for(path, BAD)
    with pytest.raises(InvalidParams) as info:
        validate_values(values)  # config/update refuses it, writing nothing
    assert info.value.reason == "invalid_config" and path.split(".")[0] in info.value.message
    settings = resolve_settings(values, {})  # resolution never raises for config.json
    if rules.KEYS[path].strict:
        assert list(settings.problems) == [path] and settings.warnings == ()
        with pytest.raises(ConfigError) as info:
            settings.check(path)
        assert info.value.reason == "invalid_config" and info.value.data == {"key": path}
        assert f"Invalid config value for {path}: must be " in info.value.message
    else:
        assert settings.warnings == (f"config.json: ignoring {path}: must be {rules.KEYS[path].rule.allowed}",)
        assert not settings.problems


def test_every_provider_setting_is_a_key_and_only_url_variables_are_checked():
    for spec in specs.PROVIDERS:
        for setting in (spec.base_url, spec.secret, *spec.model, *spec.effort, *spec.options):
            if setting is not None and setting.key is not None:
                key = rules.KEYS[setting.key]
                assert key.rule is rules.KINDS[setting.kind] and key.env == setting.env
                assert (key.env in rules.ENV) == (setting.kind == "url" and setting.env is not None)


def test_defaults():
    s = resolve_settings({}, {})
    assert s == Settings(providers=s.providers)
    assert (s.rpc_workers, s.max_frame_bytes, s.max_input_chars) == (32, 64 * 1024 * 1024, 1_000_000)
    p = s.providers
    assert (p.provider, p.retry_delays, p.idle_timeout) == (None, (1.0, 2.0), 300.0)
    assert dict(p.base_urls) == {"codex": "https://chatgpt.com/backend-api/codex",
                                 "openrouter": "https://openrouter.ai/api/v1", "openai-compatible": None}
    assert dict(p.models) == {"codex": ModelChoice("gpt-5.5", "medium"), "openrouter": ModelChoice("openai/gpt-5.5", None),
                              "openai-compatible": ModelChoice("default", None), "scripted": ModelChoice(None, None)}
    assert (s.compaction.enabled, s.compaction.reserve_tokens, s.compaction.keep_recent_tokens) == (True, 16384, 20000)
    assert not s.memory.enabled and not s.logging.enabled and s.tools.workspace_guardrails
    assert s.auth.issuer == "https://auth.openai.com"


def test_environment_over_config_over_default_in_every_section():
    config = {"provider": "openrouter", "log_level": "info", "rpc": {"workers": 3, "max_input_chars": 50},
              "retry_delays": [0.5], "stream_idle_timeout": 9, "openrouter_base_url": "http://o/",
              "model": "shared", "openrouter_model": "mine", "reasoning_effort": "HIGH", "thinking_level": "low",
              "scripted_script": "/from/config.json", "compaction": {"enabled": False, "context_window": 1000},
              "memory": {"enabled": True}, "logging": {"tokens": True}, "tools": {"workspace_guardrails": False},
              "openai_auth_issuer": "https://issuer/"}
    s = resolve_settings(config, {})
    p = s.providers
    assert (p.provider, p.provider_source, s.log_level, s.rpc_workers, s.max_input_chars) == (
        "openrouter", "config provider", "INFO", 3, 50)
    assert (p.retry_delays, p.idle_timeout, p.base_urls["openrouter"]) == ((0.5,), 9.0, "http://o")
    assert p.model("openrouter") == ModelChoice("mine", "high") and p.model("codex") == ModelChoice("shared", "high")
    assert p.model("scripted") == ModelChoice(None, "high")  # the shared `model` is not Scripted's
    assert p.options["scripted"] == {"scripted_script": "/from/config.json"}
    assert (s.compaction.enabled, s.compaction.context_window, s.compaction.reserve_tokens) == (False, 1000, 16384)
    assert s.memory.enabled and s.logging.tokens and not s.logging.enabled and not s.tools.workspace_guardrails
    assert s.auth.issuer == "https://issuer"
    env = {"KWARD_PROVIDER": "Scripted", "KWARD_LOG_LEVEL": "error", "KWARD_RPC_WORKERS": "7",
           "KWARD_RETRY_DELAYS": "", "KWARD_STREAM_IDLE_TIMEOUT": "1", "KWARD_OPENROUTER_BASE_URL": "https://e/v1",
           "OPENROUTER_MODEL": " from-env ", "OPENROUTER_REASONING_EFFORT": "Turbo", "KWARD_SCRIPT": "/from/env"}
    s = resolve_settings(config, env)
    p = s.providers
    assert (p.provider, p.provider_source, s.log_level, s.rpc_workers) == ("scripted", "KWARD_PROVIDER", "ERROR", 7)
    assert (p.retry_delays, p.idle_timeout, p.base_urls["openrouter"]) == ((), 1.0, "https://e/v1")
    assert p.model("openrouter") == ModelChoice("from-env", "turbo")  # variables are taken as written
    assert p.options["scripted"] == {"scripted_script": "/from/env"}


def test_off_means_no_reasoning_and_a_bad_key_gives_way_to_the_next():
    p = resolve_settings({"openai_reasoning_effort": "off", "openrouter_reasoning_effort": "sideways",
                          "reasoning_effort": "minimal", "openai_model": 5, "model": "m"}, {}).providers
    assert p.model("codex") == ModelChoice("m", None) and p.model("openrouter") == ModelChoice("m", "minimal")


def test_bad_config_values_warn_once_and_never_raise():
    s = resolve_settings({"rpc": {"workers": "8", "max_frame_bytes": 10}, "log_level": "verbose", "compaction": "x",
                          "reasoning_effort": "huge", "openrouter_api_key": 42}, {})
    assert s.warnings == (
        "config.json: ignoring log_level: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        "config.json: ignoring rpc.workers: must be an integer from 1 to 1024",
        "config.json: ignoring rpc.max_frame_bytes: must be an integer from 1024 to 17179869184",
        "config.json: ignoring reasoning_effort: must be one of off, minimal, low, medium, high, xhigh, max",
        "config.json: ignoring openrouter_api_key: must be a string",
        "config.json: ignoring compaction: must be an object")
    assert s.rpc_workers == 32 and s.log_level is None and s.compaction.enabled


def test_a_problem_fails_only_the_providers_that_need_the_key():
    from kward.providers.settings import for_provider

    s = resolve_settings({"codex_base_url": "ftp://x", "provider": "nonsense"}, {})
    assert sorted(s.problems) == ["codex_base_url", "provider"]
    with pytest.raises(ConfigError, match="codex_base_url"):
        for_provider(specs.get("codex"), s)
    assert for_provider(specs.get("openrouter"), s).base_url == "https://openrouter.ai/api/v1"
    s = resolve_settings({"stream_idle_timeout": "soon"}, {})
    for key in ("codex", "openrouter", "openai-compatible"):
        with pytest.raises(ConfigError, match="stream_idle_timeout"):
            for_provider(specs.get(key), s)
    assert specs.get("scripted").required_keys == ()  # no HTTP: the timeout is not its problem


def test_bad_environment_values_raise_naming_the_variable():
    with pytest.raises(ConfigError, match="^KWARD_STREAM_IDLE_TIMEOUT must be "):
        resolve_settings({"stream_idle_timeout": 5}, {"KWARD_STREAM_IDLE_TIMEOUT": "soon"})


def test_credentials_never_show_in_repr():
    s = resolve_settings({"openrouter_api_key": "sk-or-v1-secret-value-1234"}, {})
    assert s.providers.secrets == {"openrouter": "sk-or-v1-secret-value-1234"}
    assert "secret-value" not in repr(s) and "[REDACTED]" in repr(s.providers)


def test_live_settings_follow_the_content_of_config_json(tmp_path):
    paths = resolve_paths({"HOME": str(tmp_path)})
    store = ConfigStore(paths)
    live = LiveSettings(store, {})
    first = live.current()
    assert live.current() is first  # unchanged content: the same object, nothing resolved again
    store.update({"openai_model": "gpt-5.4"})
    second = live.current()
    assert second is not first and second.providers.model("codex").model == "gpt-5.4"
    paths.config_file.write_text(json.dumps({"openai_model": "gpt-5.2", "rpc": {"workers": "x"}}))  # a hand edit
    third = live.current()
    assert third.providers.model("codex").model == "gpt-5.2" and third.warnings
    assert live.reload() is not third and live.reload() == third
    paths.config_file.write_text("{broken")
    with pytest.raises(ConfigError):
        live.current()


def test_a_variable_that_wins_leaves_the_config_value_unread():
    config = {"codex_base_url": "ftp://x", "rpc": {"workers": "x"}, "openrouter_api_key": "sk-or-v1-stored-12345"}
    s = resolve_settings(config, {"KWARD_CODEX_BASE_URL": "http://c", "KWARD_RPC_WORKERS": "2",
                                  "OPENROUTER_API_KEY": "sk-or-v1-env-123456"})
    assert (s.problems, s.warnings, s.rpc_workers) == ({}, (), 2)
    assert s.providers.base_urls["codex"] == "http://c" and s.providers.secrets == {}


def test_security_approval_settings_default_valid_and_refused():
    assert resolve_settings({}, {}).security == (None, 300.0, "off", True)  # None: the face's default mode
    s = resolve_settings({"security": {"approvalMode": "readOnly", "approvalTimeoutSeconds": 1}}, {})
    assert (s.security.approval_mode, s.security.approval_timeout_seconds, s.problems) == ("readOnly", 1.0, {})
    for bad in ({"approvalMode": "ReadOnly"}, {"approvalMode": "none"}, {"approvalTimeoutSeconds": 0},
                {"approvalTimeoutSeconds": True}):
        s = resolve_settings({"security": bad}, {})
        (path,) = s.problems
        with pytest.raises(ConfigError, match=f"Invalid config value for {path}"):
            s.check(path)
