"""The normalized transcript of ``sessions/transcript`` (format ``tauren-transcript-v1``).

system messages are dropped; user -> ``{role:"user", content:[parts]}``; assistant ->
``{role:"assistant", content:[thinking..., text/image parts..., toolCall...]}`` with
``reasoning_summary`` and ``thinking``/``reasoning`` parts restored as
``{type:"thinking", thinking}`` blocks first; tool -> ``{role:"toolResult", toolCallId,
toolName, isError, content:[{type:"text", text}], details?{diff, changedFiles}}``;
compactionSummary -> ``{role:"compactionSummary", summary, tokensBefore?}``.

diff/changedFiles come from the matching ``tool_execution_end`` record when the file has
one (the file is streamed again for those records only: they are not kept in memory),
else they are derived from the result text as the tool events do.

Pure functions (plus one streaming file read): safe from any thread.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Iterable, Iterator

from kward.sessions.descriptors import out_of_descriptors, retrying
from kward.sessions.lines import LineScanner, too_deep
from kward.sessions.messages import role_of, tool_call_name, tool_call_raw_args, tool_calls_of
from kward.sessions.normalize import call_arguments, is_error_result, normalize_tool_name, result_details

log = logging.getLogger(__name__)

IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_TOOL_END_MARK = b'"tool_execution_end"'


def tool_details_from_file(path: str, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """``{toolCallId: {diff?, changedFiles?}}`` from the file's tool_execution_end records."""
    found: dict[str, dict[str, Any]] = {}
    if not wanted:
        return found
    try:
        with retrying(open, path, "rb") as f:
            for line in _all_lines(LineScanner(f.read)):
                if _TOOL_END_MARK not in line:
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # the reader reports bad lines; here they just add nothing
                if not isinstance(record, dict) or record.get("type") != "tool_execution_end" \
                        or too_deep(record, line):
                    continue
                call_id = record.get("toolCallId")
                result = record.get("result")
                if call_id not in wanted or not isinstance(result, dict):
                    continue
                details = {}
                if isinstance(result.get("diff"), str):
                    details["diff"] = result["diff"]
                if isinstance(result.get("changedFiles"), list):
                    details["changedFiles"] = result["changedFiles"]
                found[call_id] = details
    except OSError as exc:
        if out_of_descriptors(exc):
            raise
        log.warning("Cannot read tool details from %s: %s", path, exc)
    return found


def _all_lines(scanner: LineScanner) -> Iterator[bytes]:
    """Every line `scanner` yields, then its unterminated last line (bounded memory)."""
    for line, _start in scanner:
        yield line
    if scanner.tail:
        yield scanner.tail


def normalize_transcript(messages: Iterable[dict[str, Any]], tool_details: dict[str, dict[str, Any]] | None = None
                         ) -> list[dict[str, Any]]:
    """Normalize stored messages; `tool_details` as returned by `tool_details_from_file`."""
    details = tool_details or {}
    calls: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        role = role_of(message)
        if role == "user":
            out.append({"role": "user", "content": _content(message.get("content"))})
        elif role == "assistant":
            out.append(_assistant(message, calls))
        elif role in ("tool", "toolResult"):
            out.append(_tool_result(message, calls, details))
        elif role == "compactionSummary":
            summary = message.get("summary", message.get("content"))
            item: dict[str, Any] = {"role": "compactionSummary", "summary": "" if summary is None else str(summary)}
            tokens = message.get("tokensBefore", message.get("tokens_before"))
            if tokens is not None:
                item["tokensBefore"] = tokens
            out.append(item)
    return out


def wanted_tool_call_ids(messages: Iterable[dict[str, Any]]) -> set[str]:
    """Tool-call ids of the tool results among `messages` (what to look up in the file)."""
    ids = set()
    for message in messages:
        if role_of(message) in ("tool", "toolResult"):
            call_id = message.get("tool_call_id", message.get("toolCallId"))
            if isinstance(call_id, str):
                ids.add(call_id)
    return ids


