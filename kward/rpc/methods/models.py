"""models/*, reasoning/set, openrouter/catalog, runtime/updateSetting, runtime/reload."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call
from kward.rpc.wire import models as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.models import ModelEntry, ModelListing
    from kward.rpc.shapes.runtime import RuntimeReloadResult, RuntimeUpdateSettingResult


def list_(call: Call) -> ModelListing:
    return wire.model_listing(call.runtime.list_models(refresh=call.params.flag("refresh", False)))


def openrouter_catalog(call: Call) -> ModelListing:
    return wire.model_listing(call.runtime.openrouter_catalog())


def current(call: Call) -> ModelEntry:
    return wire.model_entry(call.runtime.current_model())


def set_model(call: Call) -> ModelEntry:
    p = call.params
    return wire.model_entry(call.runtime.set_model(p.text("model", required=True, non_empty=True), p.text("provider")))


def set_reasoning(call: Call) -> ModelEntry:
    return wire.model_entry(call.runtime.set_reasoning(call.params.text("effort", required=True)))


def update_setting(call: Call) -> RuntimeUpdateSettingResult:
    p, rt = call.params, call.runtime
    session_id = p.text("sessionId", required=True)
    rt.session(session_id)
    message = rt.update_setting(p.text("settingId", required=True), p.text("value", required=True), session_id)
    return {"applied": "live", "message": message}


def reload(call: Call) -> RuntimeReloadResult:
    call.runtime.session(call.params.text("sessionId", required=True))
    call.runtime.reload()
    return {"ok": True, "message": "Resources reloaded."}
