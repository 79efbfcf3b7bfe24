"""MCP (Model Context Protocol) client: the servers a user configures (config
`mcp.servers`) as tools for the model.

Modules, lowest first: `config` (the `mcp.servers` entries, tool names), `results` (a
``tools/call`` result as a `ToolResult`), `client` (one connection: JSON-RPC, lifecycle,
tools), `stdio` and `http` (the two transports, imported only when a server uses them),
`manager` (every configured server: background start, status, retry, routing).
Standard library only, `requests` on the first HTTP request.
"""

from kward.mcp.client import McpClient, McpError, McpTimeout, McpTool
from kward.mcp.config import ServerConfig, parse_servers, tool_name
from kward.mcp.manager import McpManager, ServerStatus

__all__ = ["McpClient", "McpError", "McpManager", "McpTimeout", "McpTool", "ServerConfig", "ServerStatus",
           "parse_servers", "tool_name"]
