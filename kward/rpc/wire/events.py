"""Turn events and session events: `turn_event` (the `turn/event` params and a
`turns/events` item), `event_payload` (a payload by type; plugin observers see the same,
`kward.resources.observers`), the turn object (`turn`), a failed turn's `error`, the
`session/event` params (`session_event`; a compaction's payload, `compaction_payload`, is
also that of the compactionStart / compactionEnd turn events).

Tool calls and results go out in the shapes UI clients read: the normalized `toolCallId`,
`toolName` (read/edit/write/bash/...) and camelCase `args`, the model's own call as
`rawToolCall` and `toolCall`, Tauren's legacy `tool {name, displayName, path?, command?}`,
`metadata {source, displayName}` (as `tools/list` entries carry it),
and for a result its raw `content` and `result {content, isError, images, diff?,
changedFiles?}`; live output of a running call (`toolUpdate`) carries the call's
`toolCallId`, `toolName`, `args` and `metadata` with `stream`, `delta`, `content` and, on
the last update when some output was left out, `omittedBytes`; a turn's `turnDiff` is the
change summary `sessions/diff` answers too (`kward.rpc.wire.sessions.changes`). Shapes a
session record shares with the protocol (an assistant message,
a tool call, a tool result) come from `kward.sessions.codec`. Pure functions, any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, cast

from kward import toolcalls
from kward.compaction.events import CompactionEnd, CompactionStart
from kward.model import ApprovalAsked, ApprovalDecided, Delta, EventPayload, ToolCall, ToolOutcome, ToolProgress, TurnError, TurnEvent, Usage
from kward.rpc.protocol import error_object
from kward.rpc.wire.runtime import spent
from kward.rpc.wire.sessions import changes, compaction_result
from kward.rpc.wire.shape import present
from kward.sessions.codec import (
    call_fields,
    encode,
    tool_call_record,
    tool_result_record,
)

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.turn import Turn
    from kward.rpc.shapes.envelopes import SessionEvent as SessionEventShape
    from kward.rpc.shapes.envelopes import TurnEvent as TurnEventShape
    from kward.rpc.shapes.sessions import CompactionEndError, CompactionEndPayload, CompactionStartPayload
    from kward.rpc.shapes.turns import Turn as TurnShape
    from kward.rpc.shapes.events import (
        LegacyTool,
        RawToolCall,
        ToolCallFields,
        ToolMetadata,
        ToolResultRecord,
        TurnEventApprovalRequestedPayload,
        TurnEventApprovalResolvedPayload,
        TurnEventToolCallPayload,
        TurnEventToolResultPayload,
        TurnEventToolUpdatePayload,
        TurnEventTurnFinishedPayload,
        TurnError as TurnErrorShape,
    )
    from kward.runtime.notices import SessionEvent


def tool_metadata(name: str) -> ToolMetadata:
    """``{source, displayName}`` of the tool `name` (`kward.toolcalls.tool_metadata`), with
    ``serverName`` and ``remoteName`` for an MCP tool: the `metadata` of tool events and of
    `tools/list` entries."""
    meta = toolcalls.tool_metadata(name)
    out: ToolMetadata = {"source": meta.source, "displayName": meta.display_name}
    if meta.server_name is not None:
        out["serverName"] = meta.server_name
    if meta.remote_name is not None:
        out["remoteName"] = meta.remote_name
    return out


def fields(call: ToolCall) -> ToolCallFields:
    """``{toolCallId, toolName, args}`` of `call` (`kward.sessions.codec.call_fields`)."""
    f = call_fields(call)
    return {"toolCallId": f["toolCallId"], "toolName": f["toolName"], "args": f["args"]}


def tool_call(call: ToolCall) -> TurnEventToolCallPayload:
    """A `toolCall` payload (see the module docstring)."""
    f = fields(call)
    # the codec's record is the stored call, the shape RawToolCall declares (the traffic check holds it to it)
    raw = cast("RawToolCall", tool_call_record(call))
    args = f["args"]
    tool: LegacyTool = {"name": call.name, "displayName": f["toolName"]}
    if isinstance(args.get("path"), str):
        tool["path"] = args["path"]
    if isinstance(args.get("command"), str):
        tool["command"] = args["command"]
    return {"toolCallId": f["toolCallId"], "toolName": f["toolName"], "args": args, "rawToolCall": raw,
            "toolCall": raw, "tool": tool, "metadata": tool_metadata(call.name)}


def tool_result(outcome: ToolOutcome) -> TurnEventToolResultPayload:
    """A `toolResult` payload: the call's fields, the raw `content` and `result`."""
    c = tool_call(outcome.call)
    return {"toolCallId": c["toolCallId"], "toolName": c["toolName"], "args": c["args"],
            "rawToolCall": c["rawToolCall"], "toolCall": c["toolCall"], "tool": c["tool"], "metadata": c["metadata"],
            "content": outcome.result.content, "result": cast("ToolResultRecord", tool_result_record(outcome.result))}


def tool_update(progress: ToolProgress) -> TurnEventToolUpdatePayload:
    """A `toolUpdate` payload: the call's fields and metadata, then the live output."""
    call = progress.call
    f = fields(call)
    stream: Literal["stdout", "stderr"] = "stderr" if progress.stream == "stderr" else "stdout"
    out: TurnEventToolUpdatePayload = {"toolCallId": f["toolCallId"], "toolName": f["toolName"], "args": f["args"],
                                       "metadata": tool_metadata(call.name), "stream": stream,
                                       "delta": progress.delta, "content": progress.content}
    if progress.omitted_bytes > 0:
        out["omittedBytes"] = progress.omitted_bytes
    if progress.progress is not None:
        out["progress"] = progress.progress
    if progress.total is not None:
        out["total"] = progress.total
    return out


