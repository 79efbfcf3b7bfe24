"""MCP (Model Context Protocol) client: the servers a user configures (config
`mcp.servers`) as tools for the model.

Modules, lowest first: `config` (the `mcp.servers` entries, tool names), `results` (a
``tools/call`` result as a `ToolResult`), `client` (one connection: JSON-RPC, lifecycle,
tools), `stdio` and `http` (the two transports, imported only when a server uses them),
`manager` (every configured server: background start, status, retry, routing).
Standard library only, `requests` on the first HTTP request.

Import what you use from its module (``from kward.mcp.manager import McpManager``): this
package imports nothing, so reading config `mcp.servers` loads only `config`.
"""