def _assistant(message: dict[str, Any], calls: dict[str, dict[str, Any]]) -> dict[str, Any]:
    # an empty text (a message that only calls tools) is no block at all
    parts = [p for p in _content(message.get("content"), keep_thinking=True) if p.get("type") != "text" or p["text"]]
    thinking = [p for p in parts if p.get("type") == "thinking"]
    content = thinking + [p for p in parts if p.get("type") != "thinking"]
    summary = message.get("reasoning_summary", message.get("reasoningSummary"))
    if not thinking and isinstance(summary, str) and summary:
        content.insert(0, {"type": "thinking", "thinking": summary})
    for call in tool_calls_of(message):
        raw_name = tool_call_name(call)
        item = {"type": "toolCall", "id": call.get("id"), "name": _name(raw_name),
                "arguments": call_arguments(raw_name, tool_call_raw_args(call))}
        item = {k: v for k, v in item.items() if v is not None}
        if isinstance(call.get("id"), str):
            calls[call["id"]] = {"name": raw_name, "args": tool_call_raw_args(call)}
        content.append(item)
    result: dict[str, Any] = {"role": "assistant", "content": content}
    error = message.get("errorMessage", message.get("error_message"))
    if isinstance(error, str) and error:
        result["errorMessage"] = error
    if message.get("interrupted") is True:  # a cancelled or failed model call's partial answer
        result["interrupted"] = True
    return result


def _tool_result(message: dict[str, Any], calls: dict[str, dict[str, Any]],
                 details: dict[str, dict[str, Any]]) -> dict[str, Any]:
    call_id = message.get("tool_call_id", message.get("toolCallId"))
    call = calls.get(call_id) if isinstance(call_id, str) else None
    raw_name = message.get("name") or message.get("toolName") or message.get("tool_name") or (call or {}).get("name")
    content = _content(message.get("content"))
    text = "\n".join(p["text"] for p in content if isinstance(p.get("text"), str))
    if "isError" in message or "is_error" in message:
        error = bool(message.get("isError", message.get("is_error")))
    else:
        error = is_error_result(text)
    result: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id,
                              "toolName": _name(raw_name),
                              "isError": error, "content": content}
    result = {k: v for k, v in result.items() if v is not None}
    if isinstance(call_id, str) and call_id in details:
        extra = dict(details[call_id])
    elif error:
        extra = {}
    else:
        extra = result_details(raw_name, (call or {}).get("args"), text)
    if extra:
        result["details"] = extra
    return result


def _content(content: Any, keep_thinking: bool = False) -> list[dict[str, Any]]:
    if content is None:
        return []
    if not isinstance(content, list):
        return [{"type": "text", "text": content if isinstance(content, str) else str(content)}]
    parts = []
    for part in content:
        if not isinstance(part, dict):
            parts.append({"type": "text", "text": str(part)})
            continue
        kind = part.get("type")
        if kind == "image":
            image = _image(part)
            if image:
                parts.append(image)
            continue
        if kind in ("thinking", "reasoning") and keep_thinking:
            thinking = part.get("thinking", part.get("reasoning", part.get("text")))
            if thinking is not None:
                parts.append({"type": "thinking", "thinking": str(thinking)})
            continue
        if kind == "toolCall":
            raw_name = part.get("name")
            parts.append({k: v for k, v in {
                "type": "toolCall", "id": part.get("id"), "name": _name(raw_name),
                "arguments": call_arguments(raw_name, part.get("arguments")),
            }.items() if v is not None})
            continue
        text = part.get("text")
        if text is not None:
            parts.append({"type": "text", "text": str(text)})
    return parts


def _image(part: dict[str, Any]) -> dict[str, Any] | None:
    mime = part.get("mimeType") or part.get("mime_type") or part.get("media_type") or ""
    mime = str(mime).lower().replace("image/jpg", "image/jpeg")
    data = part.get("data")
    if mime not in IMAGE_MIME_TYPES or not data:
        return None
    image = {"type": "image", "data": data, "mimeType": mime}
    alt = part.get("alt") or (str(part["path"]).rsplit("/", 1)[-1] if part.get("path") else None)
    if alt:
        image["alt"] = alt
    return image


def _name(raw_name: Any) -> Any:
    return normalize_tool_name(raw_name) if isinstance(raw_name, str) else raw_name
