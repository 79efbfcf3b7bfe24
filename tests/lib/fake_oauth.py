"""A fake OpenAI OAuth issuer on 127.0.0.1, for tests.

Routes (as production, so clients only swap the issuer):

- `GET /oauth/authorize` -> route "authorize": checks `client_id`, `response_type=code`,
  `code_challenge_method=S256` and the extra parameters, remembers the challenge and the
  redirect URI under a new code, and answers `302 Location: <redirect_uri>?code=..&state=..`.
  `authorize_outcome` changes that: "ok", "wrong_state" (a different state), or
  "denied" (`error=access_denied` with `denied_description`).
- `POST /oauth/token` -> route "token" (form or JSON bodies):
  `authorization_code` checks the code (once only), the client id, the redirect URI and
  that SHA-256(code_verifier) is the challenge it saw; `refresh_token` rotates: every
  refresh token works once (reuse -> `401 refresh_token_reused`, unknown -> `401
  refresh_token_invalidated`); `refresh_fails = True` answers 401 `refresh_token_expired`.

Tokens are JWT-shaped (unsigned), carry the account id claim, `exp`, and a counter so each
one differs; `expires_in` is configurable. Every token and code issued is kept in
`issued` (the secrets a test may grep for). Scripted scenarios (`script("token", ...)`)
answer before the logic above.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import secrets
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from .fake_http import FakeServer, RecordedRequest, Scenario, json_response
from .tokens import openai_jwt

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"


def make_token(account_id: str | None, *, kind: str, serial: int, exp: float) -> str:
    """An issued token (`kind` "access" or "id"); its random signature makes each one differ."""
    return openai_jwt(account_id, exp=exp, kind=kind, jti=f"{kind}-{serial}", signature="sig" + secrets.token_hex(4))


def challenge_of(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class FakeOAuth(FakeServer):
    ROUTES = {("GET", "/oauth/authorize"): "authorize", ("POST", "/oauth/token"): "token"}

    def __init__(self, *, client_id: str = CLIENT_ID, account_id: str | None = "acct_test", expires_in: Any = 3600):
        super().__init__()
        self.client_id = client_id
        self.account_id = account_id
        self.expires_in = expires_in
        self.authorize_outcome = "ok"
        self.denied_description = "The user denied access"
        self.refresh_fails = False
        self.issued: list[str] = []
        self._codes: dict[str, dict[str, Any]] = {}
        self._refresh: dict[str, bool] = {}  # refresh token -> still valid
        self._serial = itertools.count(1)
        self._state_lock = threading.Lock()

    @property
    def issuer(self) -> str:
        return self.origin

    def grants(self) -> list[str]:
        """The grant_type of every token request, in order."""
        return [str(_fields(r).get("grant_type")) for r in self.requests("token")]

    def valid_refresh_tokens(self) -> list[str]:
        with self._state_lock:
            return [t for t, ok in self._refresh.items() if ok]

    # --- routes -------------------------------------------------------------------------

    def default(self, route: str | None, record: RecordedRequest) -> Scenario | None:
        if route == "authorize":
            return self._authorize(record)
        if route == "token":
            return self._token(_fields(record))
        return None

    def _authorize(self, record: RecordedRequest) -> Scenario:
        q = {k: v[0] for k, v in record.query.items()}
        problems = [name for name, ok in (
            ("client_id", q.get("client_id") == self.client_id),
            ("response_type", q.get("response_type") == "code"),
            ("code_challenge_method", q.get("code_challenge_method") == "S256"),
            ("code_challenge", bool(q.get("code_challenge"))),
            ("redirect_uri", bool(q.get("redirect_uri"))),
            ("state", bool(q.get("state"))),
            ("scope", "offline_access" in q.get("scope", "").split()),
            ("id_token_add_organizations", q.get("id_token_add_organizations") == "true"),
            ("codex_cli_simplified_flow", q.get("codex_cli_simplified_flow") == "true"),
            ("originator", bool(q.get("originator")))) if not ok]
        if problems:
            return json_response(400, {"error": "invalid_request", "error_description": "bad " + ", ".join(problems)})
        state = q["state"] if self.authorize_outcome != "wrong_state" else "not-the-state"
        if self.authorize_outcome == "denied":
            params = {"error": "access_denied", "error_description": self.denied_description, "state": state}
        else:
            code = "code-" + secrets.token_urlsafe(12)
            with self._state_lock:
                self._codes[code] = {"challenge": q["code_challenge"], "redirect_uri": q["redirect_uri"],
                                     "used": False}
                self.issued.append(code)
            params = {"code": code, "state": state}
        parts = urlsplit(q["redirect_uri"])
        location = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(params), ""))
        return Scenario(status=302, headers={"Location": location}, body=b"", name="authorize redirect")

    def _mint(self) -> dict[str, Any]:
        serial = next(self._serial)
        expires_in = self.expires_in
        exp = time.time() + (expires_in if isinstance(expires_in, (int, float)) else 3600)
        access = make_token(self.account_id, kind="access", serial=serial, exp=exp)
        id_token = make_token(self.account_id, kind="id", serial=serial, exp=exp)
        refresh = f"rt-{serial}-{secrets.token_urlsafe(12)}"
        with self._state_lock:
            self._refresh[refresh] = True
            self.issued.extend([access, id_token, refresh])
        body: dict[str, Any] = {"access_token": access, "id_token": id_token, "refresh_token": refresh,
                                "token_type": "Bearer"}
        if expires_in is not None:
            body["expires_in"] = expires_in
        return body

    def _token(self, f: dict[str, Any]) -> Scenario:
        if f.get("client_id") != self.client_id:
            return json_response(401, {"error": "invalid_client", "error_description": "unknown client"})
        grant = f.get("grant_type")
        if grant == "authorization_code":
            with self._state_lock:
                entry = self._codes.get(str(f.get("code")))
                ok = (entry is not None and not entry["used"] and entry["redirect_uri"] == f.get("redirect_uri")
                      and challenge_of(str(f.get("code_verifier", ""))) == entry["challenge"])
                if entry is not None:
                    entry["used"] = True
            if not ok:
                return json_response(400, {"error": "invalid_grant", "error_description": "bad code or verifier"})
            return json_response(200, self._mint())
        if grant == "refresh_token":
            if self.refresh_fails:
                return json_response(401, {"error": {"code": "refresh_token_expired", "message": "expired"}})
            token = str(f.get("refresh_token"))
            with self._state_lock:
                known = self._refresh.get(token)
                if known:
                    self._refresh[token] = False
            if known is None:
                return json_response(401, {"error": {"code": "refresh_token_invalidated", "message": "unknown"}})
            if not known:
                return json_response(401, {"error": {"code": "refresh_token_reused", "message": "reused"}})
            return json_response(200, self._mint())
        return json_response(400, {"error": "unsupported_grant_type"})


def _fields(record: RecordedRequest) -> dict[str, Any]:
    """The token request's fields, from a JSON or a form body."""
    if isinstance(record.json, dict):
        return record.json
    return {k: v[0] for k, v in parse_qs(record.body.decode("utf-8", "replace")).items()}
