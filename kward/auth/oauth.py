"""OpenAI OAuth pieces without I/O: settings, PKCE, `state`, the authorize URL, and the
parsing of what a user pastes back (OpenAI's OAuth flow with PKCE, as the Codex CLI runs it).

| setting        | env                       | config key               | default |
|----------------|---------------------------|--------------------------|---------|
| issuer         | KWARD_OPENAI_AUTH_ISSUER  | openai_auth_issuer       | https://auth.openai.com |
| client id      | -                         | openai_oauth_client_id   | app_EMoamEEZ73f0CkXaXp7hrann |
| callback port  | KWARD_OAUTH_PORT          | -                        | 1455 (0: any free port) |

The issuer must be an https:// URL; http:// is accepted only for a loopback host
(127.0.0.0/8, ::1, localhost: a local test issuer), since the login's code and tokens go
there (`kward.config.rules.ISSUER`, for the variable and the config key alike).

Pure functions and frozen data; any thread.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from kward.config.settings import resolve_settings

DEFAULT_ISSUER = "https://auth.openai.com"
DEFAULT_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
DEFAULT_PORT = 1455
FALLBACK_PORT = 1457  # also on the OAuth client's allow-list of redirect ports
SCOPE = "openid profile email offline_access api.connectors.read api.connectors.invoke"
ORIGINATOR = "kward"  # the same value the Codex provider sends as its `originator` header
CALLBACK_PATH = "/auth/callback"
MAX_CODE_CHARS = 4096


@dataclass(frozen=True)
class OAuthSettings:
    issuer: str = DEFAULT_ISSUER
    client_id: str = DEFAULT_CLIENT_ID
    port: int = DEFAULT_PORT
    scope: str = SCOPE
    originator: str = ORIGINATOR

    @property
    def authorize_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/oauth/authorize"

    @property
    def token_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/oauth/token"


def resolve_oauth_settings(config: Mapping[str, object], env: Mapping[str, str] = os.environ) -> OAuthSettings:
    """Settings from env (wins) and config (`kward.config.settings`). A bad variable is a
    ConfigError naming it; a bad config value a ConfigError naming the key."""
    settings = resolve_settings(config, env)
    settings.check("openai_auth_issuer")
    auth = settings.auth
    return OAuthSettings(issuer=auth.issuer, client_id=(auth.oauth_client_id or "").strip() or DEFAULT_CLIENT_ID,
                         port=DEFAULT_PORT if auth.oauth_port is None else auth.oauth_port)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """(verifier, challenge): verifier = base64url of 64 random bytes (86 chars), challenge =
    base64url(SHA-256(verifier)), both without padding (S256)."""
    verifier = _b64url(secrets.token_bytes(64))
    return verifier, pkce_challenge(verifier)


def pkce_challenge(verifier: str) -> str:
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """base64url of 32 random bytes."""
    return _b64url(secrets.token_bytes(32))


def redirect_uri(port: int) -> str:
    """`localhost` as the authorize server expects, while the listener binds 127.0.0.1."""
    return f"http://localhost:{port}{CALLBACK_PATH}"


def authorize_url(settings: OAuthSettings, redirect: str, challenge: str, state: str) -> str:
    params = {
        "response_type": "code",
        "client_id": settings.client_id,
        "redirect_uri": redirect,
        "scope": settings.scope,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "id_token_add_organizations": "true",
        "codex_cli_simplified_flow": "true",
        "state": state,
        "originator": settings.originator,
    }
    return settings.authorize_endpoint + "?" + urlencode(params, quote_via=quote)


@dataclass(frozen=True)
class CallbackParams:
    """What a callback (or a pasted URL or code) carries. `state` None = not given."""

    code: str = ""
    state: str | None = None
    error: str | None = None
    error_description: str | None = None


def callback_params(query: str) -> CallbackParams:
    """The parameters of a callback's query string (first value of each)."""
    qs = parse_qs(query, keep_blank_values=True)

    def first(name: str) -> str | None:
        values = qs.get(name)
        return values[0] if values else None

    return CallbackParams(code=(first("code") or "").strip(), state=first("state"),
                          error=first("error") or None, error_description=first("error_description") or None)


def parse_pasted(text: str) -> CallbackParams:
    """A whole callback URL (`http://localhost:1455/auth/callback?code=...&state=...`), its
    query string, `code#state`, or a bare code (what users paste from the browser)."""
    text = text.strip()
    if "://" in text:
        parts = urlsplit(text)
        return callback_params(parts.query or parts.fragment)
    if text.startswith("?") or "code=" in text or "error=" in text:
        return callback_params(text.lstrip("?"))
    if "#" in text:
        code, _, state = text.partition("#")
        return CallbackParams(code=code.strip(), state=state.strip() or None)
    return CallbackParams(code=text)


def code_problem(code: str) -> str | None:
    """Why `code` cannot be an authorization code, or None."""
    if not code:
        return "holds no authorization code"
    if len(code) > MAX_CODE_CHARS:
        return f"is longer than {MAX_CODE_CHARS} characters"
    if any(c.isspace() or not c.isprintable() for c in code):
        return "holds whitespace or control characters"
    return None


def same_state(given: str | None, expected: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
