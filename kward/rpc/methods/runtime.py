"""runtime/state and runtime/stats."""

from __future__ import annotations

from typing import Any

from kward.agent.prompt import build_instructions
from kward.agent.stats import context_usage, message_counts, token_totals
from kward.errors import KwardError
from kward.rpc.registry import Call


def _ids(session: Any) -> dict[str, Any]:
    return {"sessionFile": session.path, "sessionId": session.persistent_id, "sessionName": session.name,
            "rpcSessionId": session.id, "persistentSessionId": session.persistent_id}


def state(call: Call) -> dict[str, Any]:
    app = call.app
    session = app.sessions.get(call.params.str("sessionId", required=True))
    running = app.turns.running_turn(session) if app.has_service("turns") else None
    pending = app.turns.pending_count(session) if app.has_service("turns") else 0
    config = app.config.load()
    compaction = config.get("compaction") if isinstance(config.get("compaction"), dict) else {}
    out: dict[str, Any] = {
        "isStreaming": running is not None, "isCompacting": False, "followUpMode": "one-at-a-time",
        **_ids(session),
        "autoCompactionEnabled": False, "autoCompactionReserveTokens": compaction.get("reserve_tokens", 16384),
        "workspaceGuardrailsEnabled": True,
        "hideThinkingBlock": False, "quietStartup": False, "transport": "kward-rpc", "imageAutoResize": False,
        "blockImages": False, "enabledModels": [], "enableSkillCommands": False,
        "messageCount": message_counts(session.entry_messages())["totalMessages"], "pendingMessageCount": pending,
        "workspaceRoot": session.workspace_root,
    }
    try:
        selection = app.engine.selection()
    except KwardError as exc:  # e.g. an unreadable script: the session state is still worth showing
        out.update({"model": None, "thinkingLevel": None, "steeringMode": "one-at-a-time", "autoRetryEnabled": False,
                    "defaultProvider": None, "defaultModel": None, "defaultThinkingLevel": None,
                    "providerError": {"reason": exc.reason, "message": exc.message}})
        return out
    model = app.models.current(selection)
    out.update({
        "model": model, "thinkingLevel": model["reasoningEffort"],
        "steeringMode": "in-flight" if selection.provider.supports_steering else "one-at-a-time",
        "autoRetryEnabled": selection.key != "scripted",
        "defaultProvider": selection.label, "defaultModel": f"{selection.label}/{selection.model}",
        "defaultThinkingLevel": model["reasoningEffort"], "providerReason": selection.reason,
    })
    if "effectiveReasoningEffort" in model:  # the level requests carry, when the model lacks the requested one
        out["effectiveThinkingLevel"] = model["effectiveReasoningEffort"]
    return out


def stats(call: Call) -> dict[str, Any]:
    app = call.app
    session = app.sessions.get(call.params.str("sessionId", required=True))
    messages = session.entry_messages()
    out: dict[str, Any] = {**_ids(session), **message_counts(messages)}
    totals, cost = token_totals(messages)
    out["tokens"] = totals
    if cost is not None:
        out["cost"] = round(cost, 6)
    try:
        selection = app.engine.selection()
        window = app.models.current(selection)["contextWindow"]
    except KwardError:
        window = None
    usage = context_usage(messages, build_instructions(app.paths.config_dir, session.workspace_root), window)
    if usage is not None:
        out["contextUsage"] = usage
    return out
