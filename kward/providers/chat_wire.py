"""OpenAI-style chat completions wire format (OpenRouter and compatible servers).

`build_messages` converts the typed conversation (`kward.model`); `ChatAssembler` assembles a streamed
answer from `chat.completion.chunk` events (OpenAI's streaming format, which OpenRouter
speaks too): text and reasoning deltas, tool-call fragments joined by `index`, the usage
chunk (with `cost` on OpenRouter), mid-stream error chunks, and `[DONE]`.

Tool calls without a stored result (kward was stopped between the two) get the result
`wire_common.INTERRUPTED_RESULT`, so the request stays valid (`wire_common.with_interrupted_results`).
An interrupted answer (`interrupted: true`: what a cancelled or failed call had streamed)
goes out as ordinary assistant text; its marker, error and reasoning summary are not sent.

Reasoning continuity: OpenRouter's `reasoning_details` are merged per item and returned
in `ModelResponse.message_extras["reasoning_details"]`; kept in the assistant message's
`extras`, they are echoed back unmodified on the next request to the same model.

Pure functions plus a per-response assembler owned by the request's thread.
"""

from __future__ import annotations

import json
from typing import Any

from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from kward.providers import wire_common
from kward.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    StreamSink,
    ToolCall,
    Usage,
)
from kward.providers.retry import SERVER, classify
from kward.providers.sse import SSEEvent
from kward.providers.streaming import Assembler
from kward.providers.wire_common import arguments_json, image_url


