"""Codex (ChatGPT backend, Responses API) wire format: request body and stream events.

`build_body` turns a `ModelRequest` (typed messages, `kward.model`) into the JSON body of
`POST {base}/responses` (the ChatGPT backend's Responses API: body, input items, tools);
`CodexAssembler` turns the SSE events of one response into sink deltas and a
`ModelResponse`.

Tool calls without a stored result (kward was stopped between the two) get the result
`wire_common.INTERRUPTED_RESULT`, so the request stays valid (`wire_common.with_interrupted_results`).
An interrupted answer (`interrupted: true`: what a cancelled or failed call had streamed)
goes out as ordinary assistant text; its marker, error and reasoning summary are not sent.

Replay of reasoning: the assembler returns the completed reasoning items (with
`encrypted_content`, without `id`) in `ModelResponse.message_extras["reasoning_items"]`;
the agent keeps them in the assistant message's `extras`, and they are sent back before
that message's text and tool calls, but only to the model that produced them.

Pure functions plus a per-response assembler owned by the request's thread.
"""

from __future__ import annotations

import re
from typing import Any

from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from kward.providers import wire_common
from kward.providers.base import (
    ModelRequest,
    ProviderError,
    StreamSink,
    ToolCall,
    Usage,
)
from kward.providers.retry import SERVER, classify, retry_hint_from_text
from kward.providers.sse import SSEEvent
from kward.providers.streaming import Assembler
from kward.providers.wire_common import arguments_json, image_url, reasoning_enabled

DEFAULT_INSTRUCTIONS = "You are a helpful assistant."
_CALL_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")


def normalize_call_id(call_id: str) -> str:
    """Call ids the backend accepts: [A-Za-z0-9_-], at most 64 chars, no trailing '_'."""
    out = _CALL_ID_BAD.sub("_", str(call_id))[:64].rstrip("_")
    return out or "call"


def _parts(content: Content, text_type: str) -> list[dict[str, Any]]:
    """Message content (a string or parts) as Responses content parts."""
    if isinstance(content, str):
        return [{"type": text_type, "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": text_type, "text": part.text})
        elif isinstance(part, ImagePart) and text_type == "input_text":
            url = image_url(part)
            if url:
                out.append({"type": "input_image", "image_url": url})
    return out


def build_input(messages: list[Message], model: str) -> tuple[list[str], list[dict[str, Any]]]:
    """(system texts to add to the instructions, Responses input items)."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for msg in wire_common.with_interrupted_results(messages):
        if isinstance(msg, SystemMessage):
            text = content_text(msg.content)
            if text:
                system.append(text)
        elif isinstance(msg, UserMessage):
            parts = _parts(msg.content, "input_text")
            if parts:
                items.append({"type": "message", "role": "user", "content": parts})
        elif isinstance(msg, AssistantMessage):
            if msg.model in (None, model):
                for item in msg.extras.get("reasoning_items") or []:
                    if isinstance(item, dict) and item.get("type") == "reasoning":
                        items.append({k: v for k, v in item.items() if k != "id"})
            parts = _parts(msg.content, "output_text")
            if parts:
                items.append({"type": "message", "role": "assistant", "content": parts})
            for call in msg.tool_calls:
                items.append({"type": "function_call", "call_id": normalize_call_id(call.id or ""),
                              "name": call.name or "", "arguments": arguments_json(call.arguments)})
        elif isinstance(msg, ToolResultMessage):
            content = msg.content
            output: Any = content if isinstance(content, str) else _parts(content, "input_text")
            if isinstance(output, list) and all(p["type"] == "input_text" for p in output):
                output = "".join(p["text"] for p in output)
            items.append({"type": "function_call_output",
                          "call_id": normalize_call_id(msg.tool_call_id or ""), "output": output})
        elif isinstance(msg, CompactionSummary):
            if msg.summary:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": msg.summary}]})
    return system, items


def build_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-style `{type, function:{name, description, parameters}}` -> flat Responses tools."""
    return [{"type": "function", **wire_common.tool_fields(tool), "strict": False} for tool in tools]


