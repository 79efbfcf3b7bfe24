"""config/read, config/update."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call, Unredacted


def read(call: Call) -> dict[str, Any] | Unredacted:
    """Redacted like every response, unless `redacted: false` asks for the stored values."""
    redacted = call.params.flag("redacted", True)
    result = {"path": str(call.runtime.config.path), "config": call.runtime.read_config()}
    return result if redacted else Unredacted(result)


def update(call: Call) -> dict[str, Any]:
    """The merged config, redacted (by the server, like every response)."""
    values = call.params.mapping("values", required=True)
    return {"path": str(call.runtime.config.path), "config": call.runtime.update_config(values)}
