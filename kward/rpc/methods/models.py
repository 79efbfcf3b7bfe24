"""models/*, reasoning/set, openrouter/catalog, runtime/updateSetting, runtime/reload."""

from __future__ import annotations

from typing import Any

from kward.errors import InvalidParams
from kward.rpc.registry import Call


def list_(call: Call) -> dict[str, Any]:
    app = call.app
    return app.models.list(app.engine.selection(), refresh=call.params.bool("refresh", False))


def openrouter_catalog(call: Call) -> dict[str, Any]:
    app = call.app
    return app.models.openrouter_catalog(app.engine.openrouter_provider(), app.engine.selection())


def current(call: Call) -> dict[str, Any]:
    app = call.app
    return app.models.current(app.engine.selection())


def set_model(call: Call) -> dict[str, Any]:
    app, p = call.app, call.params
    app.models.set_model(app.engine.selection(), p.str("model", required=True, non_empty=True), p.str("provider"))
    return app.models.current(app.engine.selection(), load=True)


def set_reasoning(call: Call) -> dict[str, Any]:
    app = call.app
    app.models.set_effort(app.engine.selection(), call.params.str("effort", required=True))
    return app.models.current(app.engine.selection(), load=True)


def update_setting(call: Call) -> dict[str, Any]:
    app, p = call.app, call.params
    app.sessions.get(p.str("sessionId", required=True))
    setting = p.str("settingId", required=True)
    value = p.str("value", required=True)
    if setting == "defaultModel":
        provider, model = app.models.set_default_model(value)
        message = f"Default model set to {provider}/{model}."
        if app.env.get("KWARD_PROVIDER"):
            message += " KWARD_PROVIDER in the environment still chooses the provider of this process."
    elif setting == "defaultThinkingLevel":
        effort = app.models.set_effort(app.engine.selection(), value, param="value")
        message = f"Default thinking level set to {effort}."
        current = app.models.current(app.engine.selection(), load=True)
        if "effectiveReasoningEffort" in current:
            message += f" {current['id']} uses {current['effectiveReasoningEffort']}."
    else:
        raise InvalidParams(f"Unsupported setting: {setting}; use defaultModel or defaultThinkingLevel",
                            data={"param": "settingId"})
    return {"applied": "live", "message": message}


def reload(call: Call) -> dict[str, Any]:
    app = call.app
    app.sessions.get(call.params.str("sessionId", required=True))
    app.models.catalog.clear()
    app.engine.reload()
    return {"ok": True, "message": "Resources reloaded."}
