"""The one converter from core objects to the protocol's payloads (docs/protocol.md).

The core hands the RPC face typed objects (`kward.model`, the runtime's results); the
method handlers and the connection shape them here, and only here:

- turn events: `turn_event` (the `turn/event` envelope) and `event_payload` (a payload by
  type; plugin observers see the same, `kward.resources.observers`);
- tool calls and results in the shapes UI clients read: the normalized `toolCallId`,
  `toolName` (read/edit/write/bash/...) and camelCase `args`, the model's own call as
  `rawToolCall` and `toolCall`, Tauren's legacy `tool {name, displayName, path?,
  command?}`, and for a result its raw `content` and `result {content, isError, images,
  diff?, changedFiles?}`;
- the turn object (`turn`), a failed turn's error (`error`), the session payload
  (`session`) and a `sessions/list` item (`listed_session`), model entries and listings
  (`model_entry`, `model_listing`);
- a login (`login`, for `auth/*` and `auth/loginFinished`), the `logging/stats` result
  (`stats`) and the `logging/tokenCsv` one (`token_csv`), ranges with ISO times (`time_range`);
  (the credential results of `auth/*` are shaped in `kward.rpc.wire_auth`, the `memory/*`
  ones in `kward.rpc.wire_memory`, `runtime/state`, `runtime/stats` and
  `sessions/forkMessages` in `kward.rpc.wire_sessions`);
- the normalized transcript of `sessions/transcript` (Tauren's `tauren-transcript-v1`,
  `transcript`): system messages dropped; user -> ``{role:"user", content:[parts]}``;
  assistant -> ``{role:"assistant", content:[thinking..., text/image parts...,
  toolCall...]}`` (the reasoning summary as a first ``thinking`` block when the content
  has none), ``errorMessage?``, ``interrupted?``; tool results -> ``{role:"toolResult",
  toolCallId, toolName, isError, content:[{type:"text", text}], details?{diff,
  changedFiles}}`` (details from the file's tool_execution_end record, else derived from
  the text); compaction summaries -> ``{role:"compactionSummary", summary,
  tokensBefore?}``.

Shapes a session record shares with the protocol (an assistant message, a tool call, a
tool result, usage) come from `kward.sessions.codec`. Pure functions, any thread.
"""

from __future__ import annotations

from typing import Any, Callable

from kward.limits import IMAGE_MIME_TYPES
from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    Delta,
    ImagePart,
    Message,
    OtherPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolOutcome,
    ToolResultMessage,
    TurnError,
    TurnEvent,
    UserMessage,
    is_error_text,
)
from kward.rpc.protocol import error_object
from kward.sessions.codec import (
    call_fields,
    encode,
    tool_call_record,
    tool_result_record,
)
from kward.timefmt import seconds_iso
from kward.toolcalls import (
    extract_diff,
    normalize_args,
    normalize_tool_name,
    parse_arguments,
)


def _present(out: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in out.items() if v is not None}


# --- turn events -------------------------------------------------------------------------

def tool_call(call: ToolCall) -> dict[str, Any]:
    """A `toolCall` payload (see the module docstring)."""
    fields = call_fields(call)
    raw = tool_call_record(call)
    tool = {"name": call.name, "displayName": fields["toolName"]}
    for key in ("path", "command"):
        if isinstance(fields["args"].get(key), str):
            tool[key] = fields["args"][key]
    return {**fields, "rawToolCall": raw, "toolCall": raw, "tool": tool}


def tool_result(outcome: ToolOutcome) -> dict[str, Any]:
    """A `toolResult` payload: the call's fields, the raw `content` and `result`."""
    return {**tool_call(outcome.call), "content": outcome.result.content, "result": tool_result_record(outcome.result)}


def error(err: TurnError) -> dict[str, Any]:
    """A failed turn's `error`: ``{message, code, fatal:false, reason, data?}``."""
    out: dict[str, Any] = {"message": err.message, "code": err.code, "fatal": False, "reason": err.reason}
    if err.data:
        out["data"] = dict(err.data)
    return out


def _finished(p: Any) -> dict[str, Any]:
    return {"status": p.status, "error": error(p.error)} if p.error is not None else {"status": p.status}


