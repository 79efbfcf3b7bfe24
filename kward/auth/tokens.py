"""The OpenAI token bundle and the token endpoint: code exchange and refresh (OpenAI's
OAuth token endpoint, as the Codex CLI uses it).

`OpenAITokens` is the login as kward keeps it; `to_record`/`from_record` convert it to and
from the auth.json format ``{auth_mode: "openai_oauth", tokens: {access_token,
refresh_token, id_token, account_id}, account_id, saved_at, expires_at}`` (`saved_at` an
ISO-8601 UTC time, `expires_at` unix seconds; both forms are read for either). Its repr
never shows a token.

`exchange_code` (form-encoded, the OAuth 2.0 authorization-code grant of RFC 6749) and
`refresh_tokens` (JSON, as the original kward and the Codex CLI send it) POST to ``{issuer}/oauth/token`` with `requests`, imported on first use. The account
id comes from the JWT claims of the id token, else the access token; the expiry from
`expires_in`, else the access token's `exp`. Failures raise `TokenEndpointError`, whose
message holds the server's error code and words (redacted), never a token or code.

Functions are pure apart from the HTTP call; any thread.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Mapping
from urllib.parse import urlsplit

from kward.auth.oauth import OAuthSettings
from kward.auth.stores import timestamp
from kward.providers import jwt_claims
from kward.redact import redact_text

TIMEOUT = (10.0, 30.0)  # connect, read (seconds)
MAX_RESPONSE_BYTES = 1 << 20
#: Refresh error codes that mean the refresh token is dead (the token endpoint's `error`).
DEAD_REFRESH_CODES = frozenset({"refresh_token_expired", "refresh_token_reused", "refresh_token_invalidated",
                                "invalid_grant"})


@dataclass(frozen=True)
class OpenAITokens:
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    id_token: str | None = field(default=None, repr=False)
    account_id: str | None = None
    expires_at: float | None = None  # unix seconds
    saved_at: float | None = None  # unix seconds

    def expires_within(self, seconds: float, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now + seconds

    def to_record(self) -> dict[str, object]:
        saved = datetime.fromtimestamp(self.saved_at if self.saved_at is not None else time.time(), timezone.utc)
        return {
            "auth_mode": "openai_oauth",
            "tokens": {"access_token": self.access_token, "refresh_token": self.refresh_token,
                       "id_token": self.id_token, "account_id": self.account_id},
            "account_id": self.account_id,
            "saved_at": saved.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "expires_at": int(self.expires_at) if self.expires_at is not None else None,
        }

    @classmethod
    def from_record(cls, record: object) -> OpenAITokens | None:
        """The login in an auth.json-shaped dict, or None when it holds no access token."""
        if not isinstance(record, dict):
            return None
        tokens = record.get("tokens")
        if not isinstance(tokens, dict):
            return None

        def text(value: object) -> str | None:
            return value if isinstance(value, str) and value.strip() else None

        access = text(tokens.get("access_token"))
        if access is None:
            return None
        expires = timestamp(record.get("expires_at"))
        return cls(access_token=access, refresh_token=text(tokens.get("refresh_token")),
                   id_token=text(tokens.get("id_token")),
                   account_id=text(tokens.get("account_id")) or text(record.get("account_id")),
                   expires_at=expires if expires is not None else jwt_claims.expires_at(access),
                   saved_at=timestamp(record.get("saved_at")))

    def secret_values(self) -> list[str]:
        return [v for v in (self.access_token, self.refresh_token, self.id_token) if v]


class TokenEndpointError(Exception):
    """The token endpoint failed. `status` is None when it could not be reached; `code` is
    the OAuth error code when the body had one. `permanent` is True when trying again
    cannot help (a 4xx other than 408/429: a dead refresh token, a used code)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code

    @property
    def permanent(self) -> bool:
        if self.code in DEAD_REFRESH_CODES:
            return True
        return self.status is not None and 400 <= self.status < 500 and self.status not in (408, 429)


