"""Memory record shapes and the rules their fields follow (see the package docstring).

Pure functions over plain data; any thread. Times are aware UTC datetimes, written as
ISO-8601 with milliseconds (`2026-06-12T10:11:12.345Z`).
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from kward.errors import InvalidParams
from kward.timefmt import iso_ms, normalize_iso, parse_ms

CORE_LIMIT = 6  # core memories a turn is given at most
SOFT_LIMIT = 6  # soft memories a turn is given at most
SOFT_TTL_DAYS = 60
MANUAL_CONFIDENCE = 0.65
INFERRED_CONFIDENCE = 0.55
MAX_TAGS = 10
MAX_TAG_CHARS = 100
MAX_TEXT_CHARS = 10_000
FORGOTTEN_TEXT = "[forgotten]"
EXPLICIT = "explicit_user_instruction"
PROMOTED = "promoted_soft_memory"

Clock = Callable[[], datetime]

_TERM = re.compile(r"[a-z0-9_\-]{3,}")
_LINE_BREAKS = re.compile(r"[\r\n]+")
_WORKSPACE_PREFIX = re.compile(r"^\[workspace:[^\]]*\]\s*")
_PREAMBLE = re.compile(r"^(?:but\s+first\s+we\s+(?:always\s+)?need\s+to\s+remember\s+that|remember\s+that|"
                       r"please\s+remember\s+(?:to|that)|note\s+that|i\s+should\s+remember\s+that)\s+", re.I)
_TAG_SPLIT = re.compile(r"[,\s]+")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


iso = iso_ms  # the timestamps of memory records and events


def epoch(value: Any) -> float | None:
    """Seconds since the epoch of an ISO-8601 timestamp; None when it is not one."""
    if isinstance(value, str) and len(value) == 24 and value.endswith("Z"):  # the form kward writes
        try:
            return parse_ms(value).timestamp()
        except ValueError:
            pass
    text = normalize_iso(value)
    return None if text is None else parse_ms(text).timestamp()


def terms(text: Any) -> list[str]:
    """The search terms of a text: lower-case runs of `[a-z0-9_-]` of 3 or more, each once."""
    return list(dict.fromkeys(_TERM.findall(str(text).lower()))) if text else []


def clean_text(text: str) -> str:
    return _LINE_BREAKS.sub(" ", text.strip())


def normalize_text(text: str) -> str:
    """What is stored of a memory's text: one line, without a leading `[workspace:...]`
    echo or a "remember that" preamble, starting with a capital letter."""
    value = _PREAMBLE.sub("", _WORKSPACE_PREFIX.sub("", clean_text(text))).strip()
    if value[:1].islower():
        value = value[0].upper() + value[1:]
    return value


def memory_text(text: str) -> str:
    """The text to store; InvalidParams when it is empty or too long (or not text at all, as
    in a hand-edited file)."""
    if not isinstance(text, str):
        raise InvalidParams("Memory text must be a string", data={"param": "text"})
    value = normalize_text(text)
    if not value:
        raise InvalidParams("Memory text cannot be empty", data={"param": "text"})
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidParams(f"Memory text is too long: at most {MAX_TEXT_CHARS} characters",
                            data={"param": "text"})
    return value


def clean_tags(tags: Iterable[Any] | None) -> list[str]:
    """Tags split at commas and spaces, each once, at most MAX_TAGS of them."""
    out: list[str] = []
    for tag in tags or ():
        for part in _TAG_SPLIT.split(str(tag)):
            part = part.strip()[:MAX_TAG_CHARS]
            if part and part not in out:
                out.append(part)
    return out[:MAX_TAGS]


def workspace_scope(root: str) -> str:
    return "workspace:" + os.path.realpath(os.path.expanduser(root))


def resolve_scope(scope: str | None, workspace_root: str) -> str:
    """`global` (also for none or blank), `workspace` (the scope of `workspace_root`) or
    `workspace:<absolute path>` (its real path); InvalidParams for anything else."""
    value = (scope or "").strip()
    if "\x00" in value:
        raise InvalidParams("Invalid params: 'scope' must not hold a NUL character", data={"param": "scope"})
    if value in ("", "global"):
        return "global"
    if value == "workspace":
        return workspace_scope(workspace_root)
    if value.startswith("workspace:") and os.path.isabs(os.path.expanduser(value[len("workspace:"):])):
        return workspace_scope(value[len("workspace:"):])
    raise InvalidParams("Invalid params: 'scope' must be global, workspace or workspace:<absolute path>",
                        data={"param": "scope"})


def id_number(prefix: str, value: Any) -> int | None:
    if isinstance(value, str) and value.startswith(prefix + "_") and value[len(prefix) + 1:].isdigit():
        return int(value[len(prefix) + 1:])
    return None


def format_id(prefix: str, number: int) -> str:
    return f"{prefix}_{number:03d}"


def clamp(confidence: float) -> float:
    return min(1.0, max(0.0, float(confidence)))


def core_record(memory_id: str, text: str, scope: str, tags: list[str], now: datetime,
                source: str = EXPLICIT) -> dict[str, Any]:
    stamp = iso(now)
    return {"id": memory_id, "text": text, "scope": scope, "tags": tags, "created_at": stamp, "updated_at": stamp,
            "source": source, "pinned": True}


def soft_record(memory_id: str, text: str, scope: str, tags: list[str], now: datetime, *,
                confidence: float = MANUAL_CONFIDENCE, source: str = "manual",
                ttl_days: int = SOFT_TTL_DAYS) -> dict[str, Any]:
    stamp = iso(now)
    return {"id": memory_id, "text": text, "scope": scope, "tags": tags, "confidence": clamp(confidence),
            "hits": 0, "created_at": stamp, "updated_at": stamp, "last_seen_at": stamp,
            "ttl_days": ttl_days if ttl_days > 0 else SOFT_TTL_DAYS, "source": source, "status": "active"}


def forgotten(record: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A forgotten soft memory: its text, tags, confidence and hits are gone for good."""
    return {**record, "text": FORGOTTEN_TEXT, "tags": [], "confidence": 0.0, "hits": 0, "status": "forgotten",
            "updated_at": iso(now)}


def is_active(record: dict[str, Any]) -> bool:
    return record.get("status") == "active"


def expires_at(record: dict[str, Any]) -> float | None:
    """When an active soft memory stops being retrieved (last seen + ttl); None: never."""
    ttl = record.get("ttl_days")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
        return None
    seen = epoch(record.get("last_seen_at"))
    return None if seen is None else seen + ttl * 86400


def same_text(a: Any, b: Any) -> bool:
    return " ".join(str(a).split()) == " ".join(str(b).split())


def event_ref(record: dict[str, Any], layer: str) -> dict[str, Any]:
    return {"id": record["id"], "layer": layer, "scope": record.get("scope"), "tags": record.get("tags", [])}
