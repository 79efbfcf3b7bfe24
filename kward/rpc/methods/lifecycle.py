"""initialize, initialized, shutdown."""

from __future__ import annotations

from typing import Any

from kward import __version__
from kward.errors import InvalidParams, KwardError
from kward.rpc import capabilities
from kward.rpc.registry import METHODS, Call


def initialize(call: Call) -> dict[str, Any]:
    p = call.params
    client_info = p.obj("clientInfo")
    client_caps = p.obj("capabilities", {})
    opt_out = client_caps.get("optOutNotificationMethods", [])
    if not isinstance(opt_out, list) or not all(isinstance(m, str) for m in opt_out):
        raise InvalidParams("Invalid params: 'capabilities.optOutNotificationMethods' must be an array of strings",
                            data={"param": "capabilities.optOutNotificationMethods"})
    experimental = client_caps.get("experimentalApi", False)
    if not isinstance(experimental, bool):
        raise InvalidParams("Invalid params: 'capabilities.experimentalApi' must be true or false",
                            data={"param": "capabilities.experimentalApi"})
    app = call.app
    app.client.info = client_info
    app.client.opt_out = frozenset(opt_out)
    app.client.experimental_api = experimental
    warnings = [{"reason": "invalid_config", "message": w} for w in app.settings.warnings]
    steering = "unsupported"
    try:  # problems are reported, never fatal for initialize
        from kward.providers.registry import STEERING
        from kward.providers.select import choose

        key, _ = choose(app.config.load(), app.env, app.paths.auth_file)
        steering = "native" if STEERING[key] else "unsupported"
    except KwardError as exc:  # an invalid config.json, an unknown provider name
        warnings.append({"reason": exc.reason, "message": exc.message})
    facts = capabilities.RuntimeFacts(
        steering=steering,
        tokens_stats=True,
        cost_stats=True,
        logs_dir=str(app.paths.logs_dir),
        max_frame_bytes=app.settings.max_frame_bytes,
        max_input_chars=app.settings.max_input_chars,
    )
    return _result(facts, warnings)


def _result(facts: capabilities.RuntimeFacts, warnings: list[dict[str, str]]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "protocolVersion": 1,
        "serverName": "kward",
        "serverVersion": __version__,
        "experimental": True,
        "capabilities": capabilities.build(METHODS, facts),
    }
    if warnings:
        result["warnings"] = warnings
    return result


def initialized(call: Call) -> None:
    call.app.client.initialized = True


def shutdown(call: Call) -> dict[str, bool]:
    call.app.request_stop()
    return {"ok": True}
