"""The linear ("version 1") session file format: its header, its record shapes, and how
a record becomes a line.

A session file is JSONL: a header line, then one record per line. The shapes follow the
original kward's (its version 1 files load unchanged); a message record's `message` is
the typed message as `kward.sessions.codec` encodes it:

- ``{type:"session", version:1, id, timestamp, cwd, model?, reasoningEffort?, parentId?, parentPath?}``
- ``{type:"message", timestamp, message}``
- ``{type:"compaction", timestamp, message:{role:"compactionSummary", summary, first_kept_entry_id, ...,
  summarizer_usage?}}``: `summarizer_usage` (kward's addition; older records have none)
  is the summed usage of the summarizer's model calls, counted in the session's totals
- ``{type:"tool_execution_end", timestamp, toolCallId, toolName, args, result, isError}``
- ``{type:"memory_state", timestamp, sessionMemories, lastRetrieval}``
- ``{type:"session_info", timestamp, name?, model?, reasoningEffort?}``

Pure functions and immutable data: safe from any thread.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from kward.timefmt import now_iso

SESSION_VERSION = 1

#: The key of a compaction summary (an extra field of its record) holding the summed
#: usage object of the summarizer's model calls.
SUMMARIZER_USAGE = "summarizer_usage"

#: Record types written after the header. Anything else is skipped (and logged) on read.
BODY_TYPES = frozenset({"message", "compaction", "tool_execution_end", "memory_state", "session_info"})
#: Types a caller may append through ``append_record`` (messages go through ``append_message``).
EXTRA_TYPES = frozenset({"compaction", "tool_execution_end", "memory_state", "session_info"})


class SessionHeader(NamedTuple):
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


# --- the text a record shows, without decoding it ------------------------------------
# What `kward.sessions.codec` makes of the parts of a stored content value, for the texts a
# listing shows (tests/sessions/test_sessions_codec.py checks them against the decoded messages).

TEXT_TYPES = ("text", "input_text", "output_text")
IMAGE_TYPES = ("image", "image_url", "input_image")
THINKING_TYPES = ("thinking", "reasoning")


def record_role(raw: object) -> str:
    """The role of a record's message object as the typed model names it (`tool` for
    `toolResult`), without decoding it; "" when it is none."""
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(role, str):
        return ""
    return "tool" if role == "toolResult" else role


def part_text(part: object) -> str | None:
    """The text of one stored content part (None: it has none): a bare string, a text part,
    or the `text` of a part kward does not interpret."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None if part is None else str(part)
    kind, text = part.get("type"), part.get("text")
    if kind in TEXT_TYPES and isinstance(text, str):
        return text
    if kind in IMAGE_TYPES or kind == "toolCall":
        return None
    if kind in THINKING_TYPES and part.get("thinking", part.get("reasoning", text)) is not None:
        return None
    return None if text is None else str(text)


def content_text(value: object, joiner: str = " ") -> str:
    """The text of a stored content value: the string, or its parts' texts joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return joiner.join(text for text in (part_text(p) for p in value) if text is not None)
    return "" if value is None else str(value)


def summary_text(message: dict[str, Any]) -> str:
    """The summary of a stored compactionSummary message (`summary`, else `content`; of a
    list, the text parts only, joined)."""
    summary = message.get("summary", message.get("content"))
    if summary is None or isinstance(summary, str):
        return summary or ""
    if not isinstance(summary, list):
        return str(summary)
    return "".join(p if isinstance(p, str) else p["text"] for p in summary
                   if isinstance(p, str) or (isinstance(p, dict) and p.get("type") in TEXT_TYPES
                                             and isinstance(p.get("text"), str)))


def shown_text(message: dict[str, Any]) -> str:
    """The whole text a stored message shows: a compaction's summary, a user message's
    `display_content` when it has one, else its content's text."""
    role = message.get("role")
    if role == "compactionSummary":
        return summary_text(message)
    display = message.get("display_content")
    if role == "user" and display is not None:
        return content_text(display)
    return content_text(message.get("content"))


def first_kept_entry_id(message: dict[str, Any]) -> str | None:
    """The entry a stored compactionSummary message keeps from (None: none or not a summary)."""
    if message.get("role") != "compactionSummary":
        return None
    first = message.get("first_kept_entry_id")
    if first is None:
        first = message.get("firstKeptEntryId")
    return first if isinstance(first, str) and first else None
