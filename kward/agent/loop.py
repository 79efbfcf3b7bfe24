"""The agent loop: one user input becomes model calls and tool calls until the model answers.

A plain function over a session, a provider, the tools and an `emit(type, payload)`
callback; it knows nothing of JSON-RPC. It runs on the turn's worker thread and holds no
lock of its own: the caller guarantees one turn per session at a time.

Persistence rule: every message and `tool_execution_end` record is appended to the
session (one whole line, written before `append_*` returns) *before* the event that
reports it is emitted, so a client never sees what the file does not hold.

File changes: the `FileChange`s of each tool result, and whether the list is complete
(`ToolResult.changes_complete`), go to `TurnSetup.changes` (the session's change tracker,
`kward.agent.changes`) before its toolResult is emitted, those of a canceled call too; the
engine reports the turn's net changes (turnDiff) after the loop.

Interrupted answers: when a model call is cancelled or fails after it streamed text or
reasoning, what the client was shown is kept as an assistant message marked
``"interrupted": true`` (a failure adds its ``errorMessage``; no tool calls, no usage),
reported by `assistantMessage` like any other, then the turn ends canceled or failed.
The next request sends its text as ordinary assistant content. A call that streamed
nothing leaves nothing behind.

Live tool output: with `TurnSetup.live_output`, each tool call gets its own
`kward.tools.live.LiveOutput` (in `tool_ctx.live` while it runs) whose updates are emitted
as ``toolUpdate`` events; it is closed (its last update emitted) before the call's
``toolResult``, also when the tool raised or was cancelled. So every ``toolUpdate`` of a
call comes after its ``toolCall`` and before its ``toolResult``.

Approval (`TurnSetup.gate`, `kward.agent.approval`): asked before each call runs; a
declined call's result is its ``Declined: ...`` text (the tool never runs) and the turn
goes on, unless the turn was cancelled while the gate waited (then it ends canceled, the
declined result kept).

Hooks (`TurnSetup.hooks`, `kward.agent.hooks`): a call's `beforeTool` hooks run after its
``toolCall`` event and before the gate (a hook that blocks it: its result is the
``Declined: blocked by ...`` text, the gate is not asked); its `afterTool` hooks once it
ran (not a blocked, declined or cancelled call). What they add to the context ends the
call's result.

Context guard (`TurnSetup.context`, `kward.compaction.auto.AutoCompaction`): asked before
each model request whether to compact first, and, once, after a request the provider
rejected as too long (`context_overflow`) before it streamed anything: when it compacted,
the request is sent again over the compacted conversation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kward.cancel import CancelToken
from kward.errors import Canceled, KwardError
from kward.model import (
    Answer,
    AssistantMessage,
    Content,
    Delta,
    EventPayload,
    FileChange,
    ImagePart,
    Message,
    Steered,
    TextPart,
    ToolCall,
    ToolOutcome,
    ToolProgress,
    ToolResult,
    ToolResultMessage,
    UserMessage,
    is_error_text,
)
from kward.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    RetryInfo,
)
from kward.redact import redact_text
from kward.steering import SteeringInbox, SteerInput
from kward.toolcalls import ArgumentsError, decode_arguments
from kward.tools.base import CANCELLED, ToolContext
from kward.tools.live import LiveOutput, Update
from kward.tools.registry import ToolRegistry

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.approval import Gate
    from kward.agent.hooks import TurnHooks

log = logging.getLogger(__name__)

#: The loop's event callback: `emit(type, payload)` with the typed payload of the type
#: (`kward.model.EventPayload`).
Emit = Callable[[str, EventPayload], None]
DEFAULT_MAX_STEPS = 50


class SessionPort(Protocol):
    """What the loop needs from an open session (kward.sessions.handle.SessionHandle)."""

    def append_message(self, message: Message) -> None: ...

    def append_tool_execution(self, call: ToolCall, result: ToolResult) -> None: ...

    def entry_messages(self) -> list[Message]: ...


class StepLimitReached(KwardError):
    reason = "internal_error"


@dataclass
class TurnSetup:
    """Everything one run of the loop needs besides the session."""

    provider: Provider
    tools: ToolRegistry
    tool_ctx: ToolContext
    instructions: str
    model: str
    reasoning_effort: str | None
    cancel: CancelToken
    emit: Emit
    steering: SteeringInbox | None = None
    headers: dict[str, str] = field(default_factory=dict)
    session_key: str | None = None
    has_ui: bool = False
    max_steps: int = DEFAULT_MAX_STEPS
    refresh_instructions: Callable[[], str] | None = None  # called before each model request
    context: "ContextGuard | None" = None  # automatic compaction (kward.compaction.auto)
    live_output: bool = True  # emit toolUpdate events (False: nobody takes them)
    changes: "Callable[[tuple[FileChange, ...], bool], None] | None" = None  # each result's changes, complete?
    gate: "Gate | None" = None  # the approval policy's, asked before each call (kward.agent.approval)
    hooks: "TurnHooks | None" = None  # the turn's command hooks, before and after each call (kward.agent.hooks)


class ContextGuard(Protocol):
    """Keeps the conversation of the turn's session within the model's context window (see
    the module docstring); made for that session, which it may compact."""

    def before_request(self, instructions: str) -> None: ...

    def after_overflow(self, instructions: str) -> bool: ...


class _Sink:
    """Forwards streaming progress as events and keeps the text and reasoning shown so far
    by the current model call (`start_call` forgets them). Used on the turn's thread only."""

    def __init__(self, emit: Emit):
        self._emit = emit
        self.text: list[str] = []
        self.reasoning: list[str] = []

    def start_call(self) -> None:
        self.text, self.reasoning = [], []

    def text_delta(self, delta: str) -> None:
        if delta:
            self.text.append(delta)
            self._emit("assistantDelta", Delta(delta))

    def reasoning_delta(self, delta: str) -> None:
        if delta:
            self.reasoning.append(delta)
            self._emit("reasoningDelta", Delta(delta))

    def retry(self, info: RetryInfo) -> None:
        self._emit("modelRetry", info)


