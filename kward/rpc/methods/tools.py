"""tools/list: the schemas of the tools the model is given over RPC, each with its
`metadata {source, displayName}`."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call
from kward.rpc.wire.events import tool_metadata


def list_(call: Call) -> dict[str, Any]:
    return {"tools": [{**schema, "metadata": tool_metadata(schema["function"]["name"])}
                      for schema in call.runtime.tool_schemas()]}
