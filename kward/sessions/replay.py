"""Rebuild the live state of a session from its records, one record at a time.

The same `Replay` object serves a full load (every record of the file, in order) and the
incremental catch-up of an open session (records appended since, by this or another
process), so a resumed view and a long-lived view of one file always agree.

Rules (the original kward's): messages are replayed in order; a compaction record replaces
the live list with ``[summary] + messages from first_kept_entry_id``; the name is the last
session_info's ``name`` (missing, empty or null clears it); read-before-write state is the
set of realpaths of successful ``read_file``, ``write_file`` and ``edit_file`` results
(tool content that is not an error text; the path comes from the assistant's matching
tool call, resolved inside the workspace as the tools resolve it), cleared by compaction:
the read-before-write rule of `kward.readstate`, which the tools apply too. `spent` is the
usage of every assistant message ever replayed (compacted ones too) and of every
compaction's summarizer (`summarizer_usage`): the session's cumulative totals.

Not thread-safe by itself: the owner (OpenSession) serializes calls under its lock.
"""

from __future__ import annotations

from typing import Any, TypedDict

from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Message,
    ToolResultMessage,
    UserMessage,
    Usage,
    content_text,
    is_error_text,
    usage_plus,
)
from kward.readstate import READ_TOOLS, realpath_below
from kward.sessions.codec import decode, usage_from
from kward.sessions.entries import compacted
from kward.sessions.format import SUMMARIZER_USAGE, SessionHeader, clean_name
from kward.sessions.messages import message_ident, role_of
from kward.toolcalls import parse_arguments


def resolve_read_path(workspace_root: str, path: str) -> str | None:
    """The realpath a successful read/write refers to (as the tools resolve it), or None
    when it no longer exists or lies outside the workspace."""
    try:
        return realpath_below(workspace_root, path)
    except OSError:  # vanished meanwhile
        return None


class MemoryState(TypedDict):
    """What the last ``memory_state`` record says (`kward.runtime.memory` reads it): the
    session's memories (``[]`` when the record has none) and its last retrieval, as the
    record holds them (JSON values of any shape: whoever reads them checks them)."""

    sessionMemories: object
    lastRetrieval: object


class Replay:
    """Live conversation, name, read paths and runtime metadata of one session."""

    def __init__(self, header: SessionHeader, workspace_root: str):
        self.workspace_root = workspace_root
        self.conversation: list[Message] = []
        self.name: str | None = None
        self.content_messages = 0  # user/assistant/tool message records ever seen
        self.spent = Usage()  # cumulative: every assistant message and summarizer ever replayed
        self.read_paths: set[str] = set()
        self.memory_state: MemoryState | None = None
        self.model = header.model
        self.reasoning_effort = header.reasoning_effort
        self._pending_reads: dict[str, str] = {}

    def apply(self, record: dict[str, Any]) -> bool:
        """Apply one body record; False when its shape is unusable (the caller reports it)."""
        record_type = record.get("type")
        if record_type == "message":
            message = record.get("message")
            if not isinstance(message, dict):
                return False
            self.add_message(decode(message))
        elif record_type == "compaction":
            summary = record.get("message")
            if not isinstance(summary, dict):
                return False
            decoded = decode(summary)
            if not isinstance(decoded, CompactionSummary):  # a compaction record always holds one
                decoded = CompactionSummary(content_text(getattr(decoded, "content", "")), extras=decoded.extras,
                                            record=summary)
            self.compact(decoded)
        elif record_type == "session_info":
            self.name = clean_name(record.get("name"))
            if isinstance(record.get("model"), str) and record["model"]:
                self.model = record["model"]
            if isinstance(record.get("reasoningEffort"), str) and record["reasoningEffort"]:
                self.reasoning_effort = record["reasoningEffort"]
        elif record_type == "memory_state":
            self.memory_state = MemoryState(sessionMemories=record.get("sessionMemories") or [],
                                            lastRetrieval=record.get("lastRetrieval"))
        return True

    def add_message(self, message: Message) -> None:
        """Append to the live list (hot path of every resume: keep it lean)."""
        self.conversation.append(message)
        if isinstance(message, UserMessage):
            self.content_messages += 1
        elif isinstance(message, AssistantMessage):
            self.content_messages += 1
            if message.usage is not None:
                self.spent = usage_plus(self.spent, message.usage)
            if message.tool_calls or message.other_calls:
                self._note_read_calls(message)
        elif isinstance(message, ToolResultMessage):
            self.content_messages += 1
            if message.name in READ_TOOLS:
                self._note_read_result(message)
        elif message.role == "user":
            self.content_messages += 1

    def _note_read_calls(self, message: AssistantMessage) -> None:
        for call in message.shown_calls():
            if call.name in READ_TOOLS and isinstance(call.id, str):
                path = parse_arguments(call.arguments).get("path")
                if isinstance(path, str) and path:
                    self._pending_reads[call.id] = path

    def _note_read_result(self, message: ToolResultMessage) -> None:
        call_id = message.tool_call_id
        path = self._pending_reads.pop(call_id, None) if call_id is not None else None
        content = message.content
        if path is not None and not (isinstance(content, str) and is_error_text(content)):
            resolved = resolve_read_path(self.workspace_root, path)
            if resolved is not None:
                self.read_paths.add(resolved)

    def compact(self, summary: CompactionSummary) -> None:
        summarizer = usage_from(summary.extras.get(SUMMARIZER_USAGE))
        if summarizer is not None:
            self.spent = usage_plus(self.spent, summarizer)
        self.conversation = compacted(self.conversation, summary, summary.first_kept_entry_id, role_of,
                                      message_ident)
        self.read_paths.clear()
        self._pending_reads.clear()
