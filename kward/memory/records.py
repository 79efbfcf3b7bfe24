"""Memory records: the `Memory` value, the file records it is read from and written as,
and the rules their fields follow (see the package docstring).

A `Memory` is one core or soft memory (its `layer`) as its file holds it. `from_record`
reads any JSON object with a string `id`: each key of the layer (`CORE_KEYS`,
`SOFT_KEYS`) whose value has its field's type goes into that field; a key of the layer
holding a value of another type stays in `extras` (its field holds the default then;
tags that are not all strings are read as their text), beside every key kward does not
know, and a key the record lacks leaves its field at the default. `keys` keeps the
record's keys in their order when they are not exactly the layer's keys in kward's order.
`to_record` writes a memory as the record it was read from, so any record comes back byte
for byte (as JSON) and a hand-edited one keeps what kward does not use. A change
(`forgotten`, `rescoped`, `touched`) writes its fields over whatever the record held under
their keys, and a key the record lacked goes after the others.

Memories are frozen values: a change makes a new one. Pure functions; any thread. Times
are aware UTC datetimes, written as ISO-8601 with milliseconds (`2026-06-12T10:11:12.345Z`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal

from kward.errors import InvalidParams
from kward.timefmt import iso_ms, normalize_iso, parse_ms
from kward.values import EMPTY

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
Layer = Literal["core", "soft"]

#: The keys of a record of each layer, in the order kward writes them.
CORE_KEYS = ("id", "text", "scope", "tags", "created_at", "updated_at", "source", "pinned")
SOFT_KEYS = ("id", "text", "scope", "tags", "confidence", "hits", "created_at", "updated_at", "last_seen_at",
             "ttl_days", "source", "status")

_TERM = re.compile(r"[a-z0-9_\-]{3,}")
_LINE_BREAKS = re.compile(r"[\r\n]+")
_WORKSPACE_PREFIX = re.compile(r"^\[workspace:[^\]]*\]\s*")
_PREAMBLE = re.compile(r"^(?:but\s+first\s+we\s+(?:always\s+)?need\s+to\s+remember\s+that|remember\s+that|"
                       r"please\s+remember\s+(?:to|that)|note\s+that|i\s+should\s+remember\s+that)\s+", re.I)
_TAG_SPLIT = re.compile(r"[,\s]+")
#: The number of an id kward allocates from (`core_NNN`, `soft_NNN`): ASCII digits only, at
#: most 18 of them; another id is kept but allocates nothing.
_ID_NUMBER = re.compile(r"[0-9]{1,18}")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


iso = iso_ms  # the timestamps of memory records and events


def epoch(value: str) -> float | None:
    """Seconds since the epoch of an ISO-8601 timestamp; None when it is not one."""
    if len(value) == 24 and value.endswith("Z"):  # the form kward writes
        try:
            return parse_ms(value).timestamp()
        except ValueError:
            pass
    text = normalize_iso(value)
    return None if text is None else parse_ms(text).timestamp()


def terms(text: str) -> list[str]:
    """The search terms of a text: lower-case runs of `[a-z0-9_-]` of 3 or more, each once."""
    return list(dict.fromkeys(_TERM.findall(text.lower()))) if text else []


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
    """The text to store; InvalidParams when it is empty or too long."""
    value = normalize_text(text)
    if not value:
        raise InvalidParams("Memory text cannot be empty", data={"param": "text"})
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidParams(f"Memory text is too long: at most {MAX_TEXT_CHARS} characters",
                            data={"param": "text"})
    return value


def clean_tags(tags: Iterable[object] | None) -> list[str]:
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


def id_number(prefix: str, value: str) -> int | None:
    """The number of `<prefix>_NNN` (see `_ID_NUMBER`); None for any other id."""
    if value.startswith(prefix + "_") and _ID_NUMBER.fullmatch(value, len(prefix) + 1):
        return int(value[len(prefix) + 1:])
    return None


def format_id(prefix: str, number: int) -> str:
    return f"{prefix}_{number:03d}"


def clamp(confidence: float) -> float:
    return min(1.0, max(0.0, float(confidence)))


# --- the Memory value ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Memory:
    """One memory (see the module docstring). The fields after `pinned` are a soft
    memory's; a core memory's record has none of them, a soft memory's no `pinned`."""

    id: str
    layer: Layer
    text: str = ""
    scope: str = ""  # "global" or "workspace:<real path>" ("" when the record holds none)
    tags: tuple[str, ...] = ()
    source: str = ""  # core: EXPLICIT or PROMOTED; soft: "manual" or "inferred"
    created_at: str = ""
    updated_at: str = ""
    pinned: bool = False  # core memories: true
    confidence: float = 0.0  # 0..1 (an integer when the file holds one)
    hits: int = 0  # retrievals counted
    last_seen_at: str = ""
    ttl_days: float = 0  # days after `last_seen_at` it stops being retrieved; 0: never
    status: str = ""  # "active" or "forgotten"
    keys: tuple[str, ...] = ()  # the stored record's keys in order; (): the layer's keys
    extras: Mapping[str, object] = EMPTY  # the stored keys and values the fields do not hold

    @property
    def active(self) -> bool:
        return self.status == "active"


