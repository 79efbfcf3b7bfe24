"""`RuntimeAuth`: the auth operations of a Runtime (`runtime.auth`), over one `AuthService`.

What a face needs: the credential status and provider cards, API-key login, logout,
OpenAI OAuth logins (start, submit a code or callback URL, status) and, for the provider
selection, `provider_credentials` (`kward.auth.provider_credentials.AuthCredentials`).
It knows nothing of JSON-RPC: credentials are reported as the typed values of
`kward.auth.credentials` and logins as `kward.auth.login.LoginState`s (the face shapes
them), a finished login as a `LoginFinished` notice through the runtime's `notify`.

Live refresh: after every login or logout (of this process) the engine's cached provider
selection and the cached model listings are dropped, so the next request selects the
provider again with the new credentials. Secrets: every credential value the service
reads or writes is handed to the runtime's `KnownSecrets`, and its store is read again at
every tool output scrub (keyring-stored values included).

Built on first use by the Runtime (no I/O; `keyring` and `requests` are imported when a
credential is first read and a token first fetched). Any thread: the service's parts are
thread-safe. `LoginFinished` is notified from the login's own thread; `close()` (at
shutdown) cancels pending logins and joins their threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from kward.auth.credentials import (
    OPENAI,
    ApiKeySaved,
    CredentialStatus,
    LoggedOut,
    ProviderCards,
    check_provider_id,
)
from kward.auth.provider_credentials import AuthCredentials
from kward.auth.service import AuthService
from kward.config.secrets import KnownSecrets
from kward.config.store import ConfigStore, Paths
from kward.runtime.notices import LoginFinished, Notice

if TYPE_CHECKING:  # pragma: no cover
    from kward.auth.login import (
        LoginState,  # (the logins are made on first use: kward.auth.service)
    )


class RuntimeAuth:
    """See the module docstring. `changed()` is called after every login or logout."""

    def __init__(self, paths: Paths, config: ConfigStore, env: Mapping[str, str], secrets: KnownSecrets, *,
                 notify: Callable[[Notice], None], changed: Callable[[], None]):
        self._notify = notify
        self.service = AuthService(paths, config, env)
        credentials = self.service.credentials
        credentials.add_listener(lambda provider_id: changed())
        credentials.watch_secrets(secrets.learn)
        secrets.add_loader(credentials.secret_values)
        self.provider_credentials = AuthCredentials(self.service)

    # --- credentials ------------------------------------------------------------------

    def status(self) -> CredentialStatus:
        return self.service.credentials.status()

    def providers(self) -> ProviderCards:
        return self.service.credentials.providers()

    def login_with_api_key(self, provider_id: str, api_key: str) -> ApiKeySaved:
        return self.service.credentials.login_with_api_key(provider_id, api_key)

    def logout(self, provider_id: str) -> LoggedOut:
        return self.service.credentials.logout(provider_id)

    # --- OAuth logins -----------------------------------------------------------------

    def start_openai_login(self, timeout: float | None = None) -> LoginState:
        """Start a login (a pending older one is cancelled); its state is ``pending``.
        `timeout` (seconds; None: 300) bounds the wait for the callback; ConfigError for
        a bad issuer setting; OSError when no callback port can be bound."""
        login = self.service.logins.start(timeout=timeout, on_finished=self._finished)
        return login.state()

    def login_with_oauth(self, provider_id: str, timeout: float | None = None) -> LoginState:
        """`start_openai_login` for a provider id (only ``openai`` logs in with OAuth)."""
        check_provider_id(provider_id, (OPENAI,))
        return self.start_openai_login(timeout)

    def submit_code(self, login_id: str, code: str) -> LoginState:
        """Complete a login with a code, ``code#state`` or the whole callback URL (on the
        caller's thread: it waits for the token endpoint)."""
        return self.service.logins.submit(login_id, code)

    def login_status(self, login_id: str) -> LoginState:
        return self.service.logins.status(login_id)

    def _finished(self, state: LoginState) -> None:
        self._notify(LoginFinished(state))

    def close(self) -> None:
        self.service.close()
