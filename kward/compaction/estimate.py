"""Token estimates of a conversation and the threshold of automatic compaction (the
original's rules).

A message counts ``ceil(chars / 4)`` tokens, over its role, its text (images as
``[mime: path]``), reasoning, tool calls (name and arguments), tool call id and name, or
a summary's text. The context of the next request is the total usage the provider
reported for the last assistant message that has one, plus the estimate of the messages
after it (or the estimate of every message when none reported usage). The usage of a
message a compaction kept describes the context before that compaction: a summary
written by kward says how many messages it kept (`KEPT_MESSAGES`), and their usage is
not used.

Automatic compaction starts when the context estimate exceeds
``window - max(reserve_tokens, 10% of window, 12,000)``.

Pure functions (kward.model messages): any thread.
"""

from __future__ import annotations

import json
from typing import Sequence

from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolResultMessage,
)

#: The key of a compaction summary (an extra field of its record): the messages it kept.
KEPT_MESSAGES = "kept_messages"
GUARD_RATIO = 0.10
GUARD_FLOOR = 12_000


def tokens_of_chars(chars: int) -> int:
    return -(-chars // 4)


def content_chars(content: Content) -> int:
    if isinstance(content, str):
        return len(content)
    size = 0
    for part in content:
        if isinstance(part, TextPart):
            size += len(part.text) + 1
        elif isinstance(part, ImagePart):
            size += len(part.mime_type or "image") + len(part.path or "") + 4
        elif isinstance(part, ThinkingPart):
            size += len(part.thinking) + 1
    return size


def message_chars(message: Message) -> int:
    """The characters the estimate counts for one message."""
    size = len(message.role) + 1
    if isinstance(message, CompactionSummary):
        return size + len(message.summary)
    size += content_chars(message.content)
    if isinstance(message, AssistantMessage):
        size += len(message.reasoning or "")
        for call in message.tool_calls:
            args = call.arguments
            size += len(call.name or "") + (len(args) if isinstance(args, str) else len(json.dumps(args))) + 2
    elif isinstance(message, ToolResultMessage):
        size += len(message.tool_call_id or "") + len(message.name or "") + 2
    return size


def message_tokens(message: Message) -> int:
    return tokens_of_chars(message_chars(message))


def messages_tokens(messages: Sequence[Message]) -> int:
    return sum(message_tokens(m) for m in messages)


def usage_tokens(message: Message) -> int:
    """The total tokens the provider reported for an assistant message (0: none)."""
    usage = message.usage if isinstance(message, AssistantMessage) else None
    if usage is None:
        return 0
    if usage.total_tokens > 0:
        return usage.total_tokens
    return usage.input_tokens + usage.output_tokens


def context_tokens(messages: Sequence[Message], instructions: str = "") -> int:
    """The estimated tokens of the next request over `messages` (system messages count)."""
    stale = -1  # usage up to here describes an older context
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], CompactionSummary):
            kept = messages[i].extras.get(KEPT_MESSAGES)
            stale = i + kept if isinstance(kept, int) and not isinstance(kept, bool) else i
            break
    for i in range(len(messages) - 1, stale, -1):
        reported = usage_tokens(messages[i])
        if reported > 0:
            return reported + messages_tokens(messages[i + 1:])
    return tokens_of_chars(len(instructions)) + messages_tokens(messages)


def reserve_for(window: int, reserve_tokens: int) -> int:
    """The room kept free before automatic compaction starts."""
    return max(reserve_tokens, int(window * GUARD_RATIO), GUARD_FLOOR)


def over_threshold(tokens: int, window: int | None, reserve_tokens: int) -> bool:
    """Whether a context of `tokens` calls for automatic compaction in `window`."""
    if not window:
        return False
    return tokens > window - reserve_for(window, reserve_tokens)
