"""Conversation statistics for runtime/stats: message counts, cumulative token usage and
an estimate of the context the next request will use. Pure functions of the messages
(`kward.model`)."""

from __future__ import annotations

from typing import Any

from kward.model import AssistantMessage, Message, ToolResultMessage, UserMessage
from kward.sessions.codec import stored_chars

TOKEN_FIELDS = (("input", "input_tokens"), ("output", "output_tokens"), ("cacheRead", "cache_read_tokens"),
                ("cacheWrite", "cache_write_tokens"), ("reasoning", "reasoning_tokens"), ("total", "total_tokens"))


def message_counts(messages: list[Message]) -> dict[str, int]:
    counts = {"userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0, "totalMessages": 0}
    for m in messages:
        kind = type(m)
        if m.role == "system":
            continue
        counts["totalMessages"] += 1
        if kind is UserMessage:
            counts["userMessages"] += 1
        elif kind is AssistantMessage:
            counts["assistantMessages"] += 1
            counts["toolCalls"] += len(m.tool_calls)
        elif kind is ToolResultMessage:
            counts["toolResults"] += 1
    return counts


def token_totals(messages: list[Message]) -> tuple[dict[str, int], float | None]:
    """Cumulative provider usage over assistant messages, and total cost (None if never reported)."""
    totals = {wire: 0 for wire, _ in TOKEN_FIELDS}
    cost = None
    for m in messages:
        usage = m.usage if type(m) is AssistantMessage else None
        if usage is None:
            continue
        for wire, key in TOKEN_FIELDS:
            totals[wire] += getattr(usage, key)
        if usage.cost is not None:
            cost = (cost or 0.0) + usage.cost
    return totals, cost


def context_usage(messages: list[Message], instructions: str, window: int | None) -> dict[str, Any] | None:
    """Estimated tokens of the next request (chars/4, anchored on the latest reported usage)."""
    live = [m for m in messages if m.role != "system"]
    if not window or not live:
        return None
    tokens, start = len(instructions) // 4, 0
    for i in range(len(live) - 1, -1, -1):
        usage = live[i].usage if type(live[i]) is AssistantMessage else None
        if usage is not None and usage.total_tokens > 0:
            tokens, start = usage.total_tokens, i + 1
            break
    tokens += sum(stored_chars(m) for m in live[start:]) // 4
    return {"tokens": tokens, "contextWindow": window, "percent": round(100.0 * tokens / window, 1),
            "estimated": True}
