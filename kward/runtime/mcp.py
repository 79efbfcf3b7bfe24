"""MCP servers and web search as the runtime gives them to turns (`kward.mcp`).

`McpRuntime` keeps one `McpManager` for the servers config `mcp.servers` lists now: when
the setting changes (config/update, an edited config.json), the next use builds a new
manager and closes the old one. `start()` starts the servers never started, in the
background (the runtime calls it when a session opens, `mcp/status` when asked); `tools`
(every turn, `tools/list`) starts them too and retries those that failed or died; nothing
here waits for a server. `tools(base)` is `base` with the tools of the servers that are ready (each as
``mcp__<server>__<tool>``: `kward.tools.mcptools`) and `web_search` unless
`web_search.enabled` is false; `status()` what `mcp/status` and `kward doctor` show.

The web search endpoint (`web_search.url`) is an MCP server too, connected on the first
search and kept (connected again once it failed).

Thread contract: any thread. `_lock` guards the manager and the web search client; it
is never held while connecting, calling or closing.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable

from kward.config.settings import LiveSettings, McpSettings

if TYPE_CHECKING:  # pragma: no cover
    from kward.mcp.client import McpClient
    from kward.mcp.manager import McpManager, ServerStatus
    from kward.tools.base import ToolContext, ToolResult
    from kward.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

SEARCH_TOOL = "web_search_exa"  # the endpoint's search tool
SEARCH_TIMEOUT = 30.0  # seconds a search (or the endpoint's connect) may take
CONNECT_TIMEOUT = 30.0


class McpRuntime:
    def __init__(self, live: LiveSettings, *, client_version: str, changed: Callable[[], None] = lambda: None):
        self._live = live
        self._client_version = client_version
        self._changed = changed
        self._lock = threading.Lock()
        self._servers: tuple[Any, ...] = ()
        self._manager: McpManager | None = None
        self._search_client: McpClient | None = None
        self._search_url: str | None = None
        self._closed = False

    def _settings(self) -> McpSettings | None:
        """The MCP settings now; None while config.json cannot be read (the turn reports
        that; the servers running go on: a file half-written by an editor must not end them)."""
        try:
            return self._live.current().mcp
        except Exception:
            return None

    def manager(self) -> McpManager | None:
        """The manager of the servers configured now (None: none are), built when the
        setting changed (the old one is closed)."""
        settings = self._settings()
        old = None
        with self._lock:
            if self._closed:
                return None
            if settings is None:  # (config.json unreadable now: the servers running stay)
                return self._manager
            servers = settings.servers
            if servers != self._servers or (servers and self._manager is None):
                old, self._manager, self._servers = self._manager, None, servers
                if servers:
                    from kward.mcp.manager import McpManager

                    self._manager = McpManager(list(servers), client_version=self._client_version)
                    self._manager.on_change(self._changed)
            manager = self._manager
        if old is not None:
            old.close()
        return manager

    def start(self, *, retry: bool = False) -> None:
        """Start (in the background) the configured servers never started, and (`retry`)
        those that failed or died."""
        manager = self.manager()
        if manager is not None:
            manager.start(retry=retry)

    def status(self) -> list[ServerStatus]:
        manager = self.manager()
        return manager.status() if manager is not None else []

    def tools(self, base: ToolRegistry) -> ToolRegistry:
        """`base` with the tools of the ready servers and `web_search` (see the module doc);
        starts the servers that are not running (without waiting for them)."""
        from kward import toolcalls
        from kward.tools.mcptools import mcp_spec
        from kward.tools.websearch import web_search_spec

        settings = self._settings() or McpSettings()
        manager = self.manager()
        specs = []
        taken = set(base.names(has_ui=True))
        if settings.web_search_enabled and "web_search" not in taken:
            specs.append(web_search_spec(self.search))
            taken.add("web_search")
        if manager is not None:
            manager.start()
            for tool in manager.tools():
                if tool.name in taken:
                    continue
                taken.add(tool.name)
                toolcalls.remember_mcp_tool(tool.name, tool.server, tool.remote_name, tool.display_name)
                specs.append(mcp_spec(tool, manager.call))
        return base.with_specs(*specs) if specs else base

    # --- web search -----------------------------------------------------------------

    def search(self, query: str, num_results: int, ctx: ToolContext) -> ToolResult:
        """One query to the web search endpoint (`kward.tools.websearch.Search`)."""
        from kward.tools.base import ToolResult

        url = (self._settings() or McpSettings()).web_search_url
        client = self._search_connection(url, ctx)
        if isinstance(client, str):
            return ToolResult.error(client)
        result = client.call_tool(SEARCH_TOOL, {"query": query, "numResults": num_results}, timeout=SEARCH_TIMEOUT,
                                  cancel=ctx.cancel, headers=dict(ctx.headers))
        if result.is_error and not client.alive:
            with self._lock:
                if self._search_client is client:
                    self._search_client = None
            client.close()
        return result

    def _search_connection(self, url: str, ctx: ToolContext) -> McpClient | str:
        """The endpoint's client, connected now when there is none (or it died); the
        error text when it cannot be reached."""
        from kward.mcp.client import McpClient, McpError
        from kward.mcp.config import ServerConfig
        from kward.mcp.http import shown_url

        with self._lock:
            old = self._search_client
            if old is not None and self._search_url == url and old.alive:
                return old
        try:
            fresh = McpClient.open(ServerConfig(name="web_search", url=url), client_version=self._client_version,
                                   timeout=CONNECT_TIMEOUT, headers=dict(ctx.headers))
        except McpError as exc:
            return f"web search endpoint {shown_url(url)} could not be reached: {exc}"
        except Exception as exc:  # a bug in the client: the model reads it, the turn goes on
            log.exception("web search connect failed")
            return f"web search endpoint {shown_url(url)} could not be reached: {type(exc).__name__}"
        with self._lock:
            closing = self._closed
            current = self._search_client
            if closing:
                stale: McpClient | None = fresh
            elif current is old or current is None:  # (no other turn connected meanwhile)
                self._search_client, self._search_url, stale = fresh, url, old
            else:  # another turn connected meanwhile: use its client
                stale, fresh = fresh, current
        if stale is not None:
            stale.close()
        return "kward is shutting down" if closing else fresh

    def close(self) -> None:
        """Close every server and the search endpoint (at shutdown). Idempotent."""
        with self._lock:
            self._closed = True
            manager, self._manager = self._manager, None
            client, self._search_client = self._search_client, None
        if manager is not None:
            manager.close()
        if client is not None:
            client.close()
