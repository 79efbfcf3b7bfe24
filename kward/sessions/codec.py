"""The one converter between the typed core model (`kward.model`) and the JSONL records of
session files (the linear "version 1" format, `kward.sessions.format`).

`encode(message)` gives the `message` of a ``{type:"message"}`` record; `decode(raw)`
the typed message of one. The shapes kward writes (the original kward's version 1):

- user ``{role:"user", content:str|[{type:"text", text}|{type:"image", data, mimeType, alt?}], display_content?}``
- assistant ``{role:"assistant", content, reasoning_summary?, tool_calls?[{id, type:"function",
  function:{name, arguments}}], usage?, provider?, model?, interrupted?, errorMessage?, ...extras}``
  (extras: Codex ``reasoning_items``, OpenRouter ``reasoning_details``)
- tool ``{role:"tool", tool_call_id, name, content}``
- ``{role:"compactionSummary", summary, first_kept_entry_id, tokens_before, from_hook, details}``

`decode` also reads what other writers put there (the original kward, pi-style
transcripts, later format versions): ``toolResult`` results with ``toolCallId``,
``toolName`` and ``isError``/``is_error``; ``toolCalls`` with flat ``{id, name,
arguments}`` calls; ``reasoningSummary``, ``error_message``, ``firstKeptEntryId``,
``tokensBefore``; content parts ``input_text``/``output_text``, bare strings, images with
``mime_type``/``media_type``, ``path``, ``image_url`` or ``url``, ``thinking``/``reasoning``
parts and ``toolCall`` parts; ``system`` and ``developer`` messages and unknown roles.
Keys it does not interpret stay in `extras`, and a decoded message keeps its record
(unless `encode` would write exactly that record anyway: see `decode`): `encode` gives
that record back, so re-appending a loaded message (a clone, a fork) writes what was
read, byte for byte.

Also here: the ``tool_execution_end`` fields (`tool_execution_fields`), usage objects
(`usage_record`, `usage_from`) and tool results (`tool_result_record`), shapes the wire
converter reuses. Pure functions, any thread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    Message,
    OtherMessage,
    OtherPart,
    Part,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from kward.sessions.format import IMAGE_TYPES, TEXT_TYPES, THINKING_TYPES
from kward.toolcalls import normalize_args, normalize_tool_name, parse_arguments
from kward.values import EMPTY

_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
               "total_tokens")

_KNOWN_USER = frozenset({"role", "content", "display_content"})
_KNOWN_ASSISTANT = frozenset({"role", "content", "reasoning_summary", "reasoningSummary", "tool_calls", "toolCalls",
                              "usage", "provider", "model", "interrupted", "errorMessage", "error_message"})
_KNOWN_TOOL = frozenset({"role", "tool_call_id", "toolCallId", "name", "toolName", "tool_name", "content",
                         "isError", "is_error"})
_KNOWN_SUMMARY = frozenset({"role", "summary", "content", "first_kept_entry_id", "firstKeptEntryId",
                            "tokens_before", "tokensBefore", "from_hook", "details"})
_KNOWN_OTHER = frozenset({"role", "content"})
#: The keys, in order, of the tool records `decode` builds a message of without keeping
#: them (see `decode`), and the classes of such messages.
_PLAIN_TOOL = ("role", "tool_call_id", "name", "content")
_PLAIN_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)
#: One shared string per role instead of one per loaded message.
_ROLES = {r: r for r in ("system", "developer", "user", "assistant", "tool", "toolResult", "compactionSummary")}


# --- content -----------------------------------------------------------------------------

def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _image(part: dict[str, Any]) -> ImagePart:
    url = part.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if not (isinstance(url, str) and url):
        url = part.get("url") if isinstance(part.get("url"), str) and part["url"] else None
    mime = part.get("mimeType") or part.get("mime_type") or part.get("media_type")
    data = part.get("data")
    return ImagePart(data=data if isinstance(data, str) and data else None, mime_type=_str(mime) or None,
                     alt=_str(part.get("alt")) or None, path=_str(part.get("path")) or None, url=url)


def _part(part: object) -> Part:
    if isinstance(part, str):
        return TextPart(part)
    if not isinstance(part, dict):
        return OtherPart(part, None if part is None else str(part))
    kind = part.get("type")
    text = part.get("text")
    if kind in TEXT_TYPES and isinstance(text, str):
        return TextPart(text)
    if kind in IMAGE_TYPES:
        return _image(part)
    if kind in THINKING_TYPES:
        value = part.get("thinking", part.get("reasoning", text))
        if value is not None:
            return ThinkingPart(str(value))
    elif kind == "toolCall":
        return _tool_call(part.get("id"), part.get("name"), part.get("arguments"))
    return OtherPart(part, None if text is None else str(text))


def content_from(value: object) -> Content:
    """Record content -> typed: a string stays one; a list becomes a tuple of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict) and value[0].get("type") == "text" \
                and isinstance(value[0].get("text"), str):
            return (TextPart(value[0]["text"]),)
        return tuple(_part(p) for p in value)
    return () if value is None else str(value)


