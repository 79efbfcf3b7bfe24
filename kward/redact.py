"""The pattern and key rules of redaction, for structured data, errors and log lines.

Where they apply (docs/protocol.md "Redaction"): config, error responses and error data,
results and notifications that carry no conversation content, and logs. Conversation
content (user input, assistant text, tool args and results, diffs, transcripts, fork
text, exports) never goes through here: it is only scrubbed of the exact credential
values kward holds (`kward.config.secrets`).

- A value under a secret-looking key (token, secret, api key, authorization, password,
  credential) is replaced by ``[REDACTED]`` when it is a non-empty string; containers under
  such a key are walked with every string leaf redacted. Numbers, booleans and None are
  never redacted, so token counts and "is a key configured" flags stay readable.
- Inside any string, ``Bearer <x>``, ``sk-...`` keys, JWT-shaped tokens,
  ``access_token=...``-style query parameters and ``"api_key": "..."``-style JSON fragments
  are masked.

Pure functions, safe from any thread.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any, NamedTuple

REDACTED = "[REDACTED]"

# What a secret-looking key holds, in any case: `_SECRET_KEY` (compiled for a key that is not
# ASCII, whose case rules are Unicode's), and the same as substrings of a lower-case ASCII key
_SECRET_KEY = r"token|secret|api[_-]?key|authorization|password|passwd|credential|cookie"
_SECRET_WORDS = ("token", "secret", "apikey", "api_key", "api-key", "authorization", "password", "passwd",
                 "credential", "cookie")
# Keys that look secret but hold names or kinds, never secret values.
_PUBLIC_KEYS = frozenset({"apiKeyProviders", "storedCredentialType", "credentialStore", "tokenType",
                          # auth/status, auth/providers and logins (kward.auth): sources, names, a URL
                          "openaiAccessTokenSource", "openrouterApiKeySource", "credentialStoreDetail",
                          "credentialStoreReason", "authorizationUrl"})

class Masks(NamedTuple):
    bearer: re.Pattern[str]
    sk_key: re.Pattern[str]
    jwt: re.Pattern[str]  # three base64url segments, the first (the header, `{"...`) starting `eyJ`
    query_secret: re.Pattern[str]
    json_secret: re.Pattern[str]


@cache
def masks() -> Masks:
    """The patterns of `redact_text`, compiled on first use (most processes redact no text
    that could hold a secret: `_quick`)."""
    return Masks(
        bearer=re.compile(r"(?i)\b(bearer)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{4,}"),
        sk_key=re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
        jwt=re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # (the signature may be empty)
        query_secret=re.compile(
            r"(?i)\b(access_token|refresh_token|id_token|api[_-]?key|apikey|client_secret|password|code_verifier)"
            r"=(?!\[REDACTED\])[^&\s\"']+"),
        json_secret=re.compile(
            r"(?i)(\"[A-Za-z0-9_\-]*(?:token|secret|api[_-]?key|authorization|password|credential)[A-Za-z0-9_\-]*\""
            r"\s*:\s*\")(?!\[REDACTED\])((?:[^\"\\]|\\.)+)(\")"),
    )


_SECRET_KEY_RE = re.compile(_SECRET_KEY, re.I)


def _quick(text: str) -> bool:
    """False when no mask can match `text`: it holds none of what each one needs (the
    bearer mask is case-blind, the sk- and JWT masks are not). Substring tests: a third of
    the cost of one regex search, on every string of every message."""
    return "=" in text or '"' in text or "sk-" in text or "eyJ" in text or "bearer" in text.lower()


@lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True when values under `key` must never be shown."""
    if key in _PUBLIC_KEYS:
        return False
    if not key.isascii():
        return _SECRET_KEY_RE.search(key) is not None
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS)


_MIN_SECRET_LEN = 9  # the shortest text any pattern above can match ("api_key=x")


def redact_text(text: str) -> str:
    """Mask secrets embedded in free text (error messages, log lines)."""
    if len(text) < _MIN_SECRET_LEN or not _quick(text):
        return text
    m = masks()
    text = m.bearer.sub(lambda found: found.group(1) + " " + REDACTED, text)
    text = m.sk_key.sub(REDACTED, text)
    text = m.jwt.sub(REDACTED, text)
    text = m.query_secret.sub(lambda found: found.group(1) + "=" + REDACTED, text)
    return m.json_secret.sub(lambda found: found.group(1) + REDACTED + found.group(3), text)


def secret_fragments(text: str) -> list[str]:
    """The parts of `text` the masks take for secrets: whole ``sk-...`` keys and JWT-shaped
    tokens, the credential after ``Bearer``, the value of an ``access_token=``-style
    parameter or of an ``"api_key": "..."`` fragment (`kward.config.secrets` learns them as
    known values)."""
    if len(text) < _MIN_SECRET_LEN or not _quick(text):
        return []
    m = masks()
    found = [hit.group(0) for pattern in (m.sk_key, m.jwt) for hit in pattern.finditer(text)]
    found += [hit.group(0).split(None, 1)[1] for hit in m.bearer.finditer(text)]
    found += [hit.group(0).split("=", 1)[1] for hit in m.query_secret.finditer(text)]
    found += [hit.group(2) for hit in m.json_secret.finditer(text)]
    return found


def redact(value: Any, _secret: bool = False) -> Any:
    """Return a redacted copy of a JSON-like value (dicts, lists, strings, numbers).

    Hot path: every outgoing message goes through here, so the strings and scalars of a
    dict are handled inline without a recursive call.
    """
    if isinstance(value, str):
        if _secret:
            return REDACTED if value else value
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            secret = _secret or (isinstance(k, str) and is_secret_key(k))
            if isinstance(v, str):
                out[k] = (REDACTED if v else v) if secret else redact_text(v)
            elif v is None or isinstance(v, (int, float)):  # (bool is an int)
                out[k] = v
            else:
                out[k] = redact(v, secret)
        return out
    if isinstance(value, (list, tuple)):
        return [redact(v, _secret) for v in value]
    return value
