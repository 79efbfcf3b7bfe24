"""tools/list: the schemas of the tools the model is given over RPC."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call


def list_(call: Call) -> dict[str, Any]:
    return {"tools": call.runtime.tool_schemas()}