def _part_record(part: Part) -> object:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        out: dict[str, Any] = {"type": "image"}
        for key, value in (("data", part.data), ("mimeType", part.mime_type), ("alt", part.alt),
                           ("path", part.path), ("url", part.url)):
            if value is not None:
                out[key] = value
        return out
    if isinstance(part, ThinkingPart):
        return {"type": "thinking", "thinking": part.thinking}
    if isinstance(part, ToolCall):
        return {"type": "toolCall", "id": part.id, "name": part.name, "arguments": part.arguments}
    return part.value


def content_record(content: Content) -> str | list[object]:
    """Typed content -> record content (a string, or a list of part objects)."""
    return content if isinstance(content, str) else [_part_record(p) for p in content]


# --- usage and tool calls ----------------------------------------------------------------

#: A token count read from a file beyond this (or not finite) counts as 0.
MAX_COUNT = 1 << 63


def _count(value: object) -> int:
    """A token count from a record: a finite number within +-`MAX_COUNT` (cut to an int), else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    count = int(value)
    return count if -MAX_COUNT <= count <= MAX_COUNT else 0


def _cost(value: object) -> float | None:
    """A cost from a record: a number that is a finite float, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if math.isfinite(cost) else None


def usage_from(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None
    extras = {k: v for k, v in value.items() if k not in _USAGE_KEYS and k not in ("cost", "estimated")}
    return Usage(input_tokens=_count(value.get("input_tokens")), output_tokens=_count(value.get("output_tokens")),
                 cache_read_tokens=_count(value.get("cache_read_tokens")),
                 cache_write_tokens=_count(value.get("cache_write_tokens")),
                 reasoning_tokens=_count(value.get("reasoning_tokens")), total_tokens=_count(value.get("total_tokens")),
                 cost=_cost(value.get("cost")),
                 estimated=value.get("estimated") is True, extras=extras or EMPTY)


def usage_record(usage: Usage) -> dict[str, Any]:
    """A usage object as sessions (and telemetry, and the protocol) carry it."""
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "total_tokens": usage.total_tokens,
        "estimated": usage.estimated,
    }
    if usage.cost is not None:
        out["cost"] = usage.cost
    out.update(usage.extras)
    return out


def _tool_call(call_id: object, name: object, arguments: object) -> ToolCall:
    """A call as another writer stored it: its id and name are kept as read (a record may
    hold null or no id or name, which the transcript shows as such)."""
    # kward.model types ToolCall.id and .name as str, but a call read from a file may hold
    # any JSON value there; replacing it would change what a transcript shows and a clone writes.
    return ToolCall(call_id, name, arguments)  # type: ignore[arg-type]


def _call(raw: dict[str, Any]) -> ToolCall:
    function = raw.get("function")
    if isinstance(function, dict):
        return _tool_call(raw.get("id"), function.get("name"), function.get("arguments"))
    return _tool_call(raw.get("id"), raw.get("name"), raw.get("arguments"))


