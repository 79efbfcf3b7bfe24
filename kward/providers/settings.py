"""What an HTTP provider needs besides credentials: its base URL, retry policy and timeouts.

`for_provider` builds them for one provider of `kward.providers.specs` from the resolved settings
(`kward.config.settings.ProvidersSettings`: base URLs, retry delays and the stream idle timeout,
environment over config.json; see kward(1) ENVIRONMENT). A config value the provider
needs that could not be used is a ConfigError naming the key (reason `invalid_config`).
Pure data and pure functions; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from kward import __version__
from kward.config.settings import Settings
from kward.providers.retry import RetryPolicy
from kward.providers.specs import ProviderSpec

ORIGINATOR = "kward"
APP_URL = ""  # sent as HTTP-Referer to OpenRouter when set
APP_TITLE = "kward"


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Everything an HTTP provider needs besides credentials."""

    base_url: str | None = None  # None: not configured (the provider says what to set)
    retry: RetryPolicy = RetryPolicy()
    connect_timeout: float = 10.0
    idle_timeout: float = 300.0  # max silence between bytes of a response
    catalog_timeout: float = 10.0  # GET /models and friends
    originator: str = ORIGINATOR
    user_agent: str = f"kward/{__version__}"
    app_url: str = APP_URL
    app_title: str = APP_TITLE


def for_provider(spec: ProviderSpec, settings: Settings) -> ProviderSettings:
    """The HTTP settings of provider `spec`; ConfigError for a bad config value it needs."""
    settings.check(*spec.required_keys)
    providers = settings.providers
    return ProviderSettings(base_url=providers.base_urls.get(spec.key), retry=RetryPolicy(providers.retry_delays),
                            idle_timeout=providers.idle_timeout)
