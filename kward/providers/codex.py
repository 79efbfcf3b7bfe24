"""The Codex provider: ChatGPT OAuth + the Responses API over SSE, as the Codex CLI uses them.

Credentials come from a callable passed in by the auth layer (`kward.auth.token_source.TokenSource`:
the environment token, else the stored login, refreshed before it expires), called once
per attempt on the request's thread: it returns `(access_token, account_id or None)`, or
None when not logged in. Without an account id the `chatgpt_account_id` claim of the
access token (a JWT) is used. An optional `refresh` callable is called once after a 401;
returning True means fresh credentials are available and the request is re-sent once.
A `KwardError` either callable raises (a refresh that failed for good: `not_logged_in`;
the login server unreachable: `provider_error`) fails the request with its message.

Thread contract: one provider serves many sessions concurrently; `complete` runs on each
turn's worker thread (see `streaming.StreamingProvider`). The provider keeps no
per-request state.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any, Callable

from kward.errors import KwardError
from kward.model import UserMessage, content_text
from kward.providers import jwt_claims
from kward.providers.base import ModelRequest, ProviderError, ProviderSetup, StreamSink
from kward.providers.codex_wire import CodexAssembler, build_body
from kward.providers.http import HttpTransport
from kward.providers.retry import classify, parse_retry_after, retry_hint_from_text
from kward.providers.settings import ProviderSettings
from kward.providers.streaming import (
    Assembler,
    PreparedRequest,
    StreamingProvider,
    http_settings,
)

log = logging.getLogger(__name__)

CodexCredentials = Callable[[], tuple[str, str | None] | None]

NOT_LOGGED_IN = ("Not logged in to Codex: no OpenAI login found. Run `kward login` (a UI: auth/startOpenAILogin) "
                 "or set OPENAI_ACCESS_TOKEN, or use OpenRouter instead: `kward login openrouter` or set "
                 "OPENROUTER_API_KEY.")
_SESSION_NS = uuid.UUID("6f1c3f4e-8a56-4c1e-9d0e-6b2f0c6f8a11")


def not_logged_in_error(message: str = NOT_LOGGED_IN) -> ProviderError:
    return ProviderError(message, provider="Codex", kind="auth", reason="not_logged_in",
                         data={"provider": "Codex", "kind": "auth"})


def credentials_error(exc: KwardError) -> ProviderError:
    """The request failure for a credential callable's error (see the module docstring)."""
    if exc.reason == "not_logged_in":
        return not_logged_in_error(exc.message)
    return ProviderError(exc.message, provider="Codex", kind="network", retryable=True,
                         data={"provider": "Codex", "kind": "network"})


def conversation_key(request: ModelRequest) -> str:
    """A stable per-conversation id: the request's session id, else derived from its start."""
    if request.session_id:
        return request.session_id
    first = next((m for m in request.messages if isinstance(m, UserMessage)), None)
    seed = json.dumps([request.instructions, content_text(first.content) if first is not None else None])
    return str(uuid.uuid5(_SESSION_NS, seed))


class CodexProvider(StreamingProvider):
    """ChatGPT-subscription Codex models. See the module docstring."""

    name = "Codex"
    supports_steering = True
    auth_hint = "Log in again with `kward login` (a UI: auth/startOpenAILogin), or set OPENAI_ACCESS_TOKEN."

    def __init__(self, settings: ProviderSettings, credentials: CodexCredentials, *,
                 refresh: Callable[[], bool] | None = None, http: HttpTransport | None = None):
        super().__init__(settings, http=http)
        self._credentials = credentials
        self._refresh = refresh

    @classmethod
    def create(cls, setup: ProviderSetup) -> CodexProvider:
        """Built by selection (`kward.providers.specs`): the setup's access token (its
        account id from the JWT claims), else the stored login, read per attempt; the
        setup's refresh after a 401."""

        def credentials() -> tuple[str, str | None] | None:
            token = setup.secret()
            return (token, jwt_claims.account_id(token)) if token else setup.login()

        return cls(http_settings(setup), credentials, refresh=setup.refresh)

    @property
    def responses_url(self) -> str:
        base = self.base_url
        return base if base.endswith("/responses") else base + "/responses"

    def auth_headers(self) -> dict[str, str]:
        """Authorization, account and originator headers; raises `not_logged_in`."""
        try:
            creds = self._credentials()
        except KwardError as exc:
            raise credentials_error(exc) from None
        if not creds or not creds[0]:
            raise not_logged_in_error()
        token, account = creds
        account = account or jwt_claims.account_id(token)
        headers = {"Authorization": f"Bearer {token}", "originator": self.settings.originator}
        if account:
            headers["chatgpt-account-id"] = account
        else:
            log.warning("Codex: the access token carries no ChatGPT account id; sending none")
        return headers

    def _prepare(self, request: ModelRequest) -> PreparedRequest:
        key = conversation_key(request)
        headers = dict(request.headers)
        headers.update(self.auth_headers())
        headers.update({"OpenAI-Beta": "responses=experimental", "session_id": key,
                        "Accept": "text/event-stream"})
        secrets = (headers["Authorization"][7:], headers.get("chatgpt-account-id", ""))
        return PreparedRequest(self.responses_url, headers, build_body(request, key), secrets)

    def _assembler(self, request: ModelRequest, sink: StreamSink) -> Assembler:
        return CodexAssembler(self.name, request.model, sink, self.auth_hint)

    def _reauthorize(self) -> bool:
        if self._refresh is None:
            return False
        try:
            return bool(self._refresh())
        except KwardError as exc:  # the refresh failed: its message says what fixes it
            log.warning("Codex: refreshing the login after a 401 failed (%s)", exc.reason)
            raise credentials_error(exc) from None

    def _http_error(self, status: int, headers: dict[str, str], body: str) -> ProviderError:
        detail, code = body.strip(), ""
        resets_at = plan = None
        try:
            parsed: Any = json.loads(body) if body.strip() else {}
        except ValueError:
            parsed = {}
        if isinstance(parsed, dict):
            error = parsed.get("error")
            if isinstance(error, dict):
                detail = str(error.get("message") or detail)
                code = str(error.get("type") or error.get("code") or "")
                if isinstance(error.get("resets_at"), (int, float)):
                    resets_at = float(error["resets_at"])
                elif isinstance(error.get("resets_in_seconds"), (int, float)):
                    resets_at = time.time() + float(error["resets_in_seconds"])
                plan = error.get("plan_type") if isinstance(error.get("plan_type"), str) else None
            elif isinstance(parsed.get("detail"), str):
                detail = parsed["detail"]
        retry_after = parse_retry_after(headers.get("retry-after"))
        if retry_after is None and status == 429:
            retry_after = retry_hint_from_text(detail)
        if status == 401 and not detail:
            detail = "the access token was rejected"
        return classify(self.name, status=status, code=code, detail=detail, retry_after=retry_after,
                        resets_at=resets_at, plan_type=plan, auth_hint=self.auth_hint)