def _error_of(payload: object) -> tuple[str | None, str | None]:
    """(code, description) of an OAuth error body: `{"error": "...", "error_description"}`
    or `{"error": {"code", "message"}}` or a top-level `code`."""
    if not isinstance(payload, dict):
        return None, None
    error = payload.get("error")
    if isinstance(error, dict):
        code = error.get("code") or error.get("type")
        desc = error.get("message")
    else:
        code = error if isinstance(error, str) else payload.get("code")
        desc = payload.get("error_description") or payload.get("message")
    return (str(code) if isinstance(code, (str, int)) and code != "" else None,
            str(desc)[:500] if isinstance(desc, str) and desc else None)


def post_token(url: str, fields: Mapping[str, str], *, as_json: bool) -> dict[str, object]:
    """POST `fields` to the token endpoint (as JSON, else form-encoded); the JSON object it
    answers, or TokenEndpointError."""
    import requests

    host = urlsplit(url).netloc
    try:
        resp = requests.post(url, data=None if as_json else dict(fields), json=dict(fields) if as_json else None,
                             headers={"Accept": "application/json"}, timeout=TIMEOUT, allow_redirects=False,
                             stream=True)
        try:
            raw = resp.raw.read(MAX_RESPONSE_BYTES + 1, decode_content=True) or b""
        finally:
            resp.close()
    except requests.RequestException as exc:
        raise TokenEndpointError(f"could not reach {host} ({type(exc).__name__})") from None
    try:
        payload = json.loads(raw[:MAX_RESPONSE_BYTES].decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        payload = None
    if not 200 <= resp.status_code < 300:
        code, desc = _error_of(payload)
        detail = ": ".join(x for x in (code, desc) if x) or "no details"
        raise TokenEndpointError(redact_text(f"{host} answered HTTP {resp.status_code} ({detail})"),
                                 status=resp.status_code, code=code)
    if not isinstance(payload, dict):
        raise TokenEndpointError(f"{host} answered HTTP {resp.status_code} without a JSON object",
                                 status=resp.status_code)
    return payload


def tokens_from_response(payload: Mapping[str, object], *, now: float,
                         previous: OpenAITokens | None = None) -> OpenAITokens:
    """The bundle a token response describes; what it leaves out is kept from `previous`."""

    def text(name: str) -> str | None:
        value = payload.get(name)
        return value if isinstance(value, str) and value.strip() else None

    access = text("access_token")
    if access is None:
        raise TokenEndpointError("the token response holds no access_token")
    id_token = text("id_token") or (previous.id_token if previous else None)
    account = (jwt_claims.account_id(id_token or "") or jwt_claims.account_id(access)
               or (previous.account_id if previous else None))
    if account is None:
        raise TokenEndpointError("Failed to extract accountId from token")
    expires_in = payload.get("expires_in")
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in > 0:
        expires: float | None = now + float(expires_in)
    else:
        expires = jwt_claims.expires_at(access)
    return OpenAITokens(access_token=access, refresh_token=text("refresh_token") or (previous.refresh_token if previous
                                                                                      else None),
                        id_token=id_token, account_id=account, expires_at=expires, saved_at=now)


def exchange_code(settings: OAuthSettings, code: str, verifier: str, redirect: str) -> OpenAITokens:
    """Trade an authorization code (and the PKCE verifier) for tokens."""
    payload = post_token(settings.token_endpoint, {
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
        "client_id": settings.client_id, "code_verifier": verifier}, as_json=False)
    return tokens_from_response(payload, now=time.time())


def refresh_tokens(settings: OAuthSettings, current: OpenAITokens) -> OpenAITokens:
    """New tokens for `current`'s refresh token (which the server then retires)."""
    if not current.refresh_token:
        raise TokenEndpointError("the stored login has no refresh token", status=400, code="invalid_grant")
    payload = post_token(settings.token_endpoint, {
        "client_id": settings.client_id, "grant_type": "refresh_token",
        "refresh_token": current.refresh_token}, as_json=True)
    return tokens_from_response(payload, now=time.time(), previous=current)
