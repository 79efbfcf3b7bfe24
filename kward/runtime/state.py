"""What the runtime reports about one session: plain dataclasses the faces shape (the RPC
face into `runtime/state` and `runtime/stats`). Imported on first use.

`session_state` and `session_stats` read the session, the turn manager and the model
service of a Runtime; they may do local file I/O (the instructions files) and, for the
model's context window, use cached model data only. Any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kward.agent.stats import context_usage, message_counts
from kward.errors import KwardError

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.stats import ContextUsage, MessageCounts
    from kward.model import Usage
    from kward.providers.model_service import ModelChoice
    from kward.runtime.facade import Runtime
    from kward.sessions.handle import SessionHandle

DEFAULT_RESERVE_TOKENS = 16384


@dataclass(frozen=True)
class SessionIds:
    id: str  # the id this process gave the open session (an RPC session id)
    persistent_id: str  # the id stored in the session file
    path: str
    name: str | None


@dataclass(frozen=True)
class ModelState:
    """The provider and model the next turn uses."""

    model: "ModelChoice"  # the current model (ModelService.current)
    reasoning_effort: str | None  # as requested (None: no reasoning)
    effective_reasoning_effort: str | None  # what requests carry, when the model lacks the requested level
    steering: bool  # the provider steers a running turn in flight
    auto_retry: bool
    provider: str  # its label, e.g. "OpenRouter"
    model_id: str
    reason: str  # why this provider was chosen


@dataclass(frozen=True)
class SessionState:
    ids: SessionIds
    streaming: bool  # a turn runs on the session's file (through any of its ids)
    pending: int  # turns queued behind it
    message_count: int
    workspace_root: str
    reserve_tokens: int  # config `compaction.reserve_tokens`
    model: ModelState | None  # None when no provider could be chosen ...
    provider_error: KwardError | None = None  # ... and this says why
    compacting: bool = False  # a compaction runs on the session now (manual, or automatic in a turn)
    auto_compaction: bool = False  # config `compaction.enabled`


@dataclass(frozen=True)
class SessionStats:
    ids: SessionIds
    counts: "MessageCounts"
    tokens: "Usage"  # cumulative: every assistant message and summarizer call (`cost` None: never reported)
    context_usage: "ContextUsage | None"  # None when the model's context window is unknown
    auto_compaction: bool = False  # config `compaction.enabled`


def session_ids(session: SessionHandle) -> SessionIds:
    return SessionIds(session.id, session.persistent_id, session.path, session.name)


def session_state(rt: Runtime, session: SessionHandle) -> SessionState:
    turns = rt.turns if rt.has_service("turns") else None  # no turn was ever started: none runs
    config = rt.config.load()
    compaction = config.get("compaction")
    if not isinstance(compaction, dict):
        compaction = {}
    common = dict(ids=session_ids(session),
                  streaming=turns is not None and turns.running_turn(session) is not None,
                  pending=turns.pending_count(session) if turns is not None else 0,
                  message_count=message_counts(session.entry_messages()).total,
                  workspace_root=session.workspace_root,
                  reserve_tokens=compaction.get("reserve_tokens", DEFAULT_RESERVE_TOKENS),
                  compacting=turns is not None and turns.compacting(session),
                  auto_compaction=rt.compaction.auto_enabled())
    try:
        selection = rt.engine.selection()
    except KwardError as exc:  # e.g. an unreadable script: the session state is still worth showing
        return SessionState(**common, model=None, provider_error=exc)
    model = rt.models.current(selection)
    return SessionState(**common, model=ModelState(
        model=model, reasoning_effort=model.reasoning_effort,
        effective_reasoning_effort=model.effective_effort,
        steering=selection.provider.supports_steering, auto_retry=selection.key != "scripted",
        provider=selection.label, model_id=selection.model, reason=selection.reason))


def session_stats(rt: Runtime, session: SessionHandle) -> SessionStats:
    messages = session.entry_messages()
    try:
        window = rt.models.current(rt.engine.selection()).entry.context_window
    except KwardError:
        window = None
    usage = context_usage(messages, rt.resources.estimate(session), window)
    return SessionStats(ids=session_ids(session), counts=message_counts(messages), tokens=session.spent(),
                        context_usage=usage, auto_compaction=rt.compaction.auto_enabled())
