"""Settings of the HTTP providers, resolved from environment (wins) and config.

| setting                 | env                           | config key               | default |
|-------------------------|-------------------------------|--------------------------|---------|
| Codex base URL          | KWARD_CODEX_BASE_URL          | codex_base_url           | https://chatgpt.com/backend-api/codex |
| OpenRouter base URL     | KWARD_OPENROUTER_BASE_URL     | openrouter_base_url      | https://openrouter.ai/api/v1 |
| OpenAI-compatible base  | KWARD_OPENAI_COMPAT_BASE_URL  | openai_compat_base_url   | none |
| retry delays (seconds)  | KWARD_RETRY_DELAYS            | retry_delays             | 1,2 |
| stream idle timeout (s) | KWARD_STREAM_IDLE_TIMEOUT     | stream_idle_timeout      | 300 |

Values are checked by the rules `kward.rules` shares with `kward rpc`'s start-up check (a
bad variable never gets this far there); a bad config value is a ConfigError naming the key.
Pure data and pure functions; any thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from kward import __version__, rules
from kward.providers.retry import RetryPolicy, resolve_retry_delays

DEFAULT_CODEX_BASE_URL = "https://chatgpt.com/backend-api/codex"
DEFAULT_OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
ORIGINATOR = "kward"
APP_URL = ""  # sent as HTTP-Referer to OpenRouter when set
APP_TITLE = "kward"


@dataclass(frozen=True)
class ProviderSettings:
    """Everything an HTTP provider needs besides credentials."""

    codex_base_url: str = DEFAULT_CODEX_BASE_URL
    openrouter_base_url: str = DEFAULT_OPENROUTER_BASE_URL
    openai_compat_base_url: str | None = None
    retry: RetryPolicy = RetryPolicy()
    connect_timeout: float = 10.0
    idle_timeout: float = 300.0  # max silence between bytes of a response
    catalog_timeout: float = 10.0  # GET /models and friends
    originator: str = ORIGINATOR
    user_agent: str = f"kward/{__version__}"
    app_url: str = APP_URL
    app_title: str = APP_TITLE


def _url(config: Mapping[str, Any], env: Mapping[str, str], env_name: str, key: str) -> str | None:
    return rules.setting(config, env, env_name, key, rules.URL)


def resolve_provider_settings(config: Mapping[str, Any], env: Mapping[str, str] = os.environ,
                              **overrides: Any) -> ProviderSettings:
    """Build ProviderSettings from env + config; `overrides` replace any field (tests)."""
    values: dict[str, Any] = {
        "codex_base_url": _url(config, env, "KWARD_CODEX_BASE_URL", "codex_base_url") or DEFAULT_CODEX_BASE_URL,
        "openrouter_base_url": _url(config, env, "KWARD_OPENROUTER_BASE_URL", "openrouter_base_url")
        or DEFAULT_OPENROUTER_BASE_URL,
        "openai_compat_base_url": _url(config, env, "KWARD_OPENAI_COMPAT_BASE_URL", "openai_compat_base_url"),
        "retry": RetryPolicy(resolve_retry_delays(config, env)),
        "idle_timeout": rules.setting(config, env, "KWARD_STREAM_IDLE_TIMEOUT", "stream_idle_timeout",
                                      rules.IDLE_TIMEOUT) or ProviderSettings.idle_timeout,
    }
    values.update(overrides)
    return ProviderSettings(**values)
