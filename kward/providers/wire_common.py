"""What the two wire formats (`codex_wire`: Responses; `chat_wire`: chat completions) share:
reading stream events and usage objects, the fields of a tool schema, images and tool-call
arguments as the formats carry them, whether reasoning is requested, and the repair of
tool calls that never got a result.

Interrupted tool calls: when kward stopped (a crash, a kill) after storing an assistant
message with tool calls but before storing every result, each later request would carry
a call without its output, and both APIs refuse such a request (HTTP 400) for good.
`with_interrupted_results` gives every such call the result `INTERRUPTED_RESULT` when a
request is built; the stored session is not changed.

Pure functions, any thread.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kward.model import AssistantMessage, ImagePart, Message, ToolResultMessage, Usage

log = logging.getLogger(__name__)

INTERRUPTED_RESULT = "Error: tool call interrupted before it returned a result."


def event_object(data: str, provider: str) -> dict[str, Any] | None:
    """An SSE event's JSON object, or None (logged) when it is not one: streams carry the
    odd keep-alive or garbage line, which must not fail a turn."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        log.debug("%s: skipping an unparsable event", provider)
        return None
    return value if isinstance(value, dict) else None


def int_field(value: object) -> int:
    """`value` when it is an int (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_usage(raw: object, *, input_key: str, output_key: str, input_details: str,
                output_details: str) -> Usage | None:
    """A usage object -> Usage. Input counts include cached tokens, output counts include
    reasoning tokens (both formats); `cost` is kept when the server reports it (OpenRouter)."""
    if not isinstance(raw, dict):
        return None
    inp, out = int_field(raw.get(input_key)), int_field(raw.get(output_key))
    details_in, details_out = _dict(raw.get(input_details)), _dict(raw.get(output_details))
    cost = raw.get("cost")
    return Usage(input_tokens=inp, output_tokens=out,
                 cache_read_tokens=int_field(details_in.get("cached_tokens")),
                 cache_write_tokens=int_field(details_in.get("cache_write_tokens")),
                 reasoning_tokens=int_field(details_out.get("reasoning_tokens")),
                 total_tokens=int_field(raw.get("total_tokens")) or inp + out,
                 cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None)


def tool_fields(tool: dict[str, Any]) -> dict[str, Any]:
    """``{name, description, parameters}`` of a chat-style ``{type, function:{...}}`` tool
    (or of a flat one), with an empty object schema when parameters are missing."""
    fn = tool.get("function", tool)
    return {"name": fn.get("name", ""), "description": fn.get("description", ""),
            "parameters": fn.get("parameters") or {"type": "object", "properties": {}}}


def image_url(part: ImagePart) -> str | None:
    """A URL (usually a data: URL) for an image part, or None."""
    if part.url:
        return part.url
    if part.data:
        return f"data:{part.mime_type or 'image/png'};base64,{part.data}"
    return None


def arguments_json(value: object) -> str:
    """Tool-call arguments as the JSON string the wire formats carry."""
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def reasoning_enabled(effort: str | None) -> bool:
    """False for None, "" and "off" (no reasoning requested)."""
    return bool(effort) and str(effort).lower() not in ("off", "none")


def with_interrupted_results(messages: list[Message]) -> list[Message]:
    """`messages` with a synthetic tool result after every assistant tool call that has no
    result before the next non-result message (or the end). The same list when none is
    missing."""
    out: list[Message] | None = None
    pending: dict[str, str] = {}  # call id -> tool name, of the last assistant message
    for index, msg in enumerate(messages):
        if isinstance(msg, ToolResultMessage):
            if msg.tool_call_id is not None:
                pending.pop(msg.tool_call_id, None)
        else:
            if pending:
                out = messages[:index] if out is None else out
                out.extend(_interrupted(pending))
                pending = {}
            if isinstance(msg, AssistantMessage) and msg.tool_calls:
                pending = {c.id: c.name if isinstance(c.name, str) else "" for c in msg.tool_calls
                           if isinstance(c.id, str)}
        if out is not None:
            out.append(msg)
    if pending:
        out = list(messages) if out is None else out
        out.extend(_interrupted(pending))
    return messages if out is None else out


def _interrupted(pending: dict[str, str]) -> list[Message]:
    return [ToolResultMessage(call_id, name, INTERRUPTED_RESULT) for call_id, name in pending.items()]