def approval_requested(p: ApprovalAsked) -> TurnEventApprovalRequestedPayload:
    """approvalRequested: the call's fields, the model's `tool` name, the server request's
    `requestId` and the `preview` it carries."""
    f = fields(p.call)
    return {"toolCallId": f["toolCallId"], "toolName": f["toolName"], "args": f["args"], "tool": p.call.name,
            "requestId": p.request_id, "preview": dict(p.preview)}


def approval_resolved(p: ApprovalDecided) -> TurnEventApprovalResolvedPayload:
    """approvalResolved: the call's fields, `tool`, `decision`, `reason` (null when none)
    and `outcome`."""
    f = fields(p.call)
    return {"toolCallId": f["toolCallId"], "toolName": f["toolName"], "args": f["args"], "tool": p.call.name,
            "decision": p.decision, "reason": p.reason, "outcome": p.outcome}


def error(err: TurnError) -> TurnErrorShape:
    """A failed turn's `error`: ``{message, code, fatal:false, reason, data?}``."""
    out: TurnErrorShape = {"message": err.message, "code": err.code, "fatal": False, "reason": err.reason}
    if err.data:
        out["data"] = dict(err.data)
    return out


def compaction_payload(p: CompactionStart | CompactionEnd) -> CompactionStartPayload | CompactionEndPayload:
    """compactionStart ``{reason}``; compactionEnd ``{result, aborted, willRetry,
    errorMessage}`` (`result` as `sessions/compact` returns it, ``{}`` when aborted; a
    completed one adds `estimatedTokensAfter`, the estimate of the compacted context; an
    aborted one adds `error`, the JSON-RPC error)."""
    if isinstance(p, CompactionStart):
        return {"reason": p.reason}
    payload: CompactionEndPayload = {"result": compaction_result(p.result) if p.result is not None else {},
                               "aborted": p.aborted, "willRetry": p.will_retry, "errorMessage": p.error_message}
    if p.result is not None:
        payload["estimatedTokensAfter"] = p.result.tokens_after
    if p.error is not None:
        payload["error"] = cast("CompactionEndError", error_object(p.error))
    return payload


def _finished(p: Any) -> TurnEventTurnFinishedPayload:
    return {"status": p.status, "error": error(p.error)} if p.error is not None else {"status": p.status}


_PAYLOADS: dict[str, Callable[[Any], Mapping[str, Any]]] = {
    "turnQueued": lambda p: {"status": p.status},
    "turnStarted": lambda p: {"status": p.status},
    "assistantDelta": lambda p: {"delta": p.text},
    "reasoningDelta": lambda p: {"delta": p.text},
    "assistantMessage": lambda p: {"message": encode(p)},
    "modelRetry": lambda p: {"provider": p.provider, "model": p.model, "attempt": p.attempt,
                             "maxAttempts": p.max_attempts, "delaySeconds": p.delay_seconds, "error": p.error},
    "toolCall": tool_call,
    "toolUpdate": tool_update,
    "toolResult": tool_result,
    "turnSteered": lambda p: {"input": p.input, "createdAt": p.created_at},
    "answer": lambda p: {"content": p.content},
    "turnCancelRequested": lambda p: {},
    "error": error,
    "turnDiff": changes,
    "turnFinished": _finished,
    "compactionStart": compaction_payload,
    "compactionEnd": compaction_payload,
    "approvalRequested": approval_requested,
    "approvalResolved": approval_resolved,
}


def event_payload(type_: str, payload: EventPayload) -> Mapping[str, Any]:
    """The protocol's payload of an event of `type_` (the typed payload of
    `kward.model.EventPayload`)."""
    if isinstance(payload, Delta):  # the hot path: thousands a second
        return {"delta": payload.text}
    return _PAYLOADS[type_](payload)


def turn_event(event: TurnEvent) -> TurnEventShape:
    """The `turn/event` notification's params (and a `turns/events` item)."""
    payload = event.payload
    return {"sequence": event.sequence, "timestamp": event.timestamp, "sessionId": event.session_id,
            "turnId": event.turn_id, "type": event.type,
            "payload": {"delta": payload.text} if isinstance(payload, Delta) else dict(_PAYLOADS[event.type](payload))}


def turn(t: Turn) -> TurnShape:
    """The turn object (`kward.agent.turn.Turn`) of turns/start, cancel, status, events."""
    out: TurnShape = {"id": t.id, "sessionId": t.session_id, "status": t.status,
                      "cancelRequested": t.cancel_requested, "createdAt": t.created_at}
    if t.started_at is not None:
        out["startedAt"] = t.started_at
    if t.finished_at is not None:
        out["finishedAt"] = t.finished_at
    if t.error is not None:
        out["error"] = error(t.error)
    return out


def session_event(event: SessionEvent) -> SessionEventShape:
    """A `kward.runtime.notices.SessionEvent` as the `session/event` params: compactionStart
    and compactionEnd as `compaction_payload`; sessionUpdated ``{name, path}``; usageUpdated
    ``{tokens, cost}`` (the session's cumulative usage, `kward.rpc.wire.runtime.spent`)."""
    p = event.payload
    payload: Mapping[str, Any]
    if isinstance(p, Usage):
        payload = spent(p)
    elif isinstance(p, (CompactionStart, CompactionEnd)):
        payload = compaction_payload(p)
    else:
        payload = {"name": p.name, "path": p.path}
    return {"timestamp": event.timestamp, "sessionId": event.session_id, "type": event.type, "payload": dict(payload)}
