"""The linear ("version 1") session file format: its header, its record shapes, and how
a record becomes a line.

A session file is JSONL: a header line, then one record per line. The shapes follow the
original kward's (its version 1 files load unchanged); a message record's `message` is
the typed message as `kward.sessions.codec` encodes it:

- ``{type:"session", version:1, id, timestamp, cwd, model?, reasoningEffort?, parentId?, parentPath?}``
- ``{type:"message", timestamp, message}``
- ``{type:"compaction", timestamp, message:{role:"compactionSummary", summary, first_kept_entry_id, ...}}``
- ``{type:"tool_execution_end", timestamp, toolCallId, toolName, args, result, isError}``
- ``{type:"memory_state", timestamp, sessionMemories, lastRetrieval}``
- ``{type:"session_info", timestamp, name?, model?, reasoningEffort?}``

Pure functions and immutable data: safe from any thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kward.timefmt import now_iso

SESSION_VERSION = 1

#: Record types written after the header. Anything else is skipped (and logged) on read.
BODY_TYPES = frozenset({"message", "compaction", "tool_execution_end", "memory_state", "session_info"})
#: Types a caller may append through ``append_record`` (messages go through ``append_message``).
EXTRA_TYPES = frozenset({"compaction", "tool_execution_end", "memory_state", "session_info"})


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """The first record of a session file."""

    id: str
    timestamp: str
    cwd: str
    model: str | None = None
    reasoning_effort: str | None = None
    parent_id: str | None = None
    parent_path: str | None = None

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "type": "session",
            "version": SESSION_VERSION,
            "id": self.id,
            "timestamp": self.timestamp,
            "cwd": self.cwd,
            "model": self.model,
            "reasoningEffort": self.reasoning_effort,
            "parentId": self.parent_id,
            "parentPath": self.parent_path,
        }
        return {k: v for k, v in record.items() if v not in (None, "")}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "SessionHeader":
        """Build from a record already checked by ``header_problem``."""

        def text(key: str) -> str | None:
            value = record.get(key)
            return value if isinstance(value, str) and value else None

        return cls(
            id=record["id"],
            timestamp=text("timestamp") or "",
            cwd=text("cwd") or "",
            model=text("model"),
            reasoning_effort=text("reasoningEffort"),
            parent_id=text("parentId"),
            parent_path=text("parentPath"),
        )


def header_problem(record: object) -> str | None:
    """Why `record` is not a usable v1 header, or None when it is one."""
    if not isinstance(record, dict) or record.get("type") != "session":
        return "the first record is not a session header"
    version = record.get("version")
    if version != SESSION_VERSION or isinstance(version, bool):
        return f"unsupported session format version {version!r} (kward reads version {SESSION_VERSION})"
    if not isinstance(record.get("id"), str) or not record["id"]:
        return "the session header has no id"
    return None


def make_record(record_type: str, **fields: object) -> dict[str, Any]:
    """``{type, timestamp, **fields}`` with the type first (readers may peek at it)."""
    record: dict[str, Any] = {"type": record_type, "timestamp": now_iso()}
    record.update(fields)
    return record


def message_record(message: dict[str, Any]) -> dict[str, Any]:
    return make_record("message", message=message)


def clean_name(value: object) -> str | None:
    """A stored or requested session name: stripped; empty or not a string -> None."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def session_info_record(name: str | None, **runtime: object) -> dict[str, Any]:
    """A rename (``name`` may be None to clear) or a runtime change carrying the name."""
    fields: dict[str, object] = {"name": name}
    fields.update({k: v for k, v in runtime.items() if v not in (None, "")})
    if name is None and runtime:
        fields.pop("name")  # as the original: empty values are omitted on runtime records
    return make_record("session_info", **fields)


def encode_line(record: dict[str, Any]) -> bytes:
    """One compact JSON line ending in ``\\n`` (UTF-8; lone surrogates escaped)."""
    try:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
