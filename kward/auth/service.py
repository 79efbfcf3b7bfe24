"""`AuthService`: the credentials, logins and tokens of one process, built once by the runtime.

    auth = AuthService(paths, config)
    auth.credentials.status()            # auth/status
    auth.credentials.providers()         # auth/providers
    auth.credentials.login_with_api_key(provider_id, key)
    auth.credentials.logout(provider_id)
    login = auth.logins.start(timeout=..., on_finished=notify)   # auth/startOpenAILogin
    auth.logins.submit(login_id, code_or_url)                    # auth/submitOpenAICode
    auth.logins.status(login_id)                                 # auth/loginStatus
    auth.tokens.get() / auth.tokens.refresh(force=True)          # the Codex provider
    auth.credentials.add_listener(on_change)                     # re-select the provider
    auth.close()                                                 # at shutdown

Building one does no I/O and imports nothing heavy: the login manager (with its callback
server, `http.server`) is made when a login is first asked about. Thread contract: see the
parts; `logins` is made once under `_lock`; `close` cancels pending logins and joins their
threads.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Callable, Mapping

from kward.auth.credentials import Credentials
from kward.auth.stores import StoreChoice, select_store
from kward.auth.token_source import TokenSource
from kward.config.store import ConfigStore, Paths

if TYPE_CHECKING:  # pragma: no cover
    from kward.auth.login import LoginManager


class AuthService:
    def __init__(self, paths: Paths, config: ConfigStore, env: Mapping[str, str] = os.environ, *,
                 select: Callable[[Paths, ConfigStore], StoreChoice] = select_store):
        self.credentials = Credentials(paths, config, env, select=select)
        self.tokens = TokenSource(self.credentials)
        self._lock = threading.Lock()
        self._logins: LoginManager | None = None

    @property
    def logins(self) -> LoginManager:
        with self._lock:
            if self._logins is None:
                from kward.auth.login import LoginManager

                self._logins = LoginManager(self.credentials)
            return self._logins

    def close(self) -> None:
        with self._lock:
            logins = self._logins
        if logins is not None:
            logins.close()