_PAYLOADS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "turnQueued": lambda p: {"status": p.status},
    "turnStarted": lambda p: {"status": p.status},
    "assistantDelta": lambda p: {"delta": p.text},
    "reasoningDelta": lambda p: {"delta": p.text},
    "assistantMessage": lambda p: {"message": encode(p)},
    "modelRetry": lambda p: {"provider": p.provider, "model": p.model, "attempt": p.attempt,
                             "maxAttempts": p.max_attempts, "delaySeconds": p.delay_seconds, "error": p.error},
    "toolCall": tool_call,
    "toolResult": tool_result,
    "turnSteered": lambda p: {"input": p.input, "createdAt": p.created_at},
    "answer": lambda p: {"content": p.content},
    "turnCancelRequested": lambda p: {},
    "error": error,
    "turnFinished": _finished,
}


def event_payload(type_: str, payload: Any) -> dict[str, Any]:
    """The protocol's payload of an event of `type_` (the typed payload of
    `kward.model.EventPayload`)."""
    if isinstance(payload, Delta):  # the hot path: thousands a second
        return {"delta": payload.text}
    return _PAYLOADS[type_](payload)


def turn_event(event: TurnEvent) -> dict[str, Any]:
    """The `turn/event` notification's params (and a `turns/events` item)."""
    payload = event.payload
    return {"sequence": event.sequence, "timestamp": event.timestamp, "sessionId": event.session_id,
            "turnId": event.turn_id, "type": event.type,
            "payload": {"delta": payload.text} if isinstance(payload, Delta) else _PAYLOADS[event.type](payload)}


def turn(t: Any) -> dict[str, Any]:
    """The turn object (`kward.agent.turn.Turn`) of turns/start, cancel, status, events."""
    return _present({"id": t.id, "sessionId": t.session_id, "status": t.status, "cancelRequested": t.cancel_requested,
                     "createdAt": t.created_at, "startedAt": t.started_at, "finishedAt": t.finished_at,
                     "error": error(t.error) if t.error is not None else None})


# --- sessions and models -----------------------------------------------------------------

def session(info: Any) -> dict[str, Any]:
    """The session payload of a `kward.sessions.session.SessionInfo` (None fields left out)."""
    return _present({"id": info.id, "persistentId": info.persistent_id, "path": info.path,
                     "workspaceRoot": info.workspace_root, "cwd": info.cwd, "name": info.name,
                     "createdAt": info.created_at, "modifiedAt": info.modified_at, "parentId": info.parent_id,
                     "parentPath": info.parent_path})


def listed_session(s: Any) -> dict[str, Any]:
    """A `sessions/list` item (`kward.sessions.listing.SessionSummary`), tree decoration
    included."""
    return _present({"id": s.id, "path": s.path, "cwd": s.cwd or s.workspace_root, "workspaceRoot": s.workspace_root,
                     "createdAt": s.created_at, "modifiedAt": s.modified_at, "name": s.name,
                     "firstMessage": s.first_message, "messageCount": s.message_count, "parentId": s.parent_id,
                     "parentPath": s.parent_path, "depth": s.depth, "isLast": s.is_last,
                     "ancestorContinues": list(s.ancestor_continues)})


def model_entry(choice: Any) -> dict[str, Any]:
    """A model entry (`kward.providers.model_service.ModelChoice`), with the legacy `model`
    and the levels it supports."""
    e = choice.entry
    out = {"provider": e.provider, "id": e.id, "name": e.name, "reasoning": e.reasoning,
           "reasoningEffort": choice.reasoning_effort, "contextWindow": e.context_window, "current": choice.current,
           "model": e.id, "reasoningEfforts": list(e.efforts) if e.efforts is not None else None}
    if choice.effective_effort is not None:
        out["effectiveReasoningEffort"] = choice.effective_effort
    return out


def model_listing(listing: Any) -> dict[str, Any]:
    """``{models, source, sourceError?}`` of a `ModelListing`."""
    out: dict[str, Any] = {"models": [model_entry(c) for c in listing.models], "source": listing.source}
    if listing.source_error:
        out["sourceError"] = listing.source_error
    return out


# --- the transcript ----------------------------------------------------------------------

