"""Settings of the HTTP providers, resolved from environment (wins) and config.

| setting                 | env                           | config key               | default |
|-------------------------|-------------------------------|--------------------------|---------|
| Codex base URL          | KWARD_CODEX_BASE_URL          | codex_base_url           | https://chatgpt.com/backend-api/codex |
| OpenRouter base URL     | KWARD_OPENROUTER_BASE_URL     | openrouter_base_url      | https://openrouter.ai/api/v1 |
| OpenAI-compatible base  | KWARD_OPENAI_COMPAT_BASE_URL  | openai_compat_base_url   | none |
| retry delays (seconds)  | KWARD_RETRY_DELAYS            | retry_delays             | 1,2 |
| stream idle timeout (s) | KWARD_STREAM_IDLE_TIMEOUT     | stream_idle_timeout      | 300 |

Pure data and pure functions; any thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from kward import __version__
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


def _pick(env: Mapping[str, str], config: Mapping[str, Any], env_name: str, key: str) -> str | None:
    value = env.get(env_name) or config.get(key)
    return value.rstrip("/") if isinstance(value, str) and value else None


def _idle_timeout(config: Mapping[str, Any], env: Mapping[str, str]) -> float:
    """Seconds of silence after which a model response counts as stalled (0.05 to 3600)."""
    raw = env.get("KWARD_STREAM_IDLE_TIMEOUT") or config.get("stream_idle_timeout")
    if raw is None or raw == "":
        return ProviderSettings.idle_timeout
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not 0.05 <= value <= 3600:
        from kward.errors import ConfigError

        raise ConfigError(f"KWARD_STREAM_IDLE_TIMEOUT / stream_idle_timeout must be seconds from 0.05 to 3600, "
                          f"got {raw!r}")
    return value


def resolve_provider_settings(config: Mapping[str, Any], env: Mapping[str, str] = os.environ,
                              **overrides: Any) -> ProviderSettings:
    """Build ProviderSettings from env + config; `overrides` replace any field (tests)."""
    values: dict[str, Any] = {
        "codex_base_url": _pick(env, config, "KWARD_CODEX_BASE_URL", "codex_base_url") or DEFAULT_CODEX_BASE_URL,
        "openrouter_base_url": _pick(env, config, "KWARD_OPENROUTER_BASE_URL", "openrouter_base_url")
        or DEFAULT_OPENROUTER_BASE_URL,
        "openai_compat_base_url": _pick(env, config, "KWARD_OPENAI_COMPAT_BASE_URL", "openai_compat_base_url"),
        "retry": RetryPolicy(resolve_retry_delays(config, env)),
        "idle_timeout": _idle_timeout(config, env),
    }
    values.update(overrides)
    return ProviderSettings(**values)
