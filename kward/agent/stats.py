"""Conversation statistics for runtime/stats: message counts and an estimate of the
context the next request will use, as typed values (their wire shapes:
`kward.rpc.wire.runtime`). Pure functions of the messages (`kward.model`), any thread. The
cumulative token usage is the session's own (`OpenSession.spent`: compacted messages and
summarizer calls included)."""

from __future__ import annotations

from typing import NamedTuple

from kward.model import AssistantMessage, Message, ToolResultMessage, UserMessage
from kward.sessions.codec import stored_chars


class MessageCounts(NamedTuple):
    """The non-system messages of a conversation by kind; `tool_calls` counts the calls of
    the assistant messages (`tool_calls`, kward's own)."""

    user: int = 0
    assistant: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    total: int = 0


class ContextUsage(NamedTuple):
    """The estimated size of the next request against the model's context window."""

    tokens: int
    context_window: int
    estimated: bool = True  # always: chars / 4 over what the last reported usage does not cover

    @property
    def percent(self) -> float:
        return round(100.0 * self.tokens / self.context_window, 1)


def message_counts(messages: list[Message]) -> MessageCounts:
    user = assistant = tool_calls = tool_results = total = 0
    for m in messages:
        if m.role == "system":
            continue
        total += 1
        if isinstance(m, UserMessage):
            user += 1
        elif isinstance(m, AssistantMessage):
            assistant += 1
            tool_calls += len(m.tool_calls)
        elif isinstance(m, ToolResultMessage):
            tool_results += 1
    return MessageCounts(user, assistant, tool_calls, tool_results, total)


def context_usage(messages: list[Message], instructions: str, window: int | None) -> ContextUsage | None:
    """Estimated tokens of the next request (chars/4, anchored on the latest reported usage)."""
    live = [m for m in messages if m.role != "system"]
    if not window or not live:
        return None
    tokens, start = len(instructions) // 4, 0
    for i in range(len(live) - 1, -1, -1):
        message = live[i]
        usage = message.usage if isinstance(message, AssistantMessage) else None
        if usage is not None and usage.total_tokens > 0:
            tokens, start = usage.total_tokens, i + 1
            break
    tokens += sum(stored_chars(m) for m in live[start:]) // 4
    return ContextUsage(tokens, window)
