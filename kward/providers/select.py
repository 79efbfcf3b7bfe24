"""Which provider, model and reasoning effort a turn uses, and why.

Order: the `provider` setting (`KWARD_PROVIDER`, else config `provider`); else the first
provider of `kward.providers.specs` marked `auto` whose credential exists, in table
order: an OpenAI token (`OPENAI_ACCESS_TOKEN` or the stored login) -> Codex, an
OpenRouter key (`OPENROUTER_API_KEY` or the stored key) -> OpenRouter; else Codex, which
fails at request time with a clear "not logged in" error. The model and reasoning level
are the resolved settings of the chosen provider (`kward.config.settings.ProvidersSettings.models`).
Provider modules are imported only for the provider chosen, and none of them imports
`requests` before its first request.

Credentials come from a `CredentialSource`: the runtime passes the credential store's
(`kward.auth.provider_credentials.AuthCredentials`: the OS keyring or the files, with
token refresh); `FileCredentials` reads only the environment, config.json and auth.json
(cheap: `initialize` uses it, so answering it loads neither `keyring` nor `requests`).

`select_provider` is pure apart from what the credential source reads and the script
file; any thread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Protocol

from kward.fsutil import read_private
from kward.limits import AUTH_FILE_BYTES
from kward.config.settings import Settings, resolve_settings
from kward.providers import specs
from kward.providers.specs import ProviderSpec

if TYPE_CHECKING:  # pragma: no cover - choosing a provider must not load the base module
    from kward.providers.base import Provider

#: The API key or access token of a provider, read per request (None: none).
Secret = Callable[[], str | None]
#: A stored OpenAI login, read per request: (access token, account id), or None.
Login = Callable[[], tuple[str, str | None] | None]


class CredentialSource(Protocol):
    """Where selection and the providers it builds get credentials (any thread).

    `available` says whether `spec` has a credential now, without a network call;
    `secret` and `login` give the getters a `ProviderSetup` carries (read per request);
    `refresh` the getter called once after an HTTP 401 (None: nothing to refresh)."""

    def available(self, spec: ProviderSpec, settings: Settings) -> bool: ...

    def secret(self, spec: ProviderSpec, settings: Settings) -> Secret: ...

    def login(self, spec: ProviderSpec) -> Login: ...

    def refresh(self, spec: ProviderSpec) -> Callable[[], bool] | None: ...


class Selection(NamedTuple):
    spec: ProviderSpec
    provider: Provider
    model: str
    reasoning_effort: str | None
    reason: str  # why this provider was chosen, for runtime/state and logs
    base_url: str | None = None  # the configured base URL (listings are cached by it)

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def label(self) -> str:
        return self.spec.label


def stored_openai_tokens(auth_file: str | Path) -> tuple[str, str | None] | None:
    """(access token, account id) from a stored login, or None (also when the file is not
    one kward reads: `kward.fsutil.read_private`)."""
    try:
        data = json.loads(read_private(auth_file, AUTH_FILE_BYTES).data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, dict) or not isinstance(tokens.get("access_token"), str):
        return None
    account = tokens.get("account_id") or data.get("account_id")
    return tokens["access_token"], account if isinstance(account, str) else None


class FileCredentials:
    """Credentials from the environment (read per call), config.json (the settings) and a
    login file; never the OS keyring, never a refresh."""

    def __init__(self, env: Mapping[str, str], auth_file: str | Path):
        self.env = env
        self.auth_file = auth_file

    def secret(self, spec: ProviderSpec, settings: Settings) -> Secret:
        """The spec's variable (read per call) when set, else the value in config.json."""
        variable = spec.secret.env if spec.secret else None
        stored = settings.providers.secrets.get(spec.key)
        env = self.env

        def secret() -> str | None:
            value = env.get(variable) if variable else None
            return value if isinstance(value, str) and value else stored

        return secret

    def login(self, spec: ProviderSpec) -> Login:
        auth_file = self.auth_file
        return (lambda: stored_openai_tokens(auth_file)) if spec.stored_login else (lambda: None)

    def refresh(self, spec: ProviderSpec) -> Callable[[], bool] | None:
        return None

    def available(self, spec: ProviderSpec, settings: Settings) -> bool:
        return bool(self.secret(spec, settings)()) or self.login(spec)() is not None


def choose_spec(settings: Settings, credentials: CredentialSource) -> tuple[ProviderSpec, str]:
    """(provider spec, why) without building the provider; ConfigError for a config
    `provider` that names no provider."""
    settings.check("provider")
    providers = settings.providers
    if providers.provider is not None:
        return specs.get(providers.provider), providers.provider_source or "config provider"
    for spec in specs.PROVIDERS:
        if spec.auto and credentials.available(spec, settings):
            return spec, spec.auto
    return specs.get(specs.DEFAULT), "default (no credentials found)"


def choose(config: Mapping[str, Any], env: Mapping[str, str], credentials: CredentialSource) -> tuple[str, str]:
    """(provider key, why) for a config document, without building the provider (the
    `initialize` answer's steering mode)."""
    spec, why = choose_spec(resolve_settings(config, env), credentials)
    return spec.key, why


def build(spec: ProviderSpec, settings: Settings, credentials: CredentialSource) -> Provider:
    """The provider of `spec` (imports its module). ConfigError for a bad config value it
    needs; ScriptError (also -32002, `invalid_config`) for an unusable script."""
    from kward.providers.base import (
        ProviderSetup,  # (building, unlike choosing, loads the provider modules)
    )

    http = None
    if spec.base_url is not None:
        from kward.providers.settings import for_provider

        http = for_provider(spec, settings)
    setup = ProviderSetup(settings=http, secret=credentials.secret(spec, settings), login=credentials.login(spec),
                          options=settings.providers.options.get(spec.key, {}), refresh=credentials.refresh(spec))
    return specs.provider_class(spec).create(setup)


def select_provider(settings: Settings, credentials: CredentialSource) -> Selection:
    """Build the provider to use now, with its model and reasoning level. Raises what
    `choose_spec` and `build` raise."""
    spec, reason = choose_spec(settings, credentials)
    provider = build(spec, settings, credentials)
    choice = settings.providers.model(spec.key)
    model = choice.model or provider.model
    return Selection(spec, provider, model, choice.effort, reason, settings.providers.base_urls.get(spec.key))
