"""Valid OpenAI access tokens for the Codex provider: refresh before expiry and after a 401.

`TokenSource.get()` returns ``(access_token, account_id)`` or None when there is no login:
`OPENAI_ACCESS_TOKEN` when set (never refreshed), else the stored login, refreshed first
when it expires within `margin` seconds (60) or, when its expiry is unknown, was saved more
than 8 days ago. `refresh(force=True)` is for the 401 path: it refreshes unless the stored
token already differs from the rejected one (another thread or process refreshed).

A refresh re-reads the login under `Credentials.openai_lock()` (threads and processes),
so two refreshers never spend the same refresh token: the second finds the rotated login
and uses it. The new login (with the rotated refresh token) is saved at once.

Failures: a dead refresh token (or none) raises `NotLoggedIn` naming what fixes it. When
the token server cannot be reached, a token that is still valid is returned (with a
warning in the log); an expired one raises `AuthServerError`.

Thread contract: one source serves every thread of the process; `get` may run
concurrently, refreshes are serialized by the login lock.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from kward.auth.credentials import Credentials
from kward.auth.oauth import OAuthSettings
from kward.auth.tokens import OpenAITokens, TokenEndpointError, refresh_tokens
from kward.errors import AuthServerError, NotLoggedIn
from kward.providers import jwt_claims

log = logging.getLogger(__name__)

REFRESH_MARGIN = 60.0
STALE_AFTER = 8 * 24 * 3600.0  # refresh a login of unknown expiry saved longer ago than this
LOGIN_HINT = "log in again with `kward login` (a UI: auth/startOpenAILogin) or set OPENAI_ACCESS_TOKEN"


class TokenSource:
    """See the module docstring."""

    def __init__(self, credentials: Credentials, settings: Callable[[], OAuthSettings] | None = None, *,
                 margin: float = REFRESH_MARGIN, clock: Callable[[], float] = time.time):
        self.credentials = credentials
        self._settings = settings or credentials.oauth_settings
        self.margin = margin
        self._clock = clock
        self._last: str | None = None  # the access token most recently handed out

    def _due(self, tokens: OpenAITokens, now: float) -> bool:
        if tokens.expires_at is not None:
            return tokens.expires_within(self.margin, now)
        return tokens.saved_at is not None and now - tokens.saved_at > STALE_AFTER

    def get(self) -> tuple[str, str | None] | None:
        env = self.credentials.openai_env_token()
        if env:
            return env, jwt_claims.account_id(env)
        tokens = self.credentials.stored_openai()
        if tokens is None:
            return None
        now = self._clock()
        if self._due(tokens, now):
            tokens = self._refresh(force=False)
        self._last = tokens.access_token
        return tokens.access_token, tokens.account_id or jwt_claims.account_id(tokens.access_token)

    def refresh(self, force: bool = True, rejected: str | None = None) -> bool:
        """Refresh now (after a 401 with token `rejected`, by default the last one handed
        out). True when a fresh token is available; False for an environment token, which
        cannot be refreshed. Raises `NotLoggedIn` / `AuthServerError` as `get`."""
        if self.credentials.openai_env_token():
            return False
        self._refresh(force=force, rejected=rejected or self._last)
        return True

    def _refresh(self, *, force: bool, rejected: str | None = None) -> OpenAITokens:
        with self.credentials.openai_lock():
            current = self.credentials.stored_openai()
            now = self._clock()
            if current is None:
                raise NotLoggedIn(f"Not logged in to OpenAI; {LOGIN_HINT}.", data={"provider": "openai"})
            if force and rejected is not None and current.access_token != rejected:
                return current  # refreshed meanwhile by another thread or process
            if not force and not self._due(current, now):
                return current
            if not current.refresh_token:
                raise NotLoggedIn(f"OpenAI login expired and cannot be refreshed; {LOGIN_HINT}.",
                                  data={"provider": "openai"})
            try:
                fresh = refresh_tokens(self._settings(), current)
            except TokenEndpointError as exc:
                if exc.permanent:
                    log.warning("OpenAI: refreshing the login failed for good: %s", exc)
                    raise NotLoggedIn(f"OpenAI login expired (refresh failed: {exc}); {LOGIN_HINT}.",
                                      data={"provider": "openai"}) from None
                if not force and current.expires_at is not None and current.expires_at > now:
                    log.warning("OpenAI: refreshing the login failed (%s); using the current token "
                                "until it expires", exc)
                    return current
                raise AuthServerError(f"Could not refresh the OpenAI login: {exc}. Try again later.",
                                      data={"provider": "openai"}) from None
            self.credentials.save_openai(fresh, notify=False)
            log.info("OpenAI: login refreshed")
        return fresh
