"""Rebuild the live state of a session from its records, one record at a time.

The same `Replay` object serves a full load (every record of the file, in order) and the
incremental catch-up of an open session (records appended since, by this or another
process), so a resumed view and a long-lived view of one file always agree.

Rules (reference section 4): messages are replayed in order; a compaction record replaces
the live list with ``[summary] + messages from first_kept_entry_id``; the name is the last
session_info's ``name`` (missing, empty or null clears it); read-before-write state is the
set of realpaths of successful ``read_file``, ``write_file`` and ``edit_file`` results
(tool content that is not an error text; the path comes from the assistant's matching
tool call, resolved inside the workspace as the tools resolve it), cleared by compaction.
These are exactly the paths the tools add to the live set (`kward.tools.reading`,
`kward.tools.writing`).

Not thread-safe by itself: the owner (OpenSession) serializes calls under its lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kward.errors import InvalidParams

from kward.sessions.messages import (
    compacted,
    first_kept_id,
    message_ident,
    role_of,
    tool_call_name,
    tool_call_raw_args,
    tool_calls_of,
)
from kward.sessions.normalize import is_error_result, parse_arguments
from kward.sessions.records import SessionHeader
from kward.tools.paths import resolve_existing

#: Tools whose successful result puts the file's realpath in the read set.
READ_TOOLS = frozenset({"read_file", "write_file", "edit_file"})
_ROLES = {r: r for r in ("system", "user", "assistant", "tool", "toolResult", "compactionSummary")}


def resolve_read_path(workspace_root: str, path: str) -> str | None:
    """The realpath a successful read/write refers to (as the tools resolve it), or None
    when it no longer exists or lies outside the workspace."""
    try:
        return resolve_existing(Path(workspace_root), path)
    except (InvalidParams, OSError):  # ToolError (gone, NUL byte), PathNotAllowed; OSError: vanished meanwhile
        return None


class Replay:
    """Live conversation, name, read paths and runtime metadata of one session."""

    def __init__(self, header: SessionHeader, workspace_root: str):
        self.workspace_root = workspace_root
        self.conversation: list[dict[str, Any]] = []
        self.name: str | None = None
        self.content_messages = 0  # user/assistant/tool message records ever seen
        self.read_paths: set[str] = set()
        self.memory_state: dict[str, Any] | None = None
        self.model = header.model
        self.reasoning_effort = header.reasoning_effort
        self._pending_reads: dict[str, str] = {}

    def apply(self, record: dict[str, Any]) -> bool:
        """Apply one body record; False when its shape is unusable (the caller reports it)."""
        record_type = record.get("type")
        if record_type == "message":
            message = record.get("message")
            if message.__class__ is not dict:
                return False
            self.add_message(message)
        elif record_type == "compaction":
            summary = record.get("message")
            if not isinstance(summary, dict):
                return False
            self.compact(summary)
        elif record_type == "session_info":
            self.name = clean_name(record.get("name"))
            if isinstance(record.get("model"), str) and record["model"]:
                self.model = record["model"]
            if isinstance(record.get("reasoningEffort"), str) and record["reasoningEffort"]:
                self.reasoning_effort = record["reasoningEffort"]
        elif record_type == "memory_state":
            self.memory_state = {"sessionMemories": record.get("sessionMemories") or [],
                                 "lastRetrieval": record.get("lastRetrieval")}
        return True

    def add_message(self, message: dict[str, Any]) -> None:
        """Append to the live list (hot path of every resume: keep it lean)."""
        self.conversation.append(message)
        role = message.get("role")
        if role.__class__ is not str:
            return
        shared = _ROLES.get(role)
        if shared is not None and shared is not role:
            message["role"] = shared  # one shared string instead of one per message
        if role == "assistant":
            self.content_messages += 1
            if "tool_calls" in message or "toolCalls" in message:
                self._note_read_calls(message)
        elif role == "user":
            self.content_messages += 1
        elif role == "tool":
            self.content_messages += 1
            if message.get("name") in READ_TOOLS:
                self._note_read_result(message)

    def _note_read_calls(self, message: dict[str, Any]) -> None:
        for call in tool_calls_of(message):
            if tool_call_name(call) in READ_TOOLS and isinstance(call.get("id"), str):
                path = parse_arguments(tool_call_raw_args(call)).get("path")
                if isinstance(path, str) and path:
                    self._pending_reads[call["id"]] = path

    def _note_read_result(self, message: dict[str, Any]) -> None:
        call_id = message.get("tool_call_id")
        path = self._pending_reads.pop(call_id, None) if isinstance(call_id, str) else None
        content = message.get("content")
        if path is not None and not is_error_result(content if isinstance(content, str) else ""):
            resolved = resolve_read_path(self.workspace_root, path)
            if resolved is not None:
                self.read_paths.add(resolved)

    def compact(self, summary: dict[str, Any]) -> None:
        self.conversation = compacted(self.conversation, summary, first_kept_id(summary), role_of, message_ident)
        self.read_paths.clear()
        self._pending_reads.clear()


def clean_name(value: Any) -> str | None:
    """A stored/requested name: stripped; empty or not a string -> None."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None
