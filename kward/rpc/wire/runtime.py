"""The `runtime/state` and `runtime/stats` results of the runtime's session values
(`kward.runtime.state`, `kward.agent.stats`). Keys as docs/protocol.md and the original
kward's. Pure functions, any thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.wire.models import model_entry

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.stats import ContextUsage
    from kward.model import Usage
    from kward.rpc.shapes.sessions import SessionEventUsageUpdatedPayload
    from kward.rpc.shapes.runtime import (
        RuntimeContextUsage,
        RuntimeStateResult,
        RuntimeStatsResult,
        RuntimeTokenTotals,
    )
    from kward.runtime.state import SessionState, SessionStats


def session_state(st: SessionState) -> RuntimeStateResult:
    """`runtime/state`: the session, its turns and the model the next turn uses (with
    `providerError` when no provider could be chosen). `sessionId` is the file's id, as the
    original kward's."""
    i, m = st.ids, st.model
    out: RuntimeStateResult = {
        "isStreaming": st.streaming, "isCompacting": st.compacting, "followUpMode": "one-at-a-time",
        "sessionFile": i.path, "sessionId": i.persistent_id, "sessionName": i.name, "rpcSessionId": i.id,
        "persistentSessionId": i.persistent_id,
        "autoCompactionEnabled": st.auto_compaction, "autoCompactionReserveTokens": st.reserve_tokens,
        "workspaceGuardrailsEnabled": True,
        "hideThinkingBlock": False, "quietStartup": False, "transport": "kward-rpc", "imageAutoResize": False,
        "blockImages": False, "enabledModels": [], "enableSkillCommands": True,
        "messageCount": st.message_count, "pendingMessageCount": st.pending,
        "workspaceRoot": st.workspace_root,
        "model": model_entry(m.model) if m is not None else None,
        "thinkingLevel": m.reasoning_effort if m is not None else None,
        "steeringMode": "in-flight" if m is not None and m.steering else "one-at-a-time",
        "autoRetryEnabled": m.auto_retry if m is not None else False,
        "defaultProvider": m.provider if m is not None else None,
        "defaultModel": f"{m.provider}/{m.model_id}" if m is not None else None,
        "defaultThinkingLevel": m.reasoning_effort if m is not None else None,
    }
    if m is None:
        err = st.provider_error
        out["providerError"] = {"reason": err.reason, "message": err.message} if err is not None else None
        return out
    out["providerReason"] = m.reason
    if m.effective_reasoning_effort is not None:  # the level requests carry, when the model lacks the requested one
        out["effectiveThinkingLevel"] = m.effective_reasoning_effort
    return out


def token_totals(u: Usage) -> RuntimeTokenTotals:
    """The cumulative token counts (camelCase; the cost goes beside them)."""
    return {"input": u.input_tokens, "output": u.output_tokens, "cacheRead": u.cache_read_tokens,
            "cacheWrite": u.cache_write_tokens, "reasoning": u.reasoning_tokens, "total": u.total_tokens}


def spent(u: Usage) -> SessionEventUsageUpdatedPayload:
    """A session's cumulative usage as `usageUpdated` carries it: ``{tokens, cost}`` (the
    `runtime/stats` figures; `cost` USD rounded to 6 places, null when no call reported one)."""
    return {"tokens": token_totals(u), "cost": round(u.cost, 6) if u.cost is not None else None}


def context_usage(u: ContextUsage) -> RuntimeContextUsage:
    """``{tokens, contextWindow, percent, estimated}``."""
    return {"tokens": u.tokens, "contextWindow": u.context_window, "percent": u.percent, "estimated": u.estimated}


def session_stats(st: SessionStats) -> RuntimeStatsResult:
    """`runtime/stats`: the ids (as `runtime/state`'s), the message counts, `tokens`,
    `autoCompactionEnabled`, `cost` (USD, rounded to 6 places) when reported,
    `contextUsage` when the context window is known."""
    i, c = st.ids, st.counts
    out: RuntimeStatsResult = {
        "sessionFile": i.path, "sessionId": i.persistent_id, "sessionName": i.name, "rpcSessionId": i.id,
        "persistentSessionId": i.persistent_id,
        "userMessages": c.user, "assistantMessages": c.assistant, "toolCalls": c.tool_calls,
        "toolResults": c.tool_results, "totalMessages": c.total,
        "tokens": token_totals(st.tokens), "autoCompactionEnabled": st.auto_compaction,
    }
    if st.tokens.cost is not None:
        out["cost"] = round(st.tokens.cost, 6)
    if st.context_usage is not None:
        out["contextUsage"] = context_usage(st.context_usage)
    return out
