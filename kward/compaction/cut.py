"""Where a compaction cuts the conversation: which messages the summary replaces and
which recent ones are kept as they are.

The live entries (non-system messages; after an earlier compaction they start with its
summary) are split at `first_kept`: ``entries[start:first_kept]`` is summarized (`start`:
after the previous summary), ``entries[first_kept:]`` is kept. The kept part holds about
`keep_recent_tokens` of the newest messages (never more, unless nothing smaller is a
valid cut):

1. preferably it starts at a user message (a turn boundary): the earliest user message
   whose suffix fits;
2. otherwise the last turn alone is too large: the cut falls inside it, at the earliest
   assistant message whose suffix fits, and the turn's prefix (from its user message) is
   summarized separately (`split_turn`, `turn_prefix`);
3. otherwise the earliest user or assistant message whose suffix fits.

A cut is never at a tool result, and is moved back to the assistant message that made a
call when a kept result's call would be summarized: the kept context never holds a
result without its call. The kept part is exactly what a reload rebuilds (`kward.sessions.
entries.compacted`: the messages from `first_kept_entry_id`).

Pure functions: any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from kward.compaction.estimate import message_tokens
from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Message,
    ToolResultMessage,
    UserMessage,
    message_id,
)
from kward.sessions.entries import entry_id


@dataclass(frozen=True)
class Cut:
    start: int  # first message the summary replaces (after the previous summary)
    first_kept: int  # first message kept
    split_turn: bool = False
    turn_start: int | None = None  # split: the user message that starts the cut turn

    def summarized(self, entries: Sequence[Message]) -> list[Message]:
        """The messages the main summary covers (before the cut turn when split)."""
        end = self.turn_start if self.split_turn and self.turn_start is not None else self.first_kept
        return list(entries[self.start:end])

    def turn_prefix(self, entries: Sequence[Message]) -> list[Message]:
        """Split turn: the part of the last turn before the cut (summarized separately)."""
        if not self.split_turn or self.turn_start is None:
            return []
        return list(entries[self.turn_start:self.first_kept])


def branch_start(entries: Sequence[Message]) -> tuple[int, CompactionSummary | None]:
    """(index after the last compaction summary, that summary) or (0, None)."""
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        if isinstance(entry, CompactionSummary):
            return i + 1, entry
    return 0, None


def kept_entry_id(entries: Sequence[Message], index: int) -> str:
    """The id a compaction record names the first kept message by: its own id (v2 files),
    else ``message:<n>`` counted from the current compaction branch (as a reload reads it)."""
    own = message_id(entries[index])
    if isinstance(own, str) and own:
        return own
    start, summary = branch_start(entries[:index])
    offset = start - 1 if summary is not None else 0
    return entry_id(index - offset)


def _is_cut(message: Message) -> bool:
    return isinstance(message, (UserMessage, AssistantMessage))


def _paired(entries: Sequence[Message], start: int, index: int) -> int:
    """`index` moved back until no kept tool result's call lies before it (in the
    summarized part)."""
    while True:
        callers = {}
        for i in range(start, index):
            message = entries[i]
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    callers[call.id] = i
        earliest = index
        for message in entries[index:]:
            if isinstance(message, ToolResultMessage) and message.tool_call_id in callers:
                earliest = min(earliest, callers[message.tool_call_id])
        if earliest == index:
            return index
        index = earliest


def find_cut(entries: Sequence[Message], start: int, keep_recent_tokens: int) -> Cut | None:
    """The cut of ``entries[start:]`` (see the module docstring); None when everything
    after `start` fits in `keep_recent_tokens` (nothing to compact) or no cut is valid."""
    n = len(entries)
    if start >= n:
        return None
    suffix = [0] * (n + 1)  # suffix[i]: tokens of entries[i:]
    for i in range(n - 1, start - 1, -1):
        suffix[i] = suffix[i + 1] + message_tokens(entries[i])
    if suffix[start] <= keep_recent_tokens:
        return None

    def fits(i: int) -> bool:
        return suffix[i] <= keep_recent_tokens

    for i in range(start + 1, n):  # 1. a turn boundary
        if isinstance(entries[i], UserMessage) and fits(i):
            return Cut(start, _paired(entries, start, i))
    turn_start = next((i for i in range(n - 1, start - 1, -1) if isinstance(entries[i], UserMessage)), start)
    if not fits(turn_start):  # 2. inside the last turn
        for i in range(turn_start + 1, n):
            if isinstance(entries[i], AssistantMessage) and fits(i):
                first = _paired(entries, turn_start, i)
                if first > turn_start:
                    return Cut(start, first, True, turn_start)
                break
    for i in range(start + 1, n):  # 3. any user or assistant message
        if _is_cut(entries[i]) and fits(i):
            first = _paired(entries, start, i)
            return Cut(start, first) if first > start else None
    return None
