"""tools/list: the schemas of the tools the model is given over RPC."""

from __future__ import annotations

from kward.rpc.registry import Call


def list_(call: Call) -> dict:
    return {"tools": call.runtime.tool_schemas()}