def _name(raw_name: Any) -> Any:
    return normalize_tool_name(raw_name) if isinstance(raw_name, str) else raw_name


def call_arguments(raw_name: Any, raw_args: Any) -> dict[str, Any]:
    """Client-facing arguments of a stored tool call (JSON text or an object)."""
    return normalize_args(raw_name if isinstance(raw_name, str) else "", parse_arguments(raw_args))


def result_details(raw_name: Any, raw_args: Any, text: str) -> dict[str, Any]:
    """``{diff?, changedFiles?}`` of a successful edit/write result, derived from its text
    and the call's ``path`` (for results that have no tool_execution_end record)."""
    if is_error_text(text) or _name(raw_name if isinstance(raw_name, str) else "") not in ("edit", "write"):
        return {}
    details: dict[str, Any] = {}
    diff = extract_diff(text)
    if diff is not None:
        details["diff"] = diff
    path = parse_arguments(raw_args).get("path")
    if isinstance(path, str) and path:
        details["changedFiles"] = [path]
    return details


def _image(part: ImagePart) -> dict[str, Any] | None:
    mime = str(part.mime_type or "").lower().replace("image/jpg", "image/jpeg")
    if mime not in IMAGE_MIME_TYPES or not part.data:
        return None
    image = {"type": "image", "data": part.data, "mimeType": mime}
    alt = part.alt or (part.path.rsplit("/", 1)[-1] if part.path else None)
    if alt:
        image["alt"] = alt
    return image


def _content(content: Content, keep_thinking: bool = False) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
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
            parts.append(_present({"type": "toolCall", "id": part.id, "name": _name(part.name),
                                   "arguments": call_arguments(part.name, part.arguments)}))
        elif isinstance(part, OtherPart) and part.text is not None:
            parts.append({"type": "text", "text": part.text})
    return parts


def _assistant(message: AssistantMessage, calls: dict[str, ToolCall]) -> dict[str, Any]:
    # an empty text (a message that only calls tools) is no block at all
    parts = [p for p in _content(message.content, keep_thinking=True) if p["type"] != "text" or p["text"]]
    thinking = [p for p in parts if p["type"] == "thinking"]
    content = thinking + [p for p in parts if p["type"] != "thinking"]
    if not thinking and message.reasoning:
        content.insert(0, {"type": "thinking", "thinking": message.reasoning})
    for call in message.shown_calls():
        content.append(_present({"type": "toolCall", "id": call.id, "name": _name(call.name),
                                 "arguments": call_arguments(call.name, call.arguments)}))
        if isinstance(call.id, str):
            calls[call.id] = call
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if message.error:
        out["errorMessage"] = message.error
    if message.interrupted:  # a cancelled or failed model call's partial answer
        out["interrupted"] = True
    return out


def _tool_result(message: ToolResultMessage, calls: dict[str, ToolCall], details: dict[str, Any]) -> dict[str, Any]:
    call_id = message.shown_call_id()
    call = calls.get(call_id) if call_id is not None else None
    raw_name = message.shown_name() or (call.name if call is not None else None)
    content = _content(message.content)
    text = "\n".join(p["text"] for p in content if isinstance(p.get("text"), str))
    failed = message.is_error if message.is_error is not None else is_error_text(text)
    out = _present({"role": "toolResult", "toolCallId": call_id, "toolName": _name(raw_name), "isError": failed,
                    "content": content})
    if call_id is not None and call_id in details:
        found = details[call_id]
        extra = _present({"diff": found.diff, "changedFiles": found.changed_files})
    elif failed:
        extra = {}
    else:
        extra = result_details(raw_name, call.arguments if call is not None else None, text)
    if extra:
        out["details"] = extra
    return out


