"""The `turn/event` notification and the payload of every turn event type (docs/protocol.md
"The `turn/event` envelope", "Event types"): built by `kward.rpc.wire.events` and, for
the shapes a session record shares with the protocol (a tool call, a tool result),
`kward.sessions.codec`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, AN_ADDITION, OPEN, Doc, Entry, Length, Range, shape
from kward.rpc.shapes.envelopes import TurnEvent
from kward.rpc.shapes.sessions import CompactionEndPayload, CompactionStartPayload, SessionsDiffResult

# --- a failed turn's error ---------------------------------------------------------------


class _TurnErrorRequired(TypedDict):
    message: str
    code: Annotated[str, Doc("the error's class name")]
    fatal: Literal[False]
    reason: Annotated[str, AN_ADDITION, Doc("why, in one word (docs/protocol.md \"Reasons\")")]


class TurnError(_TurnErrorRequired, total=False):
    """Why a turn failed: the `error` event's payload, `error` of turnFinished and of the
    turn object."""

    data: Annotated[dict[str, Any], AN_ADDITION, OPEN, Doc("the error's extra fields, as in error responses")]


# --- tool calls --------------------------------------------------------------------------


class ToolCallFields(TypedDict):
    """The normalized fields clients show a tool call by."""

    toolCallId: Annotated[str, Doc("the model's id of the call")]
    toolName: Annotated[str, Doc("normalized: read, edit, write, bash, others as named")]
    args: Annotated[dict[str, Any], Doc("normalized arguments (camelCase keys); {} when not a JSON object")]


class RawToolCallFunction(TypedDict):
    name: str
    arguments: Annotated[str, Doc("the arguments as the model sent them: JSON text")]


class RawToolCall(TypedDict):
    """The model's call as sent (and as a session file stores it)."""

    id: str
    type: Literal["function"]
    function: RawToolCallFunction


class _LegacyToolRequired(TypedDict):
    name: Annotated[str, Doc("the model's tool name")]
    displayName: Annotated[str, Doc("the normalized tool name")]


class LegacyTool(_LegacyToolRequired, total=False):
    """Legacy metadata of a tool call, kept for older clients."""

    path: Annotated[str, Doc("the path argument, when it is a string")]
    command: Annotated[str, Doc("the command argument, when it is a string")]


class _ToolMetadataRequired(TypedDict):
    source: Annotated[Literal["builtin", "mcp"], Doc("builtin: kward's own tools; mcp: a tool of an MCP server")]
    displayName: Annotated[str, Doc("the title a client shows and groups the tool by, e.g. Read, Bash")]


@shape(stability=ADDITION)
class ToolMetadata(_ToolMetadataRequired, total=False):
    """A tool's metadata, as `tools/list` entries and tool events carry it."""

    serverName: Annotated[str, Doc("an MCP tool's server, as config mcp.servers names it")]
    remoteName: Annotated[str, Doc("an MCP tool's name at its server")]


class TurnEventToolCallPayload(ToolCallFields):
    rawToolCall: RawToolCall
    toolCall: RawToolCall
    tool: LegacyTool
    metadata: Annotated[ToolMetadata, AN_ADDITION]


class _ToolResultRecordRequired(TypedDict):
    content: str
    isError: Annotated[bool, Doc("the text starts with Error:, Declined: or Cancelled. (or is Unknown tool: ...)")]
    images: Annotated[list[Any], Doc("image parts {type: image, mimeType, data}: an MCP tool's images "
                                     "(kward's own tools return none)")]


class ToolResultRecord(_ToolResultRecordRequired, total=False):
    """A tool's result (`toolResult.result`; a session's tool_execution_end `result`)."""

    diff: Annotated[str, Doc("the unified diff of a write or edit")]
    changedFiles: Annotated[list[str], Doc("the paths a write or edit wrote, or the files a shell command changed")]
    changedFilesComplete: Annotated[Literal[False], AN_ADDITION,
                                    Doc("present (false) when changedFiles may miss files")]


class TurnEventToolResultPayload(TurnEventToolCallPayload):
    content: Annotated[str, Doc("the result text the model sees")]
    result: ToolResultRecord


class _ToolUpdateRequired(ToolCallFields):
    metadata: ToolMetadata
    stream: Literal["stdout", "stderr"]
    delta: Annotated[str, Doc("the stream's text since its previous update")]
    content: Annotated[str, Doc("the tail (at most 2 KiB) of the call's output so far, both streams")]


class TurnEventToolUpdatePayload(_ToolUpdateRequired, total=False):
    """Live output of a running tool call or plugin command (docs/protocol.md "Live tool
    output")."""

    omittedBytes: Annotated[int, Range(minimum=1), Doc("on the call's last update only: the output no delta carried")]
    progress: Annotated[float, Doc("a progress report's progress so far (an MCP tool's notifications/progress; "
                                   "its message is the delta)")]
    total: Annotated[float, Doc("a progress report's total, when the server knows it")]


