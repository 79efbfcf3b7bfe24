"""tools/list: the tools the model is given; mcp/status: the configured MCP servers
(docs/protocol.md "Tools")."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, OPEN, Doc, Entry, shape
from kward.rpc.shapes.events import ToolMetadata


class ToolSchemaFunction(TypedDict):
    name: str
    description: str
    parameters: Annotated[dict[str, Any], OPEN, Doc("the JSON Schema of the tool's arguments")]


class ToolSchema(TypedDict):
    """A tool as the model is given it (without `metadata`)."""

    type: Literal["function"]
    function: ToolSchemaFunction
    metadata: ToolMetadata


class ToolsListResult(TypedDict):
    tools: list[ToolSchema]


@shape(stability=ADDITION)
class McpServerStatus(TypedDict):
    """One configured MCP server (config `mcp.servers`)."""

    name: Annotated[str, Doc("its name in config mcp.servers")]
    transport: Literal["stdio", "http"]
    status: Annotated[Literal["available", "starting", "unavailable"],
                      Doc("available: its tools are the model's; starting: not ready yet; unavailable: disabled, "
                          "misconfigured, failed to start or died (tried again on the next turn)")]
    toolCount: Annotated[int, Doc("tools it lists (0 unless available)")]
    error: Annotated[str | None, Doc("why it is unavailable (null otherwise)")]
    enabled: Annotated[bool, Doc("false: switched off with enabled: false")]


@shape(stability=ADDITION)
class McpStatusResult(TypedDict):
    servers: Annotated[list[McpServerStatus], Doc("in config order")]


METHODS = {
    "tools/list": Entry(None, ToolsListResult),
    "mcp/status": Entry(None, McpStatusResult, ADDITION),
}
