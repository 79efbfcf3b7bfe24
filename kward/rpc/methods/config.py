"""config/read, config/update."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call, Unredacted

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.config import ConfigFile


def read(call: Call) -> ConfigFile | Unredacted:
    """Redacted like every response, unless `redacted: false` asks for the stored values."""
    redacted = call.params.flag("redacted", True)
    result: ConfigFile = {"path": str(call.runtime.config.path), "config": call.runtime.read_config()}
    return result if redacted else Unredacted(result)


def update(call: Call) -> ConfigFile:
    """The merged config, redacted (by the server, like every response)."""
    values = call.params.mapping("values", required=True)
    return {"path": str(call.runtime.config.path), "config": call.runtime.update_config(values)}