def new_core(memory_id: str, text: str, scope: str, tags: Iterable[str], now: datetime,
             source: str = EXPLICIT) -> Memory:
    stamp = iso(now)
    return Memory(memory_id, "core", text, scope, tuple(tags), source, stamp, stamp, pinned=True)


def new_soft(memory_id: str, text: str, scope: str, tags: Iterable[str], now: datetime, *,
             confidence: float = MANUAL_CONFIDENCE, source: str = "manual", ttl_days: int = SOFT_TTL_DAYS) -> Memory:
    stamp = iso(now)
    return Memory(memory_id, "soft", text, scope, tuple(tags), source, stamp, stamp, confidence=clamp(confidence),
                  last_seen_at=stamp, ttl_days=ttl_days if ttl_days > 0 else SOFT_TTL_DAYS, status="active")


# --- reading and writing records ----------------------------------------------------------

_KEYS: dict[Layer, tuple[str, ...]] = {"core": CORE_KEYS, "soft": SOFT_KEYS}
_KNOWN: dict[Layer, frozenset[str]] = {"core": frozenset(CORE_KEYS), "soft": frozenset(SOFT_KEYS)}


class _Reader:
    """The fields of one stored record, noting the keys that hold a value of another type."""

    __slots__ = ("record", "odd")

    def __init__(self, record: dict[str, Any]):
        self.record = record
        self.odd: list[str] = []  # kept in extras

    def _other(self, key: str) -> None:
        if key in self.record:
            self.odd.append(key)

    def text(self, key: str) -> str:
        value = self.record.get(key)
        if isinstance(value, str):
            return value
        self._other(key)
        return ""

    def number(self, key: str) -> float:
        value = self.record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        self._other(key)
        return 0

    def count(self, key: str) -> int:
        value = self.record.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        self._other(key)
        return 0

    def flag(self, key: str) -> bool:
        value = self.record.get(key)
        if isinstance(value, bool):
            return value
        self._other(key)
        return False

    def tags(self) -> tuple[str, ...]:
        value = self.record.get("tags")
        if isinstance(value, list):
            if all(isinstance(t, str) for t in value):
                return tuple(value)
            self.odd.append("tags")  # written back as stored; read as their text
            return tuple(str(t) for t in value)
        self._other("tags")
        return ()