def tool_call_record(call: ToolCall) -> dict[str, Any]:
    """``{id, type:"function", function:{name, arguments}}``: the model's call as stored."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def tool_result_record(result: ToolResult, *, image_data: bool = True) -> dict[str, Any]:
    """``{content, isError, images, diff?, changedFiles?, changedFilesComplete?}`` (a
    tool_execution_end's `result`; also the protocol's `toolResult.result`);
    ``changedFilesComplete: false`` only when the changed files may be incomplete. The
    images are ``{type: "image", mimeType, data}`` parts; without `image_data` (the audit
    record: the tool result message holds them) ``{type, mimeType, alt}`` only."""
    images = [_part_record(p) if image_data else {"type": "image", "mimeType": p.mime_type, "alt": p.alt}
              for p in result.images]
    out: dict[str, Any] = {"content": result.content, "isError": result.is_error, "images": images}
    if result.diff is not None:
        out["diff"] = result.diff
    if result.changed_files:
        out["changedFiles"] = list(result.changed_files)
    if not result.changes_complete:
        out["changedFilesComplete"] = False
    return out


def call_fields(call: ToolCall) -> dict[str, Any]:
    """``{toolCallId, toolName, args}``: the normalized fields clients show a call by."""
    name = call.name if isinstance(call.name, str) else ""
    return {"toolCallId": call.id, "toolName": normalize_tool_name(name),
            "args": normalize_args(name, parse_arguments(call.arguments))}


def tool_execution_fields(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The fields of a ``tool_execution_end`` record (an audit record: nothing replays it)."""
    out = tool_result_record(result, image_data=False)
    return {**call_fields(call), "result": out, "isError": out["isError"]}


# --- messages ----------------------------------------------------------------------------

def _extras(raw: dict[str, Any], known: frozenset[str]) -> Mapping[str, Any]:
    if raw.keys() <= known:  # the common case, without building a dict
        return EMPTY
    return {k: v for k, v in raw.items() if k not in known}


def _calls(calls: object) -> tuple[ToolCall, ...]:
    return tuple(_call(c) for c in calls if isinstance(c, dict)) if isinstance(calls, list) else ()


def decode(raw: dict[str, Any]) -> Message:
    """The typed message of a record's `message` object (the module docstring lists the
    shapes read). Never raises for odd shapes: an unknown role is an OtherMessage.

    Hot path of every resume. A record of the commonest shapes, exactly what `encode`
    writes for its message (``{role:"user"|"assistant", content:str}``, ``{role:"tool",
    tool_call_id:str, name:str, content:str}``, keys in that order), is built directly and
    not kept as `record`: `encode` gives an equal record back (the same keys in the same
    order, the same strings), so a clone still writes it byte for byte."""
    size = len(raw)
    if size == 2:
        content = raw.get("content")
        if next(iter(raw)) == "role" and isinstance(content, str):
            role = raw["role"]
            if role == "user":
                return UserMessage(content)
            if role == "assistant":
                return AssistantMessage(content)
    elif size == 4 and tuple(raw) == _PLAIN_TOOL and raw["role"] == "tool":
        call_id, name, content = raw["tool_call_id"], raw["name"], raw["content"]
        if isinstance(call_id, str) and isinstance(name, str) and isinstance(content, str):
            return ToolResultMessage(call_id, name, content)
    role = raw.get("role")
    shared = _ROLES.get(role) if isinstance(role, str) else None
    if shared is not None and shared is not role:
        raw["role"] = shared  # see _ROLES
    if role == "user":
        display = raw.get("display_content")
        return UserMessage(content_from(raw.get("content")), None if display is None else content_from(display),
                           _extras(raw, _KNOWN_USER), raw)
    if role == "assistant":
        reasoning = raw.get("reasoning_summary", raw.get("reasoningSummary"))
        error = raw.get("errorMessage", raw.get("error_message"))
        usage = raw.get("usage")
        calls = raw.get("tool_calls")
        return AssistantMessage(
            content_from(raw.get("content")), reasoning if isinstance(reasoning, str) else None,
            () if calls is None else _calls(calls),
            None if usage is None else usage_from(usage), _str(raw.get("provider")), _str(raw.get("model")),
            raw.get("interrupted") is True, error if isinstance(error, str) and error else None,
            _extras(raw, _KNOWN_ASSISTANT), raw, _calls(raw.get("toolCalls")) if calls is None else ())
    if role == "tool" or role == "toolResult":
        name = raw.get("name")
        other_id = None if "tool_call_id" in raw else _str(raw.get("toolCallId"))
        other_name = None if name else _str(raw.get("toolName") or raw.get("tool_name"))
        flag = raw.get("isError", raw.get("is_error")) if "isError" in raw or "is_error" in raw else None
        return ToolResultMessage(_str(raw.get("tool_call_id")), _str(name), content_from(raw.get("content")),
                                 None if flag is None else bool(flag), _extras(raw, _KNOWN_TOOL), raw, other_id,
                                 other_name)
    if role == "compactionSummary":
        summary = raw.get("summary", raw.get("content"))
        first_kept = raw.get("first_kept_entry_id")
        if first_kept is None:
            first_kept = raw.get("firstKeptEntryId")
        from_hook = raw.get("from_hook")
        return CompactionSummary(
            "" if summary is None else summary if isinstance(summary, str) else _summary_text(summary),
            first_kept if isinstance(first_kept, str) and first_kept else None,
            raw.get("tokensBefore", raw.get("tokens_before")),
            from_hook if isinstance(from_hook, bool) else None, raw.get("details"), _extras(raw, _KNOWN_SUMMARY), raw)
    if role == "system" or role == "developer":
        return SystemMessage(content_from(raw.get("content")), role, _extras(raw, _KNOWN_OTHER), raw)
    return OtherMessage(role if isinstance(role, str) else "", content_from(raw.get("content")),
                        _extras(raw, _KNOWN_OTHER), raw)


