"""Read claims from an OpenAI OAuth JWT without verifying it.

The signature is not checked: the token is only used to find our own account id and
expiry; the server verifies it. Pure functions, any thread.
"""

from __future__ import annotations

import base64
import json
from typing import Any

AUTH_CLAIM = "https://api.openai.com/auth"


def decode_claims(token: str) -> dict[str, Any]:
    """The payload (middle segment) of a JWT as a dict; {} when it is not a readable JWT."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) < 2 or not parts[1]:
        return {}
    segment = parts[1]
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        claims = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return claims if isinstance(claims, dict) else {}


def account_id_from_claims(claims: dict[str, Any]) -> str | None:
    """chatgpt_account_id from the namespaced auth claim, top level, or first organization."""
    auth = claims.get(AUTH_CLAIM)
    for value in (auth.get("chatgpt_account_id") if isinstance(auth, dict) else None, claims.get("chatgpt_account_id")):
        if isinstance(value, str) and value:
            return value
    orgs = claims.get("organizations")
    first = orgs[0] if isinstance(orgs, list) and orgs else None
    org_id = first.get("id") if isinstance(first, dict) else None
    return org_id if isinstance(org_id, str) else None


def account_id(token: str) -> str | None:
    """The ChatGPT account id carried by an access or id token, if any."""
    return account_id_from_claims(decode_claims(token))


def plan_type(token: str) -> str | None:
    auth = decode_claims(token).get(AUTH_CLAIM)
    value = auth.get("chatgpt_plan_type") if isinstance(auth, dict) else None
    return value if isinstance(value, str) else None


def expires_at(token: str) -> float | None:
    """The `exp` claim (unix seconds), if present."""
    exp = decode_claims(token).get("exp")
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None