def from_record(record: object, layer: Layer) -> Memory | None:
    """The memory a stored record holds; None when it is not a JSON object with a string `id`."""
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        return None
    r = _Reader(record)
    text, scope, tags, source = r.text("text"), r.text("scope"), r.tags(), r.text("source")
    created, updated = r.text("created_at"), r.text("updated_at")
    pinned, confidence, hits, seen, ttl, status = False, 0.0, 0, "", 0.0, ""
    if layer == "core":
        pinned = r.flag("pinned")
    else:
        confidence, hits, seen = r.number("confidence"), r.count("hits"), r.text("last_seen_at")
        ttl, status = r.number("ttl_days"), r.text("status")
    keys = tuple(record)
    if keys == _KEYS[layer]:
        keys = ()
    extras: Mapping[str, object] = EMPTY
    if keys or r.odd:
        known, odd = _KNOWN[layer], r.odd
        extras = {k: v for k, v in record.items() if k not in known or k in odd} or EMPTY
    return Memory(record["id"], layer, text, scope, tags, source, created, updated, pinned, confidence, hits, seen,
                  ttl, status, keys, extras)


def to_record(memory: Memory) -> dict[str, object]:
    """The record a file holds of `memory` (and the protocol shows)."""
    m = memory
    record: dict[str, object]
    if m.layer == "core":
        record = {"id": m.id, "text": m.text, "scope": m.scope, "tags": list(m.tags), "created_at": m.created_at,
                  "updated_at": m.updated_at, "source": m.source, "pinned": m.pinned}
    else:
        record = {"id": m.id, "text": m.text, "scope": m.scope, "tags": list(m.tags), "confidence": m.confidence,
                  "hits": m.hits, "created_at": m.created_at, "updated_at": m.updated_at,
                  "last_seen_at": m.last_seen_at, "ttl_days": m.ttl_days, "source": m.source, "status": m.status}
    extras = m.extras
    if not m.keys and not extras:
        return record
    stored = {key: extras[key] if key in extras else record[key] for key in m.keys or record
              if key in extras or key in record}
    for key, value in extras.items():
        stored.setdefault(key, value)
    return stored


def _written(memory: Memory, keys: tuple[str, ...]) -> tuple[tuple[str, ...], Mapping[str, object]]:
    """`keys` and `extras` of `memory` once the fields of `keys` are written."""
    stored, extras = memory.keys, memory.extras
    if stored:
        stored += tuple(k for k in keys if k not in stored)
    if not extras.keys().isdisjoint(keys):
        extras = {k: v for k, v in extras.items() if k not in keys} or EMPTY
    return stored, extras


def forgotten(memory: Memory, now: datetime) -> Memory:
    """A forgotten soft memory: its text, tags, confidence and hits are gone for good."""
    keys, extras = _written(memory, ("text", "tags", "confidence", "hits", "status", "updated_at"))
    return replace(memory, text=FORGOTTEN_TEXT, tags=(), confidence=0.0, hits=0, status="forgotten",
                   updated_at=iso(now), keys=keys, extras=extras)


def rescoped(memory: Memory, scope: str, now: datetime) -> Memory:
    keys, extras = _written(memory, ("scope", "updated_at"))
    return replace(memory, scope=scope, updated_at=iso(now), keys=keys, extras=extras)


def touched(memory: Memory, hits: int, stamp: str) -> Memory:
    """`hits` more retrievals, the last at `stamp`."""
    keys, extras = _written(memory, ("hits", "last_seen_at", "updated_at"))
    return replace(memory, hits=memory.hits + hits, last_seen_at=stamp, updated_at=stamp, keys=keys, extras=extras)


def expires_at(memory: Memory) -> float | None:
    """When an active soft memory stops being retrieved (last seen + ttl); None: never."""
    ttl = memory.ttl_days
    if ttl <= 0:
        return None
    seen = epoch(memory.last_seen_at)
    return None if seen is None else seen + ttl * 86400


def same_text(a: object, b: str) -> bool:
    return " ".join(str(a).split()) == " ".join(b.split())


def event_ref(memory: Memory) -> dict[str, object]:
    """What an event line says of a memory: its id, layer, scope and tags as stored."""
    record = to_record(memory)
    return {"id": memory.id, "layer": memory.layer, "scope": record.get("scope"), "tags": record.get("tags", [])}