def _summary_text(value: object) -> str:
    content = content_from(value)
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))


def encode(message: Message) -> dict[str, Any]:
    """The record object of `message`: the one it was decoded from, else the shape kward
    writes (module docstring). The result is shared: never change it."""
    if isinstance(message.record, dict):  # (a record is always a dict: `decode` keeps its `raw`)
        return message.record
    out: dict[str, Any]
    if isinstance(message, UserMessage):
        out = {"role": "user", "content": content_record(message.content)}
        if message.display is not None:
            out["display_content"] = content_record(message.display)
    elif isinstance(message, AssistantMessage):
        out = {"role": "assistant", "content": content_record(message.content)}
        if message.reasoning:
            out["reasoning_summary"] = message.reasoning
        if message.tool_calls:
            out["tool_calls"] = [tool_call_record(c) for c in message.tool_calls]
        elif message.other_calls:
            out["toolCalls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.other_calls]
        if message.usage is not None:
            out["usage"] = usage_record(message.usage)
        if message.provider is not None:
            out["provider"] = message.provider
        if message.model is not None:
            out["model"] = message.model
        if message.interrupted:
            out["interrupted"] = True
        if message.error:
            out["errorMessage"] = message.error
    elif isinstance(message, ToolResultMessage):
        out = {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.name,
               "content": content_record(message.content)}
        if message.is_error is not None:
            out["isError"] = message.is_error
        if message.other_call_id is not None and message.tool_call_id is None:
            del out["tool_call_id"]
            out["toolCallId"] = message.other_call_id
        if message.other_name is not None and not message.name:
            del out["name"]
            out["toolName"] = message.other_name
    elif isinstance(message, CompactionSummary):
        out = {"role": "compactionSummary", "summary": message.summary}
        for key, value in (("first_kept_entry_id", message.first_kept_entry_id),
                           ("tokens_before", message.tokens_before), ("from_hook", message.from_hook),
                           ("details", message.details)):
            if value is not None:
                out[key] = value
    else:  # SystemMessage, OtherMessage
        out = {"role": message.role, "content": content_record(message.content)}
    out.update(message.extras)
    return out


def stored_chars(message: Message) -> int:
    """Characters the message takes in its record: its content (a string's length, else
    its JSON's), its `tool_calls` JSON and its summary (the context estimate of
    runtime/stats, chars / 4)."""
    if message.record is None and isinstance(message, _PLAIN_TYPES) and isinstance(message.content, str) \
            and not message.extras and not (isinstance(message, AssistantMessage) and message.tool_calls):
        return len(message.content)  # what encode would write: the string, no calls, no summary
    raw = encode(message)
    content = raw.get("content")
    size = len(content) if isinstance(content, str) else len(json.dumps(content or ""))
    for call in raw.get("tool_calls") or []:
        size += len(json.dumps(call))
    summary = raw.get("summary")
    return size + (len(summary) if isinstance(summary, str) else 0)