def _user_content(content: Content) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text:
                parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = image_url(part)
            if url:
                parts.append({"type": "image_url", "image_url": {"url": url}})
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def build_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """System prompt first, then the conversation in chat completions form."""
    system = [request.instructions] if request.instructions else []
    out: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []  # of the tool results just added (a tool message holds text only)
    for msg in wire_common.with_interrupted_results(request.messages):
        if images and not isinstance(msg, ToolResultMessage):
            out.append(_tool_images(images))
            images = []
        if isinstance(msg, SystemMessage):
            text = content_text(msg.content)
            if text:
                system.append(text)
        elif isinstance(msg, UserMessage):
            out.append({"role": "user", "content": _user_content(msg.content)})
        elif isinstance(msg, AssistantMessage):
            text = content_text(msg.content)
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            calls = [{"id": c.id or "", "type": "function",
                      "function": {"name": c.name or "", "arguments": arguments_json(c.arguments)}}
                     for c in msg.tool_calls]
            if calls:
                entry["tool_calls"] = calls
            details = msg.extras.get("reasoning_details")
            if details and msg.model in (None, request.model):
                entry["reasoning_details"] = details
            if text or calls:
                out.append(entry)
        elif isinstance(msg, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": content_text(msg.content)})
            if not isinstance(msg.content, str):
                images += [{"type": "image_url", "image_url": {"url": url}} for part in msg.content
                           if isinstance(part, ImagePart) and (url := image_url(part))]
        elif isinstance(msg, CompactionSummary):
            if msg.summary:
                out.append({"role": "assistant", "content": msg.summary})
    if images:
        out.append(_tool_images(images))
    if system:
        out.insert(0, {"role": "system", "content": "\n\n".join(system)})
    return out


def _tool_images(images: list[dict[str, Any]]) -> dict[str, Any]:
    """The images of the tool results before it, as a user message (chat completions
    take text only in a tool message)."""
    return {"role": "user", "content": [{"type": "text", "text": "[the images the tool calls above returned]"},
                                        *images]}


def build_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools in the nested chat form `{type:"function", function:{name, description, parameters}}`."""
    return [{"type": "function", "function": wire_common.tool_fields(tool)} for tool in tools]


def history_has_tool_calls(request: ModelRequest) -> bool:
    return any(isinstance(m, AssistantMessage) and m.tool_calls for m in request.messages)


def parse_usage(raw: object) -> Usage | None:
    """Chat usage -> Usage. prompt includes cached tokens; completion includes reasoning."""
    return wire_common.parse_usage(raw, input_key="prompt_tokens", output_key="completion_tokens",
                            input_details="prompt_tokens_details", output_details="completion_tokens_details")


def error_detail(error: object) -> tuple[str, str]:
    """(code, message) of an OpenAI/OpenRouter error object, with upstream detail appended."""
    if not isinstance(error, dict):
        return "", str(error or "")
    code = error.get("code") if error.get("code") is not None else error.get("type")
    message = str(error.get("message") or "")
    meta = error.get("metadata")
    if isinstance(meta, dict):
        raw = meta.get("raw")
        if raw:
            message += f" ({meta.get('provider_name') or 'upstream'}: {str(raw)[:300]})"
    return ("" if code is None else str(code)), message


class ChatAssembler(Assembler):
    """Assembles one streamed chat completion; owned by the request's thread."""

    def __init__(self, provider: str, model: str, sink: StreamSink, auth_hint: str = ""):
        super().__init__(provider=provider, model=model, sink=sink)
        self.auth_hint = auth_hint
        self.finish_reason: str | None = None
        self._calls: dict[int, dict[str, Any]] = {}
        self._details: list[dict[str, Any]] = []

    def on_event(self, event: SSEEvent) -> bool:
        if event.data == "[DONE]":
            return True
        data = wire_common.event_object(event.data, self.provider)
        if data is None:
            return False
        if data.get("error") is not None or data.get("object") == "error":
            code, message = error_detail(data.get("error") or data)
            status = int(code) if code.isdigit() else None
            raise classify(self.provider, status=status, code="" if status else code,
                           detail=message or "the stream reported an error", auth_hint=self.auth_hint,
                           fallback=SERVER)
        if data.get("usage"):
            self.usage = parse_usage(data["usage"])
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            self.emit_reasoning(delta.get("reasoning_content") or delta.get("reasoning")
                                or delta.get("reasoning_text") or "")
            if delta.get("reasoning_details"):
                self._merge_details(delta["reasoning_details"])
            self.emit_text(delta.get("content") or "")
            for frag in delta.get("tool_calls") or []:
                self._tool_fragment(frag)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return False

    def _tool_fragment(self, frag: dict[str, Any]) -> None:
        index = frag.get("index")
        if not isinstance(index, int):  # a few upstreams omit it: match by id, else 0
            index = next((i for i, c in self._calls.items() if frag.get("id") and c["id"] == frag.get("id")),
                         len(self._calls) if frag.get("id") and self._calls else 0)
        slot = self._calls.setdefault(index, {"id": "", "name": "", "args": []})
        fn = frag.get("function") or {}
        if frag.get("id"):
            slot["id"] = frag["id"]
        if fn.get("name"):
            slot["name"] = fn["name"]
        if fn.get("arguments"):
            slot["args"].append(fn["arguments"] if isinstance(fn["arguments"], str) else json.dumps(fn["arguments"]))

    def _merge_details(self, items: list[object]) -> None:
        for item in items:
            if not isinstance(item, dict):
                continue
            same = next((d for d in self._details if d.get("type") == item.get("type")
                         and d.get("index", 0) == item.get("index", 0) and item.get("index") is not None), None)
            if same is None:
                self._details.append(dict(item))
                continue
            for key in ("text", "summary", "data"):
                if isinstance(item.get(key), str):
                    same[key] = (same.get(key) or "") + item[key]
            for key, value in item.items():
                if key not in ("text", "summary", "data") and value is not None:
                    same[key] = value

    def end_of_stream(self) -> None:
        if self.finish_reason == "error":
            raise ProviderError(f"{self.provider} ended the answer with an error. Try again.",
                                provider=self.provider, kind="server", retryable=True,
                                data={"provider": self.provider, "kind": "server"})
        if not self.done and self.finish_reason is None:
            super().end_of_stream()

    def finish(self) -> ModelResponse:
        for index in sorted(self._calls):
            slot = self._calls[index]
            self.tool_calls.append(ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"],
                                            arguments="".join(slot["args"]) or "{}"))
        if self._details:
            self.extras["reasoning_details"] = self._details
        return super().finish()
