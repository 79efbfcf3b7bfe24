"""sessions/transcript: the session payload and the live conversation, normalized (format
`tauren-transcript-v1`, docs/protocol.md "sessions/transcript"; built by
`kward.rpc.wire.transcript`). System messages are left out; each other message is one of
`TranscriptUserMessage`, `TranscriptAssistantMessage`, `TranscriptToolResultMessage`,
`TranscriptCompactionSummary` (told apart by `role`), its content parts by `type`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict, Union

from kward.rpc.shapes.base import AN_ADDITION, OPEN, ORIGINAL, Doc, Entry
from kward.rpc.shapes.sessions import Session, SessionIdParams

# --- content parts ---------------------------------------------------------------------------


class TranscriptTextPart(TypedDict):
    type: Literal["text"]
    text: str


class _TranscriptImagePartRequired(TypedDict):
    type: Literal["image"]
    data: Annotated[str, Doc("raw base64")]
    mimeType: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]


class TranscriptImagePart(_TranscriptImagePartRequired, total=False):
    alt: Annotated[str, Doc("the image's name (its file name when it has no other)")]


class TranscriptThinkingPart(TypedDict):
    """An assistant's reasoning (first in its content)."""

    type: Literal["thinking"]
    thinking: str


class _TranscriptToolCallPartRequired(TypedDict):
    type: Literal["toolCall"]
    arguments: Annotated[dict[str, Any], OPEN, Doc("the call's arguments, normalized as in tool events")]


class TranscriptToolCallPart(_TranscriptToolCallPartRequired, total=False):
    """A tool call of the model (its id and name absent when the record has none)."""

    id: str
    name: Annotated[str, Doc("the normalized tool name (read, edit, write, bash, ...)")]


#: The parts of a user message and a tool result (an assistant's add thinking).
TranscriptPart = Union[TranscriptTextPart, TranscriptImagePart, TranscriptToolCallPart]

# --- messages --------------------------------------------------------------------------------


class TranscriptUserMessage(TypedDict):
    """What the user typed (for a prompt template or skill command, not the expansion)."""

    role: Literal["user"]
    content: list[TranscriptPart]


class _TranscriptAssistantMessageRequired(TypedDict):
    role: Literal["assistant"]
    content: Annotated[list[Union[TranscriptThinkingPart, TranscriptTextPart, TranscriptImagePart,
                                  TranscriptToolCallPart]],
                       Doc("reasoning first, then text and image parts, then tool calls")]


class TranscriptAssistantMessage(_TranscriptAssistantMessageRequired, total=False):
    errorMessage: Annotated[str, AN_ADDITION, Doc("why the model call failed")]
    interrupted: Annotated[Literal[True], AN_ADDITION, Doc("a cancelled or failed model call's partial answer")]


class TranscriptToolResultDetails(TypedDict, total=False):
    diff: Annotated[str, Doc("the unified diff of a write or edit")]
    changedFiles: Annotated[list[str], Doc("the files a write, edit or shell command changed")]


class _TranscriptToolResultMessageRequired(TypedDict):
    role: Literal["toolResult"]
    isError: Annotated[bool, Doc("what the live toolResult event reported")]
    content: list[TranscriptPart]


class TranscriptToolResultMessage(_TranscriptToolResultMessageRequired, total=False):
    toolCallId: Annotated[str, Doc("absent when the record names no call")]
    toolName: Annotated[str, Doc("the normalized tool name; absent when unknown")]
    details: TranscriptToolResultDetails


class _TranscriptCompactionSummaryRequired(TypedDict):
    role: Literal["compactionSummary"]
    summary: str


class TranscriptCompactionSummary(_TranscriptCompactionSummaryRequired, total=False):
    tokensBefore: Annotated[int, Doc("the estimated context before the compaction")]


class SessionsTranscriptResult(TypedDict):
    session: Session
    messages: list[Union[TranscriptUserMessage, TranscriptAssistantMessage, TranscriptToolResultMessage,
                         TranscriptCompactionSummary]]


METHODS = {
    "sessions/transcript": Entry(SessionIdParams, SessionsTranscriptResult, ORIGINAL),
}