class TurnEventApprovalRequestedPayload(ToolCallFields):
    tool: Annotated[str, Doc("the model's tool name")]
    requestId: Annotated[str, Doc("the id of the tool/requestApproval server request")]
    preview: Annotated[dict[str, Any], OPEN, Doc("what the call would do, as tool/requestApproval carries it")]


class TurnEventApprovalResolvedPayload(ToolCallFields):
    tool: Annotated[str, Doc("the model's tool name")]
    decision: Literal["approve", "approveForSession", "decline"]
    reason: str | None
    outcome: Literal["answered", "session", "readOnly", "unsupported", "timedOut", "canceled", "clientGone",
                     "invalidReply"]


# --- the model's messages ----------------------------------------------------------------


class _AssistantUsageRequired(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    total_tokens: int
    estimated: Annotated[bool, Doc("counted by kward (chars / 4), not reported by the provider")]


@shape(open=True)
class AssistantUsage(_AssistantUsageRequired, total=False):
    """A model call's usage (other keys a stored usage object had are kept)."""

    cost: Annotated[float, Doc("USD, when the provider reports it")]


class _AssistantRecordRequired(TypedDict):
    role: Literal["assistant"]
    content: Annotated[str | list[Any], Doc("a string, or content parts ({type: text|thinking|image|toolCall, ...})")]


@shape(open=True)
class AssistantRecord(_AssistantRecordRequired, total=False):
    """An assistant message as the session file stores it, plus provider-specific fields the
    next request replays (Codex reasoning_items, OpenRouter reasoning_details)."""

    reasoning_summary: str
    tool_calls: list[RawToolCall]
    toolCalls: Annotated[list[dict[str, Any]], Doc("flat {id, name, arguments} calls of other writers")]
    usage: AssistantUsage
    provider: str
    model: str
    interrupted: Annotated[Literal[True], Doc("the turn was cancelled or failed while it streamed")]
    errorMessage: Annotated[str, Doc("why an interrupted message was cut off")]


class TurnEventAssistantMessagePayload(TypedDict):
    message: AssistantRecord


class TurnEventDeltaPayload(TypedDict):
    """assistantDelta and reasoningDelta: text the model streams."""

    delta: str


class TurnEventModelRetryPayload(TypedDict):
    provider: str
    model: str
    attempt: Annotated[int, Range(minimum=2), Doc("the attempt about to be made")]
    maxAttempts: int
    delaySeconds: float
    error: Annotated[str, Doc("why the request failed, human readable")]


# --- the turn's course -------------------------------------------------------------------


class TurnEventTurnQueuedPayload(TypedDict):
    status: Literal["queued"]


class TurnEventTurnStartedPayload(TypedDict):
    status: Literal["running"]


class TurnEventTurnSteeredPayload(TypedDict):
    input: Annotated[str, Doc("the steered input, added to the conversation")]
    createdAt: str


class TurnEventAnswerPayload(TypedDict):
    content: Annotated[str, Doc("the turn's final text")]


class TurnEventTurnCancelRequestedPayload(TypedDict):
    pass


class _TurnFinishedRequired(TypedDict):
    status: Literal["completed", "failed", "canceled"]


class TurnEventTurnFinishedPayload(_TurnFinishedRequired, total=False):
    error: Annotated[TurnError, Doc("for a failed turn: the error event's payload")]


NOTIFICATIONS = {
    "turn/event": Entry(TurnEvent, None),
}

TURN_EVENTS = {
    "turnQueued": Entry(TurnEventTurnQueuedPayload),
    "turnSteered": Entry(TurnEventTurnSteeredPayload),
    "turnStarted": Entry(TurnEventTurnStartedPayload),
    "compactionStart": Entry(CompactionStartPayload, None, ADDITION),
    "compactionEnd": Entry(CompactionEndPayload, None, ADDITION),
    "reasoningDelta": Entry(TurnEventDeltaPayload),
    "assistantDelta": Entry(TurnEventDeltaPayload),
    "assistantMessage": Entry(TurnEventAssistantMessagePayload),
    "modelRetry": Entry(TurnEventModelRetryPayload),
    "toolCall": Entry(TurnEventToolCallPayload),
    "approvalRequested": Entry(TurnEventApprovalRequestedPayload, None, ADDITION),
    "approvalResolved": Entry(TurnEventApprovalResolvedPayload, None, ADDITION),
    "toolUpdate": Entry(TurnEventToolUpdatePayload, None, ADDITION),
    "toolResult": Entry(TurnEventToolResultPayload),
    "answer": Entry(TurnEventAnswerPayload),
    "turnCancelRequested": Entry(TurnEventTurnCancelRequestedPayload),
    "turnDiff": Entry(SessionsDiffResult, None, ADDITION),  # (the change summary sessions/diff answers)
    "error": Entry(TurnError),
    "turnFinished": Entry(TurnEventTurnFinishedPayload),
}
