"""Conversation statistics for runtime/stats: message counts, cumulative token usage and
an estimate of the context the next request will use. Pure functions of the messages."""

from __future__ import annotations

import json
from typing import Any

TOKEN_FIELDS = (("input", "input_tokens"), ("output", "output_tokens"), ("cacheRead", "cache_read_tokens"),
                ("cacheWrite", "cache_write_tokens"), ("reasoning", "reasoning_tokens"), ("total", "total_tokens"))


def message_counts(messages: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0, "totalMessages": 0}
    for m in messages:
        role = m.get("role")
        if role == "system":
            continue
        counts["totalMessages"] += 1
        if role == "user":
            counts["userMessages"] += 1
        elif role == "assistant":
            counts["assistantMessages"] += 1
            counts["toolCalls"] += len(m.get("tool_calls") or [])
        elif role in ("tool", "toolResult"):
            counts["toolResults"] += 1
    return counts


def token_totals(messages: list[dict[str, Any]]) -> tuple[dict[str, int], float | None]:
    """Cumulative provider usage over assistant messages, and total cost (None if never reported)."""
    totals = {wire: 0 for wire, _ in TOKEN_FIELDS}
    cost = None
    for m in messages:
        usage = m.get("usage") if m.get("role") == "assistant" else None
        if not isinstance(usage, dict):
            continue
        for wire, key in TOKEN_FIELDS:
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[wire] += int(value)
        if isinstance(usage.get("cost"), (int, float)):
            cost = (cost or 0.0) + float(usage["cost"])
    return totals, cost


def _chars(message: dict[str, Any]) -> int:
    content = message.get("content")
    size = len(content) if isinstance(content, str) else len(json.dumps(content or ""))
    for call in message.get("tool_calls") or []:
        size += len(json.dumps(call))
    return size + len(message.get("summary") or "")


def context_usage(messages: list[dict[str, Any]], instructions: str, window: int | None) -> dict[str, Any] | None:
    """Estimated tokens of the next request (chars/4, anchored on the latest reported usage)."""
    live = [m for m in messages if m.get("role") != "system"]
    if not window or not live:
        return None
    tokens, start = len(instructions) // 4, 0
    for i in range(len(live) - 1, -1, -1):
        usage = live[i].get("usage") if live[i].get("role") == "assistant" else None
        if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int) and usage["total_tokens"] > 0:
            tokens, start = usage["total_tokens"], i + 1
            break
    tokens += sum(_chars(m) for m in live[start:]) // 4
    return {"tokens": tokens, "contextWindow": window, "percent": round(100.0 * tokens / window, 1),
            "estimated": True}
