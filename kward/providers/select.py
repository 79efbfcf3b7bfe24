"""Which provider, model and reasoning effort a turn uses, and why.

Order (DESIGN.md "Contracts"): `KWARD_PROVIDER` / config `provider` (codex, openrouter,
openai-compatible, scripted); else an OpenAI token (stored login in auth.json or
`OPENAI_ACCESS_TOKEN`) -> Codex; else an OpenRouter key (`OPENROUTER_API_KEY` or config
`openrouter_api_key`) -> OpenRouter; else Codex, which fails at request time with a clear
"not logged in" error. Provider modules are imported only for the provider chosen, and
none of them imports `requests` before its first request.

`select_provider` is pure apart from reading auth.json and the script file; any thread.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kward import rules

if TYPE_CHECKING:  # pragma: no cover - the base module is not needed to choose a provider
    from kward.providers.base import Provider

LABELS = {"codex": "Codex", "openrouter": "OpenRouter", "openai-compatible": "OpenAICompatible",
          "scripted": "Scripted"}
# Which providers steer a running turn natively (must match each class's supports_steering;
# known without importing the provider modules, so `initialize` stays cheap).
STEERING = {"codex": True, "openrouter": False, "openai-compatible": False, "scripted": True}
DEFAULT_MODELS = {"codex": "gpt-5.5", "openrouter": "openai/gpt-5.5", "openai-compatible": "default"}


@dataclass(frozen=True)
class Selection:
    key: str  # codex | openrouter | openai-compatible | scripted
    provider: "Provider"
    model: str
    reasoning_effort: str | None
    reason: str  # why this provider was chosen, for runtime/state and logs

    @property
    def label(self) -> str:
        return LABELS[self.key]


def stored_openai_tokens(auth_file: Path) -> tuple[str, str | None] | None:
    """(access token, account id) from a stored login, or None."""
    try:
        data = json.loads(auth_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, dict) or not isinstance(tokens.get("access_token"), str):
        return None
    account = tokens.get("account_id") or data.get("account_id")
    return tokens["access_token"], account if isinstance(account, str) else None


def _openrouter_key(config: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    key = env.get("OPENROUTER_API_KEY") or config.get("openrouter_api_key")
    return key if isinstance(key, str) and key else None


def choose(config: Mapping[str, Any], env: Mapping[str, str], auth_file: Path) -> tuple[str, str]:
    """(provider key, why) without building the provider."""
    explicit = rules.setting(config, env, "KWARD_PROVIDER", "provider", rules.PROVIDER)
    if explicit is not None:
        return explicit, "KWARD_PROVIDER" if rules.env_value(env, "KWARD_PROVIDER") else "config provider"
    if env.get("OPENAI_ACCESS_TOKEN") or stored_openai_tokens(auth_file):
        return "codex", "OpenAI login"
    if _openrouter_key(config, env):
        return "openrouter", "OpenRouter API key"
    return "codex", "default (no credentials found)"


def _model(key: str, config: Mapping[str, Any], env: Mapping[str, str]) -> str:
    specific = {"codex": ("OPENAI_MODEL", "openai_model"), "openrouter": ("OPENROUTER_MODEL", "openrouter_model"),
                "openai-compatible": ("", "openai_compat_model")}[key]
    value = (specific[0] and env.get(specific[0])) or config.get(specific[1]) or config.get("model")
    return value if isinstance(value, str) and value else DEFAULT_MODELS[key]


def _effort(key: str, config: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    if key == "codex":
        value = (env.get("OPENAI_REASONING_EFFORT") or config.get("openai_reasoning_effort")
                 or config.get("reasoning_effort") or config.get("thinking_level") or "medium")
    elif key == "openrouter":
        value = (env.get("OPENROUTER_REASONING_EFFORT") or config.get("openrouter_reasoning_effort")
                 or config.get("reasoning_effort") or config.get("thinking_level"))
    else:
        value = config.get("reasoning_effort") or config.get("thinking_level")
    if not isinstance(value, str) or value.lower() == "off":
        return None
    return value.lower()


def select_provider(config: Mapping[str, Any], auth_file: Path, env: Mapping[str, str] = os.environ) -> Selection:
    """Build the provider to use now. Raises ConfigError for an unknown provider name or a
    bad endpoint setting, and ScriptError (also -32002, `invalid_config`) for an unusable
    script."""
    key, reason = choose(config, env, auth_file)
    if key == "scripted":
        from kward.providers.scripted import ScriptedProvider, load_script

        script_path = env.get("KWARD_SCRIPT") or config.get("scripted_script")
        provider = ScriptedProvider(load_script(script_path) if script_path else None)
        model = config.get("scripted_model")
        return Selection(key, provider, model if isinstance(model, str) and model else provider.model,
                         _effort(key, config, env), reason)
    from kward.providers.settings import resolve_provider_settings

    settings = resolve_provider_settings(config, env)
    if key == "codex":
        from kward.providers.codex import CodexProvider

        def credentials() -> tuple[str, str | None] | None:
            token = env.get("OPENAI_ACCESS_TOKEN")
            if token:
                from kward.providers.jwt_claims import account_id

                return token, account_id(token)
            return stored_openai_tokens(auth_file)

        provider = CodexProvider(settings, credentials)
    elif key == "openrouter":
        provider = build_openrouter(config, env)
    else:
        from kward.providers.openai_compat import OpenAICompatibleProvider

        compat_key = config.get("openai_compat_api_key")
        provider = OpenAICompatibleProvider(settings, lambda: compat_key if isinstance(compat_key, str) else None)
    return Selection(key, provider, _model(key, config, env), _effort(key, config, env), reason)


def build_openrouter(config: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> "Provider":
    """An OpenRouter provider with the configured key (none is fine for the public catalog)."""
    from kward.providers.openrouter import OpenRouterProvider
    from kward.providers.settings import resolve_provider_settings

    return OpenRouterProvider(resolve_provider_settings(config, env), lambda: _openrouter_key(config, env))
