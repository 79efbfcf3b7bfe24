"""runtime/state and runtime/stats: the runtime's SessionState and SessionStats, shaped."""

from __future__ import annotations

from typing import Any

from kward.rpc import wire
from kward.rpc.registry import Call
from kward.runtime.state import SessionIds


def _ids(ids: SessionIds) -> dict[str, Any]:
    return {"sessionFile": ids.path, "sessionId": ids.persistent_id, "sessionName": ids.name,
            "rpcSessionId": ids.id, "persistentSessionId": ids.persistent_id}


def state(call: Call) -> dict[str, Any]:
    st = call.runtime.state(call.params.str("sessionId", required=True))
    out: dict[str, Any] = {
        "isStreaming": st.streaming, "isCompacting": False, "followUpMode": "one-at-a-time",
        **_ids(st.ids),
        "autoCompactionEnabled": False, "autoCompactionReserveTokens": st.reserve_tokens,
        "workspaceGuardrailsEnabled": True,
        "hideThinkingBlock": False, "quietStartup": False, "transport": "kward-rpc", "imageAutoResize": False,
        "blockImages": False, "enabledModels": [], "enableSkillCommands": False,
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
        "model": wire.model_entry(m.model), "thinkingLevel": m.reasoning_effort,
        "steeringMode": "in-flight" if m.steering else "one-at-a-time",
        "autoRetryEnabled": m.auto_retry,
        "defaultProvider": m.provider, "defaultModel": f"{m.provider}/{m.model_id}",
        "defaultThinkingLevel": m.reasoning_effort, "providerReason": m.reason,
    })
    if m.effective_reasoning_effort is not None:  # the level requests carry, when the model lacks the requested one
        out["effectiveThinkingLevel"] = m.effective_reasoning_effort
    return out


def stats(call: Call) -> dict[str, Any]:
    st = call.runtime.stats(call.params.str("sessionId", required=True))
    out: dict[str, Any] = {**_ids(st.ids), **st.counts, "tokens": st.tokens}
    if st.cost is not None:
        out["cost"] = round(st.cost, 6)
    if st.context_usage is not None:
        out["contextUsage"] = st.context_usage
    return out
