"""Unsigned JWTs shaped like OpenAI's access and id tokens (header.payload.signature,
base64url without padding), carrying the ChatGPT account claim kward reads. Used by the
fake Codex backend's tests (`fake_codex.make_jwt`) and the fake OAuth issuer
(`fake_oauth.make_token`)."""

from __future__ import annotations

import base64
import json
from typing import Any

AUTH_CLAIM = "https://api.openai.com/auth"


def segment(obj: Any) -> str:
    """One JWT segment: `obj` as JSON, base64url without padding."""
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def openai_jwt(account_id: str | None, *, exp: float, plan: str = "plus", email: str = "test@example.com",
               signature: str = "sig", **claims: Any) -> str:
    """A token expiring at `exp` whose auth claim names `account_id` (none when None),
    with `claims` (such as `kind`, `jti`) beside the standard ones."""
    auth: dict[str, Any] = {"chatgpt_plan_type": plan, "chatgpt_user_id": "user_test"}
    if account_id:
        auth["chatgpt_account_id"] = account_id
    payload = {"exp": int(exp), "email": email, **claims, AUTH_CLAIM: auth}
    return f"{segment({'alg': 'RS256', 'typ': 'JWT'})}.{segment(payload)}.{signature}"
