"""`AuthCredentials`: the provider selection's view of the credential store.

It implements `kward.providers.select.CredentialSource` over an `AuthService`, so the
providers get what the store holds, wherever it is (the OS keyring or the files):

- a provider with a stored login (Codex): the `TokenSource`, i.e. `OPENAI_ACCESS_TOKEN`
  when set, else the stored login, refreshed 60 s before it expires and once after an
  HTTP 401 (`refresh`); `available` looks without refreshing;
- the provider whose credential is the stored OpenRouter key: `OPENROUTER_API_KEY` when
  set, else the stored key;
- any other provider (e.g. OpenAI-compatible with `openai_compat_api_key`): as
  `FileCredentials` (its variable, else config.json).

Getters read the store on every call (a login or logout of another process is seen by
the next request). Any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kward.auth.stores import OPENROUTER_API_KEY
from kward.providers.select import FileCredentials

if TYPE_CHECKING:  # pragma: no cover
    from kward.auth.service import AuthService
    from kward.config.settings import Settings
    from kward.providers.select import Login, Secret
    from kward.providers.specs import ProviderSpec


def _none() -> None:
    return None


class AuthCredentials:
    """See the module docstring."""

    def __init__(self, auth: AuthService):
        self.auth = auth
        credentials = auth.credentials
        self._files = FileCredentials(credentials.env, credentials.paths.auth_file)

    @staticmethod
    def _keyed(spec: ProviderSpec) -> bool:
        return spec.secret is not None and spec.secret.key == OPENROUTER_API_KEY

    def available(self, spec: ProviderSpec, settings: Settings) -> bool:
        credentials = self.auth.credentials
        if spec.stored_login:
            return credentials.openai_env_token() is not None or credentials.stored_openai() is not None
        if self._keyed(spec):
            return credentials.openrouter_key() is not None
        return self._files.available(spec, settings)

    def secret(self, spec: ProviderSpec, settings: Settings) -> Secret:
        if spec.stored_login:
            return _none  # the token source reads OPENAI_ACCESS_TOKEN itself
        if self._keyed(spec):
            credentials = self.auth.credentials

            def key() -> str | None:
                found = credentials.openrouter_key()
                return found[0] if found else None

            return key
        return self._files.secret(spec, settings)

    def login(self, spec: ProviderSpec) -> Login:
        return self.auth.tokens.get if spec.stored_login else _none

    def refresh(self, spec: ProviderSpec) -> Callable[[], bool] | None:
        if not spec.stored_login:
            return None
        tokens = self.auth.tokens
        return lambda: tokens.refresh(force=True)
