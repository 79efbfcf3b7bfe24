"""The `runtime/state` and `runtime/stats` results of the runtime's session values
(`kward.runtime.state`, `kward.agent.stats`). Keys as docs/protocol.md and the original
kward's. Pure functions, any thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kward.rpc.wire.models import model_entry

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.stats import ContextUsage, MessageCounts
    from kward.model import Usage
    from kward.runtime.state import SessionIds, SessionState, SessionStats


def ids(i: SessionIds) -> dict[str, Any]:
    """``{sessionFile, sessionId, sessionName, rpcSessionId, persistentSessionId}``
    (`sessionId` is the file's id, as the original kward's)."""
    return {"sessionFile": i.path, "sessionId": i.persistent_id, "sessionName": i.name,
            "rpcSessionId": i.id, "persistentSessionId": i.persistent_id}


def session_state(st: SessionState) -> dict[str, Any]:
    """`runtime/state`: the session, its turns and the model the next turn uses (with
    `providerError` when no provider could be chosen)."""
    out: dict[str, Any] = {
        "isStreaming": st.streaming, "isCompacting": st.compacting, "followUpMode": "one-at-a-time",
        **ids(st.ids),
        "autoCompactionEnabled": st.auto_compaction, "autoCompactionReserveTokens": st.reserve_tokens,
        "workspaceGuardrailsEnabled": True,
        "hideThinkingBlock": False, "quietStartup": False, "transport": "kward-rpc", "imageAutoResize": False,
        "blockImages": False, "enabledModels": [], "enableSkillCommands": True,
        "messageCount": st.message_count, "pendingMessageCount": st.pending,
        "workspaceRoot": st.workspace_root,
    }
    m = st.model
    if m is None:
        err = st.provider_error
        out.update({"model": None, "thinkingLevel": None, "steeringMode": "one-at-a-time", "autoRetryEnabled": False,
                    "defaultProvider": None, "defaultModel": None, "defaultThinkingLevel": None,
                    "providerError": {"reason": err.reason, "message": err.message} if err is not None else None})
        return out
    out.update({
        "model": model_entry(m.model), "thinkingLevel": m.reasoning_effort,
        "steeringMode": "in-flight" if m.steering else "one-at-a-time",
        "autoRetryEnabled": m.auto_retry,
        "defaultProvider": m.provider, "defaultModel": f"{m.provider}/{m.model_id}",
        "defaultThinkingLevel": m.reasoning_effort, "providerReason": m.reason,
    })
    if m.effective_reasoning_effort is not None:  # the level requests carry, when the model lacks the requested one
        out["effectiveThinkingLevel"] = m.effective_reasoning_effort
    return out


def message_counts(c: MessageCounts) -> dict[str, int]:
    return {"userMessages": c.user, "assistantMessages": c.assistant, "toolCalls": c.tool_calls,
            "toolResults": c.tool_results, "totalMessages": c.total}


def token_totals(u: Usage) -> dict[str, int]:
    """The cumulative token counts (camelCase; the cost goes beside them)."""
    return {"input": u.input_tokens, "output": u.output_tokens, "cacheRead": u.cache_read_tokens,
            "cacheWrite": u.cache_write_tokens, "reasoning": u.reasoning_tokens, "total": u.total_tokens}


def spent(u: Usage) -> dict[str, Any]:
    """A session's cumulative usage as `usageUpdated` carries it: ``{tokens, cost}`` (the
    `runtime/stats` figures; `cost` USD rounded to 6 places, null when no call reported one)."""
    return {"tokens": token_totals(u), "cost": round(u.cost, 6) if u.cost is not None else None}


def context_usage(u: ContextUsage) -> dict[str, Any]:
    """``{tokens, contextWindow, percent, estimated}``."""
    return {"tokens": u.tokens, "contextWindow": u.context_window, "percent": u.percent, "estimated": u.estimated}


def session_stats(st: SessionStats) -> dict[str, Any]:
    """`runtime/stats`: the ids, the message counts, `tokens`, `autoCompactionEnabled`,
    `cost` (USD, rounded to 6 places) when reported, `contextUsage` when the context window
    is known."""
    out: dict[str, Any] = {**ids(st.ids), **message_counts(st.counts), "tokens": token_totals(st.tokens),
                           "autoCompactionEnabled": st.auto_compaction}
    if st.tokens.cost is not None:
        out["cost"] = round(st.tokens.cost, 6)
    if st.context_usage is not None:
        out["contextUsage"] = context_usage(st.context_usage)
    return out
