"""tools/list: the schemas of the tools the model is given over RPC, each with its
`metadata {source, displayName}`."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from kward.rpc.method_table import Call
from kward.rpc.wire.events import tool_metadata

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.tools import ToolSchema, ToolsListResult


def list_(call: Call) -> ToolsListResult:
    # a registry's schema is the function-tool envelope ToolSchema declares (less metadata)
    return {"tools": [cast("ToolSchema", {**schema, "metadata": tool_metadata(schema["function"]["name"])})
                      for schema in call.runtime.tool_schemas()]}