def build_body(request: ModelRequest, cache_key: str) -> dict[str, Any]:
    """The JSON body of POST {base}/responses for `request`."""
    system, items = build_input(request.messages, request.model)
    instructions = "\n\n".join(t for t in [request.instructions, *system] if t) or DEFAULT_INSTRUCTIONS
    body: dict[str, Any] = {
        "model": request.model,
        "instructions": instructions,
        "input": items,
        "tools": build_tools(request.tools),
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "store": False,
        "stream": True,
        "include": [],
        "prompt_cache_key": cache_key,
    }
    if reasoning_enabled(request.reasoning_effort):
        body["reasoning"] = {"effort": str(request.reasoning_effort).lower(), "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    return body


def parse_usage(raw: object) -> Usage | None:
    """Responses usage -> Usage. input includes cached tokens; output includes reasoning."""
    return wire_common.parse_usage(raw, input_key="input_tokens", output_key="output_tokens",
                            input_details="input_tokens_details", output_details="output_tokens_details")


class CodexAssembler(Assembler):
    """Routes Responses events by `data.type`; owned by the request's thread."""

    def __init__(self, provider: str, model: str, sink: StreamSink, auth_hint: str = ""):
        super().__init__(provider=provider, model=model, sink=sink)
        self.auth_hint = auth_hint
        # Messages whose text was streamed as deltas (by item id and by output index), and
        # whether a delta named neither: then no completed message is delivered again.
        self._streamed_ids: set[str] = set()
        self._streamed_indexes: set[int] = set()
        self._streamed_unkeyed = False
        self._reasoning_key: tuple[object, ...] | None = None
        self._reasoning_items: list[dict[str, Any]] = []

    def on_event(self, event: SSEEvent) -> bool:
        data = wire_common.event_object(event.data, self.provider)
        if data is None:
            return False
        kind = data.get("type") or event.event
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self._note_streamed(data)
            self.emit_text(data.get("delta") or "")
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            key = (data.get("item_id"), kind, data.get("summary_index", data.get("content_index")))
            if self._reasoning_key is not None and key != self._reasoning_key and self.reasoning:
                self.emit_reasoning("\n\n")
            self._reasoning_key = key
            self.emit_reasoning(data.get("delta") or "")
        elif kind == "response.output_item.done":
            self._item_done(data.get("item") or {}, data.get("output_index"))
        elif kind in ("response.completed", "response.done"):
            response = data.get("response") or {}
            self.usage = parse_usage(response.get("usage"))
            if self._reasoning_items:
                self.extras["reasoning_items"] = list(self._reasoning_items)
            return True
        elif kind == "response.incomplete":
            response = data.get("response") or {}
            self.usage = parse_usage(response.get("usage"))
            why = (response.get("incomplete_details") or {}).get("reason") or "unknown reason"
            raise ProviderError(f"{self.provider} stopped the response early ({why}).",
                                provider=self.provider, kind="bad_request",
                                data={"provider": self.provider, "kind": "bad_request", "incompleteReason": str(why)})
        elif kind == "response.failed":
            error = (data.get("response") or {}).get("error") or {}
            raise self._stream_error(error.get("code") or error.get("type"), error.get("message"))
        elif kind == "error":
            raise self._stream_error(data.get("code") or data.get("type"), data.get("message"))
        return False

    def _note_streamed(self, data: dict[str, Any]) -> None:
        item_id, index = data.get("item_id"), data.get("output_index")
        if isinstance(item_id, str) and item_id:
            self._streamed_ids.add(item_id)
        if isinstance(index, int):
            self._streamed_indexes.add(index)
        if not (isinstance(item_id, str) and item_id) and not isinstance(index, int):
            self._streamed_unkeyed = True

    def _was_streamed(self, item: dict[str, Any], index: object) -> bool:
        return (self._streamed_unkeyed or item.get("id") in self._streamed_ids
                or (isinstance(index, int) and index in self._streamed_indexes))

    def _item_done(self, item: dict[str, Any], index: object) -> None:
        kind = item.get("type")
        if kind == "function_call":
            self.tool_calls.append(ToolCall(id=str(item.get("call_id") or item.get("id") or ""),
                                            name=str(item.get("name") or ""),
                                            arguments=arguments_json(item.get("arguments"))))
        elif kind == "custom_tool_call":
            self.tool_calls.append(ToolCall(id=str(item.get("call_id") or item.get("id") or ""),
                                            name=str(item.get("name") or ""),
                                            arguments=arguments_json(item.get("input"))))
        elif kind == "reasoning":
            self._reasoning_items.append({k: v for k, v in item.items() if k not in ("id", "status")})
        elif kind == "message" and not self._was_streamed(item, index):
            # Nothing was streamed for this message: deliver its full text now.
            self.emit_text("".join(p["text"] for p in item.get("content") or [] if isinstance(p, dict)
                                   and p.get("type") == "output_text" and isinstance(p.get("text"), str)))

    def _stream_error(self, code: object, message: object) -> ProviderError:
        text = str(message or "the response failed")
        return classify(self.provider, status=None, code=str(code or ""), detail=text,
                        retry_after=retry_hint_from_text(text), auth_hint=self.auth_hint, fallback=SERVER)
