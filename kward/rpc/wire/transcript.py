"""The normalized transcript of `sessions/transcript` (Tauren's `tauren-transcript-v1`):
system messages dropped; user -> ``{role:"user", content:[parts]}`` (what the user typed:
the `display_content` of an expanded prompt template or skill command); assistant ->
``{role:"assistant", content:[thinking..., text/image parts..., toolCall...]}`` (the
reasoning summary as a first ``thinking`` block when the content has none),
``errorMessage?``, ``interrupted?``; tool results -> ``{role:"toolResult", toolCallId,
toolName, isError, content:[{type:"text", text}], details?{diff, changedFiles}}``
(details from the file's tool_execution_end record, else derived from the text);
compaction summaries -> ``{role:"compactionSummary", summary, tokensBefore?}``. Pure
functions, any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union, cast

from kward.limits import IMAGE_MIME_TYPES
from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    Message,
    OtherPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    is_error_text,
)
from kward.rpc.wire.sessions import session
from kward.rpc.wire.shape import present
from kward.toolcalls import (
    extract_diff,
    normalize_args,
    normalize_tool_name,
    parse_arguments,
)

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.transcript import (
        SessionsTranscriptResult,
        TranscriptAssistantMessage,
        TranscriptCompactionSummary,
        TranscriptImagePart,
        TranscriptPart,
        TranscriptThinkingPart,
        TranscriptToolCallPart,
        TranscriptToolResultDetails,
        TranscriptToolResultMessage,
        TranscriptUserMessage,
    )
    from kward.sessions.transcript import ToolDetails, Transcript

    #: A content part of any message (an assistant's may be thinking too).
    AnyPart = Union[TranscriptPart, TranscriptThinkingPart]
    TranscriptMessage = Union[TranscriptUserMessage, TranscriptAssistantMessage, TranscriptToolResultMessage,
                              TranscriptCompactionSummary]


def _name(raw_name: Any) -> Any:
    return normalize_tool_name(raw_name) if isinstance(raw_name, str) else raw_name


def call_arguments(raw_name: Any, raw_args: Any) -> dict[str, Any]:
    """Client-facing arguments of a stored tool call (JSON text or an object)."""
    return normalize_args(raw_name if isinstance(raw_name, str) else "", parse_arguments(raw_args))


def result_details(raw_name: Any, raw_args: Any, text: str) -> TranscriptToolResultDetails:
    """``{diff?, changedFiles?}`` of a successful edit/write result, derived from its text
    and the call's ``path`` (for results that have no tool_execution_end record)."""
    if is_error_text(text) or _name(raw_name if isinstance(raw_name, str) else "") not in ("edit", "write"):
        return {}
    details: TranscriptToolResultDetails = {}
    diff = extract_diff(text)
    if diff is not None:
        details["diff"] = diff
    path = parse_arguments(raw_args).get("path")
    if isinstance(path, str) and path:
        details["changedFiles"] = [path]
    return details


def _image(part: ImagePart) -> TranscriptImagePart | None:
    mime = str(part.mime_type or "").lower().replace("image/jpg", "image/jpeg")
    if mime not in IMAGE_MIME_TYPES or not part.data:
        return None
    # IMAGE_MIME_TYPES are the four the shape's mimeType names
    image = cast("TranscriptImagePart", {"type": "image", "data": part.data, "mimeType": mime})
    alt = part.alt or (part.path.rsplit("/", 1)[-1] if part.path else None)
    if alt:
        image["alt"] = alt
    return image


def _call_part(call: ToolCall) -> TranscriptToolCallPart:
    """A tool call as its content part (its id and name left out when the record has none)."""
    return cast("TranscriptToolCallPart", present({"type": "toolCall", "id": call.id, "name": _name(call.name),
                                                   "arguments": call_arguments(call.name, call.arguments)}))


def _content(content: Content, keep_thinking: bool = False) -> list[AnyPart]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[AnyPart] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            image = _image(part)
            if image:
                parts.append(image)
        elif isinstance(part, ThinkingPart):
            if keep_thinking:
                parts.append({"type": "thinking", "thinking": part.thinking})
        elif isinstance(part, ToolCall):
            parts.append(_call_part(part))
        elif isinstance(part, OtherPart) and part.text is not None:
            parts.append({"type": "text", "text": part.text})
    return parts


def _assistant(message: AssistantMessage, calls: dict[str, ToolCall]) -> TranscriptAssistantMessage:
    # an empty text (a message that only calls tools) is no block at all
    parts = [p for p in _content(message.content, keep_thinking=True) if p["type"] != "text" or p.get("text")]
    thinking = [p for p in parts if p["type"] == "thinking"]
    content = thinking + [p for p in parts if p["type"] != "thinking"]
    if not thinking and message.reasoning:
        content.insert(0, {"type": "thinking", "thinking": message.reasoning})
    for call in message.shown_calls():
        content.append(_call_part(call))
        if isinstance(call.id, str):
            calls[call.id] = call
    out: TranscriptAssistantMessage = {"role": "assistant", "content": content}
    if message.error:
        out["errorMessage"] = message.error
    if message.interrupted:  # a cancelled or failed model call's partial answer
        out["interrupted"] = True
    return out


def _tool_result(message: ToolResultMessage, calls: dict[str, ToolCall],
                 details: dict[str, ToolDetails]) -> TranscriptToolResultMessage:
    call_id = message.shown_call_id()
    call = calls.get(call_id) if call_id is not None else None
    raw_name = message.shown_name() or (call.name if call is not None else None)
    content = cast("list[TranscriptPart]", _content(message.content))  # no thinking: keep_thinking is off
    text = "\n".join(p["text"] for p in content if p["type"] == "text")
    failed = message.is_error if message.is_error is not None else is_error_text(text)
    out = cast("TranscriptToolResultMessage", present({"role": "toolResult", "toolCallId": call_id,
                                                       "toolName": _name(raw_name), "isError": failed,
                                                       "content": content}))
    extra: TranscriptToolResultDetails
    if call_id is not None and call_id in details:
        found = details[call_id]
        extra = cast("TranscriptToolResultDetails", present({"diff": found.diff, "changedFiles": found.changed_files}))
    elif failed:
        extra = {}
    else:
        extra = result_details(raw_name, call.arguments if call is not None else None, text)
    if extra:
        out["details"] = extra
    return out


def transcript_messages(messages: list[Message],
                        details: dict[str, ToolDetails] | None = None) -> list[TranscriptMessage]:
    """The normalized messages (module docstring); `details` maps a tool call id to the
    `kward.sessions.transcript.ToolDetails` of its tool_execution_end record."""
    found = details or {}
    calls: dict[str, ToolCall] = {}
    out: list[TranscriptMessage] = []
    for message in messages:
        if isinstance(message, UserMessage):
            shown = message.display if message.display is not None else message.content  # what was typed
            out.append({"role": "user", "content": cast("list[TranscriptPart]", _content(shown))})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message, calls))
        elif isinstance(message, ToolResultMessage):
            out.append(_tool_result(message, calls, found))
        elif isinstance(message, CompactionSummary):
            item: TranscriptCompactionSummary = {"role": "compactionSummary", "summary": message.summary}
            if message.tokens_before is not None:
                item["tokensBefore"] = cast(int, message.tokens_before)  # as the record holds it
            out.append(item)
    return out


def transcript(t: Transcript) -> SessionsTranscriptResult:
    """`sessions/transcript`: ``{session, messages}`` of a `kward.sessions.transcript.Transcript`."""
    return {"session": session(t.session), "messages": transcript_messages(t.messages, t.tool_details)}


