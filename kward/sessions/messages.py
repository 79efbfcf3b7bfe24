"""Helpers over stored conversation messages (plain dicts, as written to the file).

Message shapes (reference section 4): user ``{role:"user", content:str|[parts], display_content?}``,
assistant ``{role:"assistant", content, reasoning_summary?, tool_calls?[{id, type:"function",
function:{name, arguments}}]}``, tool ``{role:"tool", tool_call_id, name, content}``, and
``{role:"compactionSummary", summary, first_kept_entry_id, tokens_before, ...}``.

Pure functions: safe from any thread. Nothing here mutates a message.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence, TypeVar

#: Roles that make a session "used" (never cleaned up automatically).
CONTENT_ROLES = frozenset({"user", "assistant", "tool"})
#: Roles counted by ``messageCount`` in listings.
COUNTED_ROLES = frozenset({"user", "assistant", "tool", "toolResult", "compactionSummary"})
ENTRY_PREFIX = "message:"
FIRST_MESSAGE_CHARS = 120

_WS = re.compile(r"\s+")

T = TypeVar("T")


def role_of(message: Any) -> str:
    if isinstance(message, dict):
        role = message.get("role")
        return role if isinstance(role, str) else ""
    return ""


def compact(text: str, limit: int = FIRST_MESSAGE_CHARS) -> str:
    """Whitespace collapsed, stripped, cut to `limit` characters."""
    return _WS.sub(" ", text).strip()[:limit]


def content_text(content: Any, joiner: str = " ") -> str:
    """The text of a message's content: a string, or the ``text`` of each part."""
    if isinstance(content, list):
        return joiner.join(
            part["text"] for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    if content is None:
        return ""
    return content if isinstance(content, str) else str(content)


def display_text(message: dict[str, Any]) -> str:
    """The compact one-line text shown in listings (``firstMessage``)."""
    if role_of(message) == "compactionSummary":
        return compact(content_text(message.get("summary")))
    shown = message.get("display_content")
    if shown is not None:
        return compact(content_text(shown))
    return compact(content_text(message.get("content")))


def full_text(message: dict[str, Any]) -> str:
    """A user message's whole text (parts joined by newlines, stripped): for fork."""
    return content_text(message.get("content"), "\n").strip()


def tool_calls_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    if calls is None:
        calls = message.get("toolCalls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def tool_call_name(call: dict[str, Any]) -> str | None:
    function = call.get("function")
    name = function.get("name") if isinstance(function, dict) else call.get("name")
    return name if isinstance(name, str) else None


def tool_call_raw_args(call: dict[str, Any]) -> Any:
    function = call.get("function")
    return function.get("arguments") if isinstance(function, dict) else call.get("arguments")


def entry_id(index: int) -> str:
    return f"{ENTRY_PREFIX}{index}"


def parse_entry_id(value: Any) -> int | None:
    """``message:<n>`` -> n, else None."""
    if isinstance(value, str) and value.startswith(ENTRY_PREFIX):
        digits = value[len(ENTRY_PREFIX):]
        if digits.isdigit() and digits.isascii():
            return int(digits)
    return None


def first_kept_id(summary: dict[str, Any]) -> str | None:
    value = summary.get("first_kept_entry_id")
    if value is None:
        value = summary.get("firstKeptEntryId")
    return value if isinstance(value, str) and value else None


def compacted(
    live: Sequence[T],
    summary: T,
    first_kept: str | None,
    role: Callable[[T], str],
    ident: Callable[[T], Any],
) -> list[T]:
    """The live list after a compaction: ``[summary] + messages from first_kept``.

    As the original: system messages are dropped; ids are a message's own ``id`` or
    ``message:<index>`` positional within the current compaction branch (the messages from
    the last compactionSummary on); when not found there, the whole list is searched; when
    not found at all only the summary remains. Generic over the item type so listings can
    replay light-weight stand-ins instead of whole messages.
    """
    if first_kept is None:
        return [summary]
    messages = [m for m in live if role(m) != "system"]
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        if role(messages[i]) == "compactionSummary":
            start = i
            break

    def find(offset: int) -> int | None:
        for index in range(offset, len(messages)):
            item = messages[index]
            if ident(item) == first_kept or entry_id(index - offset) == first_kept:
                return index
        return None

    found = find(start)
    if found is None and start:
        found = find(0)
    return [summary] + (messages[found:] if found is not None else [])


def message_ident(message: Any) -> Any:
    return message.get("id") if isinstance(message, dict) else None
