"""Entries of a session's conversation, without the typed model: entry ids, the live list
after a compaction (generic over the item type, so a listing replays light stand-ins and
a resume whole messages), the roles that count, and the one-line form of a shown text.

Pure functions: safe from any thread.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence, TypeVar

#: Roles that make a session "used" (never cleaned up automatically).
CONTENT_ROLES = frozenset({"user", "assistant", "tool"})
#: Roles counted by ``messageCount`` in listings.
COUNTED_ROLES = frozenset({"user", "assistant", "tool", "compactionSummary"})
ENTRY_PREFIX = "message:"
FIRST_MESSAGE_CHARS = 120

_WS = re.compile(r"\s+")

T = TypeVar("T")


def compact(text: str, limit: int = FIRST_MESSAGE_CHARS) -> str:
    """Whitespace collapsed, stripped, cut to `limit` characters."""
    return _WS.sub(" ", text).strip()[:limit]


def entry_id(index: int) -> str:
    return f"{ENTRY_PREFIX}{index}"


def parse_entry_id(value: object) -> int | None:
    """``message:<n>`` -> n, else None."""
    if isinstance(value, str) and value.startswith(ENTRY_PREFIX):
        digits = value[len(ENTRY_PREFIX):]
        if digits.isdigit() and digits.isascii():
            return int(digits)
    return None


def compacted(
    live: Sequence[T],
    summary: T,
    first_kept: str | None,
    role: Callable[[T], str],
    ident: Callable[[T], object],
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