def run_agent(session: SessionPort, user_message: UserMessage, setup: TurnSetup) -> str:
    """Run one turn; returns the final answer text. Raises Canceled when cancelled, or the
    provider's/tools' KwardError when the turn fails (the caller reports it)."""
    setup.cancel.raise_if_cancelled()
    session.append_message(user_message)
    sink = _Sink(setup.emit)
    schemas = setup.tools.schemas(setup.has_ui)
    for _ in range(setup.max_steps):
        setup.cancel.raise_if_cancelled()
        if setup.refresh_instructions is not None:  # e.g. an AGENTS.md the last tool call edited
            setup.instructions = setup.refresh_instructions()
        if setup.context is not None:
            setup.context.before_request(setup.instructions)
        request = ModelRequest(instructions=setup.instructions, messages=session.entry_messages(), tools=schemas,
                               model=setup.model, reasoning_effort=setup.reasoning_effort, headers=setup.headers,
                               session_id=setup.session_key, steering=setup.steering)
        sink.start_call()
        try:
            response = setup.provider.complete(request, sink, setup.cancel)
        except Exception as exc:  # Canceled, ProviderError, or a provider bug
            if _overflow_recovered(sink, setup, exc):
                continue
            _keep_interrupted(session, sink, setup, exc)
            raise
        message = assistant_message(response)
        session.append_message(message)
        setup.emit("assistantMessage", message)
        if message.tool_calls:
            _run_tools(session, message.tool_calls, setup)
            _apply_steering(session, setup, final=False)
            continue
        if _apply_steering(session, setup, final=True):
            continue
        setup.emit("answer", Answer(response.text))
        return response.text
    raise StepLimitReached(f"The turn stopped after {setup.max_steps} model calls without a final answer")


def assistant_message(response: ModelResponse) -> AssistantMessage:
    return AssistantMessage(response.text, response.reasoning or None, tuple(response.tool_calls), response.usage,
                            response.provider, response.model, extras=dict(response.message_extras or {}))


def interrupted_message(text: str, reasoning: str, provider: str, model: str,
                        error: str | None = None) -> AssistantMessage:
    """The assistant message that keeps what an interrupted model call streamed."""
    return AssistantMessage(text, reasoning or None, provider=provider, model=model, interrupted=True,
                            error=error or None)


def _overflow_recovered(sink: _Sink, setup: TurnSetup, exc: Exception) -> bool:
    """True when a context overflow (before any output) was answered by a compaction."""
    if not (isinstance(exc, ProviderError) and exc.kind == "context_overflow") or setup.context is None:
        return False
    if sink.text or sink.reasoning:
        return False
    return setup.context.after_overflow(setup.instructions)


def _keep_interrupted(session: SessionPort, sink: _Sink, setup: TurnSetup, exc: Exception) -> None:
    """Persist (then report) what the interrupted call streamed; nothing when it streamed
    nothing. A failure to persist is logged: the turn still ends with `exc`."""
    if not sink.text and not sink.reasoning:
        return
    error = None
    if not isinstance(exc, Canceled) and not setup.cancel.cancelled:  # a failure, not the user's stop
        error = redact_text(exc.message if isinstance(exc, KwardError) else f"Internal error: {type(exc).__name__}")
    message = interrupted_message("".join(sink.text), "".join(sink.reasoning), setup.provider.name, setup.model, error)
    try:
        session.append_message(message)
    except Exception:
        log.exception("could not keep the interrupted answer of the turn")
        return
    setup.emit("assistantMessage", message)


