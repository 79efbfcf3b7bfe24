"""tools/list: the schemas of the tools the model is given over RPC, each with its
`metadata {source, displayName, serverName?, remoteName?}`; mcp/status: the configured
MCP servers (asking starts those not running, in the background)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from kward.rpc.method_table import Call
from kward.rpc.wire.events import tool_metadata

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.tools import McpServerStatus, McpStatusResult, ToolSchema, ToolsListResult

#: a server's state as the wire shows it (Tauren knows available and unavailable)
WIRE_STATUS: dict[str, Literal["available", "starting", "unavailable"]] = {"ready": "available", "starting": "starting", "failed": "unavailable", "disabled": "unavailable"}


def list_(call: Call) -> ToolsListResult:
    # a registry's schema is the function-tool envelope ToolSchema declares (less metadata)
    return {"tools": [cast("ToolSchema", {**schema, "metadata": tool_metadata(schema["function"]["name"])})
                      for schema in call.runtime.tool_schemas()]}


def mcp_status(call: Call) -> McpStatusResult:
    mcp = call.runtime.mcp
    mcp.start()
    servers: list[McpServerStatus] = []
    for server in mcp.status():
        error = server.error if server.enabled else "disabled in config (enabled: false)"
        servers.append({"name": server.name, "transport": "http" if server.transport == "http" else "stdio",
                        "status": WIRE_STATUS[server.status],
                        "toolCount": server.tool_count, "error": error, "enabled": server.enabled})
    return {"servers": servers}