def transcript_messages(messages: list[Message], details: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The normalized messages (module docstring); `details` maps a tool call id to the
    `kward.sessions.transcript.ToolDetails` of its tool_execution_end record."""
    found = details or {}
    calls: dict[str, ToolCall] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _content(message.content)})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message, calls))
        elif isinstance(message, ToolResultMessage):
            out.append(_tool_result(message, calls, found))
        elif isinstance(message, CompactionSummary):
            item: dict[str, Any] = {"role": "compactionSummary", "summary": message.summary}
            if message.tokens_before is not None:
                item["tokensBefore"] = message.tokens_before
            out.append(item)
    return out


def transcript(t: Any) -> dict[str, Any]:
    """`sessions/transcript`: ``{session, messages}`` of a `kward.sessions.transcript.Transcript`."""
    return {"session": session(t.session), "messages": transcript_messages(t.messages, t.tool_details)}


# --- logins and telemetry ----------------------------------------------------------------

def login(state: Any) -> dict[str, Any]:
    """The login object of `auth/loginStatus` and `auth/loginFinished` (a
    `kward.auth.login.LoginState`): ``{providerId, loginId, status, authorizationUrl,
    redirectUri, message?, error?}``, `message` and `error` only when not empty."""
    out: dict[str, Any] = {"providerId": state.provider_id, "loginId": state.login_id, "status": state.status,
                           "authorizationUrl": state.authorization_url, "redirectUri": state.redirect_uri}
    if state.message:
        out["message"] = state.message
    if state.error:
        out["error"] = state.error
    return out


def time_range(rng: Any) -> dict[str, Any]:
    """A `kward.telemetry.ranges.Range`: ``{input, count, unit, startAt, endAt}`` (UTC, whole seconds)."""
    return {"input": rng.input, "count": rng.count, "unit": rng.unit, "startAt": seconds_iso(rng.start),
            "endAt": seconds_iso(rng.end)}


def stats(s: Any) -> dict[str, Any]:
    """The `logging/stats` result of a `kward.telemetry.stats.Stats` (keys as the original kward's)."""
    usage, tools, errors = s.usage, s.tools, s.errors
    return {
        "range": time_range(s.range), "logDir": str(s.log_dir), "enabledCategories": list(s.enabled_categories),
        "recordCount": s.record_count, "recordsByCategory": dict(s.records_by_category),
        "recordsByEvent": dict(s.records_by_event),
        "usageStats": {"modelUsageEvents": usage.model_usage_events, "totals": dict(usage.totals)},
        "performance": {"events": {event: {"count": e.count, "statuses": dict(e.statuses),
                                           "durationMs": {"min": e.duration_ms.min, "avg": e.duration_ms.avg,
                                                          "max": e.duration_ms.max}}
                                   for event, e in s.performance.items()}},
        "tools": {"calls": tools.calls, "resultBytes": tools.result_bytes, "byName": dict(tools.by_name),
                  "byStatus": dict(tools.by_status)},
        "errors": {"count": errors.count, "byEvent": dict(errors.by_event), "byClass": dict(errors.by_class),
                   "byProvider": dict(errors.by_provider), "byCode": dict(errors.by_code)},
    }


def token_csv(export: Any) -> dict[str, Any]:
    """The `logging/tokenCsv` result of a `kward.telemetry.tokens.TokenCsv`: ``{csv, range, bucket}``."""
    return {"csv": export.csv, "range": time_range(export.range), "bucket": export.bucket}


# --- compaction ---------------------------------------------------------------------------

def compaction_result(result: Any) -> dict[str, Any]:
    """`sessions/compact`: ``{summary, firstKeptEntryId, tokensBefore, details}`` of a
    `kward.compaction.run.CompactionResult`."""
    return {"summary": result.summary, "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before,
            "details": {"read_files": list(result.details.get("read_files", [])),
                        "modified_files": list(result.details.get("modified_files", []))}}


def session_event(event: Any) -> dict[str, Any]:
    """A `kward.runtime.notices.SessionEvent` as the `session/event` params: compactionStart
    ``{reason}``; compactionEnd ``{result, aborted, willRetry, errorMessage}`` (`result`
    as `sessions/compact` returns it, ``{}`` when aborted; an aborted one adds `error`,
    the JSON-RPC error)."""
    p = event.payload
    if event.type == "compactionStart":
        payload: dict[str, Any] = {"reason": p.reason}
    else:
        payload = {"result": compaction_result(p.result) if p.result is not None else {}, "aborted": p.aborted,
                   "willRetry": p.will_retry, "errorMessage": p.error_message}
        if p.error is not None:
            payload["error"] = error_object(p.error)
    return {"timestamp": event.timestamp, "sessionId": event.session_id, "type": event.type, "payload": payload}