def _run_tools(session: SessionPort, calls: tuple[ToolCall, ...], setup: TurnSetup) -> None:
    canceled = False
    for call in calls:
        setup.emit("toolCall", call)
        args = _args(call)
        context = ""  # what the hooks add to the result
        declined: str | None = None
        run = call  # (the approver may edit its args)
        if not canceled and setup.hooks is not None:
            try:
                verdict = setup.hooks.before_tool(call, args)
            except Canceled:
                canceled = True
            else:
                context = verdict.context
                if verdict.blocked is not None:
                    from kward.agent.hooks import blocked_result  # (hooks are there: so is their module)

                    declined = blocked_result(verdict.blocked)
        if declined is None and not canceled:
            verdict_ = _declined(call, args, setup)
            declined = verdict_ if isinstance(verdict_, str) else None
            run = verdict_ if isinstance(verdict_, ToolCall) else call
            canceled = declined is not None and setup.cancel.cancelled  # (cancelled while it waited for an answer)
        if declined is not None:
            result = ToolResult.text(declined)
        elif canceled:
            result = ToolResult.text(CANCELLED)
        else:
            result, canceled = _run_one(run, setup)
            if not canceled and setup.hooks is not None:
                try:
                    after = setup.hooks.after_tool(run, args if run is call else _args(run), result)
                except Canceled:
                    canceled = True
                else:
                    context = "\n\n".join(part for part in (context, after) if part)
        if run is not call:
            from kward.agent.approval import edited_note  # (the gate is there: so is its module)

            result = replace(result, content=result.content + edited_note(run, decode_arguments(run.arguments)))
        if context:
            result = replace(result, content=f"{result.content}\n\n{context}")
        # the flag is stored when the text does not tell it (`Unknown tool:`), so that a
        # reloaded transcript reports what the toolResult event did
        flag = result.is_error if result.is_error != is_error_text(result.content) else None
        content: Content = (TextPart(result.content), *result.images) if result.images else result.content
        session.append_message(ToolResultMessage(call.id, call.name, content, is_error=flag))
        session.append_tool_execution(call, result)
        if setup.changes is not None and (result.changes or not result.changes_complete):
            setup.changes(result.changes, result.changes_complete)  # (a canceled call's too)
        setup.emit("toolResult", ToolOutcome(call, result))
    if canceled:
        raise Canceled("Canceled.")


def _run_one(call: ToolCall, setup: TurnSetup) -> tuple[ToolResult, bool]:
    """Run one call with its live output; its result, and whether the turn's cancel ended it."""
    live = live_output(call, setup.emit, setup.tool_ctx.scrub) if setup.live_output else None
    setup.tool_ctx.live = live
    try:
        return setup.tools.run(call.name, call.arguments, setup.tool_ctx), False
    except Canceled as exc:
        carried = getattr(exc, "result", None)  # kward.tools.shell.CanceledCommand: what it changed
        return (carried if isinstance(carried, ToolResult) else ToolResult.text(CANCELLED)), True
    finally:
        setup.tool_ctx.live = None
        if live is not None:
            live.close()


def _args(call: ToolCall) -> dict[str, Any]:
    """The call's decoded arguments ({} when they are no JSON object: the tool says so)."""
    try:
        return decode_arguments(call.arguments)
    except ArgumentsError:
        return {}


def _declined(call: ToolCall, args: dict[str, Any], setup: TurnSetup) -> str | ToolCall | None:
    """The gate's ``Declined: ...`` for `call`, the edited call to run in its place, or None
    when it may run as it is (or nothing gates)."""
    if setup.gate is None:
        return None
    return setup.gate.check(call, args)


def live_output(call: ToolCall, emit: Emit, scrub: Callable[[str], str] | None) -> LiveOutput:
    """A coalescer whose updates are `call`'s ``toolUpdate`` events."""

    def publish(update: Update) -> None:
        emit("toolUpdate", ToolProgress(call, update.stream, update.delta, update.content, update.omitted_bytes,
                                        update.progress, update.total))

    return LiveOutput(publish, scrub=scrub)


def user_content(text: str, attachments: list[ImagePart]) -> Content:
    """A user message's content: the text, or a text part and the images."""
    return text if not attachments else (TextPart(text), *attachments)


def _apply_steering(session: SessionPort, setup: TurnSetup, *, final: bool) -> bool:
    """Append steered input as user messages; True when there was any. On the final answer
    the inbox is closed atomically so that later input becomes a follow-up turn."""
    if setup.steering is None:
        return False
    items: list[SteerInput] = setup.steering.close_if_empty() if final else setup.steering.drain()
    for item in items:
        session.append_message(UserMessage(user_content(item.text, item.attachments)))
        setup.emit("turnSteered", Steered(item.text, item.created_at))
    return bool(items)
