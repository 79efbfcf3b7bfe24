"""The configured MCP servers of one kward process: started in the background, their
tools listed, calls routed, failures reported and retried.

`McpManager(servers, client_version=...)` starts nothing; `start()` starts every enabled,
usable server that is not ready or starting, each on a thread of its own
(``kward-mcp-start``): connect, handshake, ``tools/list``. Nothing waits for it: `tools()`
is the tools of the servers that are ready now, `status()` every server's state. A server
that fails to start, or dies later (`McpClient` reports it lost), is ``failed`` with the
reason, its tools gone; the next `start()` (every turn makes one) tries it again. A
server's ``notifications/tools/list_changed`` lists its tools again (on a thread of its
own). Failures go to kward's log (once per distinct reason), not to stderr: `mcp/status` and
`kward doctor` show them. `on_change(callback)` is told whenever a server's state or tools changed (on the
thread that saw it; the callback must not block).

`call(name, arguments, ...)` calls the tool the model knows as `name` with the server's
``toolTimeoutSeconds``; a server that is not ready is an error result, never a wait.

Thread contract: any thread. `_lock` guards every server's state and the thread set; it is
never held while connecting, calling, closing or calling back. `close()` closes every
client and joins every thread this manager started; afterwards `start()` does nothing.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, Mapping

from kward.cancel import CancelToken
from kward.diagnostics import SHOWN_ELSEWHERE
from kward.mcp.client import McpClient, McpError, McpTool, Progress
from kward.mcp.config import ServerConfig
from kward.model import ToolResult

__all__ = ["START_TIMEOUT", "McpManager", "ServerState", "ServerStatus"]

log = logging.getLogger("kward.mcp")

START_TIMEOUT = 30.0  # seconds a server may take to answer initialize and tools/list
JOIN_SECONDS = 5.0

ServerState = Literal["disabled", "starting", "ready", "failed"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as `mcp/status` and `kward doctor` show it."""

    name: str
    transport: str
    status: ServerState
    tool_count: int
    error: str | None
    enabled: bool


class _Server:
    __slots__ = ("config", "state", "error", "client", "tools", "logged", "started")

    def __init__(self, config: ServerConfig):
        self.config = config
        self.state: ServerState = "disabled" if not config.enabled else "failed" if config.problem else "starting"
        self.error: str | None = f"config: {config.problem}" if config.problem else None
        self.client: McpClient | None = None
        self.tools: tuple[McpTool, ...] = ()
        self.logged: str | None = None  # the last failure logged (each is logged once)
        self.started = False  # `start()` started it at least once


class McpManager:
    def __init__(self, servers: Iterable[ServerConfig], *, client_version: str,
                 start_timeout: float = START_TIMEOUT):
        self._client_version = client_version
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self._servers = [_Server(config) for config in servers]
        self._threads: set[threading.Thread] = set()
        self._listeners: list[Callable[[], None]] = []
        self._closed = False

    def on_change(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(callback)

    def _changed(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for callback in listeners:
            try:
                callback()
            except Exception:
                log.exception("an MCP change listener failed")

    # --- starting ---------------------------------------------------------------------

    def start(self, *, retry: bool = True) -> None:
        """Start (in the background) every usable server that is neither ready nor
        starting: the first time, and (`retry`) again after it failed or died."""
        started = False
        with self._lock:
            if self._closed:
                return
            for server in self._servers:
                if server.config.problem or not server.config.enabled:
                    continue
                if server.started and (server.state != "failed" or not retry):
                    continue
                server.started = True
                server.state, server.client = "starting", None
                self._spawn(self._connect, server, name="kward-mcp-start")
                started = True
        if started:
            self._changed()

    def _spawn(self, target: Callable[..., None], *args: Any, name: str) -> None:
        """Under `_lock`: run `target(*args)` on an owned thread (joined by `close`)."""
        def run() -> None:
            try:
                target(*args)
            finally:
                with self._lock:
                    self._threads.discard(thread)

        thread = threading.Thread(target=run, name=name, daemon=True)
        self._threads.add(thread)
        thread.start()

    def _connect(self, server: _Server) -> None:
        """A start thread: connect `server` and list its tools."""
        client: McpClient | None = None

        def lost(reason: str) -> None:
            self._lost(server, client, reason)

        def tools_changed() -> None:
            self._list_again(server, client)

        client = McpClient(server.config, client_version=self._client_version, on_lost=lost,
                           on_tools_changed=tools_changed)
        with self._lock:
            if self._closed:
                return
            server.client = client
        error: str | None = None
        tools: list[McpTool] = []
        try:
            client.connect(self._start_timeout)
            tools = client.list_tools(self._start_timeout)
        except McpError as exc:
            error = str(exc)
        except Exception as exc:  # a bug: the server is failed, kward goes on
            log.exception("MCP server %s could not be started", server.config.name)
            error = f"{type(exc).__name__}: {exc}"
        stale = False
        first_time = False
        with self._lock:
            if server.client is not client or self._closed:
                stale = True
            elif error is not None:
                server.state, server.error, server.client, server.tools = "failed", error, None, ()
                first_time, server.logged = server.logged != error, error
            else:
                server.state, server.error, server.tools, server.logged = "ready", None, tuple(tools), None
        if error is not None or stale:
            client.close()
            if first_time:
                log.warning("MCP server %s is unavailable: %s", server.config.name, error, extra=SHOWN_ELSEWHERE)
        if not stale:
            self._changed()

    def _lost(self, server: _Server, client: McpClient | None, reason: str) -> None:
        """A client's transport thread: its connection ended."""
        with self._lock:
            if client is None or server.client is not client:
                return
            was = server.state
            server.state, server.error, server.client, server.tools = "failed", reason, None, ()
            first_time, server.logged = server.logged != reason, reason
        if first_time:
            log.warning("MCP server %s %s: %s", server.config.name,
                        "went away" if was == "ready" else "is unavailable", reason, extra=SHOWN_ELSEWHERE)
        client.close()
        self._changed()

    def _list_again(self, server: _Server, client: McpClient | None) -> None:
        """A client's transport thread: the server's tool list changed."""
        def relist() -> None:
            if client is None:
                return
            try:
                tools = client.list_tools(self._start_timeout)
            except McpError as exc:
                log.warning("MCP server %s: its tools could not be listed again: %s", server.config.name, exc)
                return
            with self._lock:
                if server.client is not client or server.state != "ready":
                    return
                server.tools = tuple(tools)
            self._changed()

        with self._lock:
            if not self._closed:
                self._spawn(relist, name="kward-mcp-relist")

    # --- what turns and clients see ---------------------------------------------------

    def status(self) -> list[ServerStatus]:
        with self._lock:
            return [ServerStatus(s.config.name, s.config.transport, s.state, len(s.tools), s.error,
                                 s.config.enabled) for s in self._servers]

    def tools(self) -> list[McpTool]:
        """The tools of every ready server, in config order."""
        with self._lock:
            return [tool for s in self._servers if s.state == "ready" for tool in s.tools]

    def find(self, name: str) -> tuple[ServerConfig, McpTool] | None:
        with self._lock:
            for server in self._servers:
                for tool in server.tools:
                    if tool.name == name:
                        return server.config, tool
        return None

    def call(self, name: str, arguments: Mapping[str, Any], *, cancel: CancelToken | None = None,
             on_progress: Progress | None = None, headers: Mapping[str, str] | None = None) -> ToolResult:
        """Call the tool the model knows as `name` (see the module doc). Raises Canceled."""
        with self._lock:
            found = next(((s, t) for s in self._servers for t in s.tools if t.name == name), None)
            if found is None:
                known = next((s for s in self._servers if name.startswith(f"mcp__{s.config.name}__")), None)
                client = None
            else:
                known, client = found[0], found[0].client
        if found is None or client is None or not client.alive:
            server = found[0] if found is not None else known
            if server is None:
                return ToolResult.error(f"no MCP server offers the tool {name}")
            return ToolResult.error(f"MCP server {server.config.name} is not available"
                                    + (f": {server.error}" if server.error else ""))
        server, tool = found
        return client.call_tool(tool.remote_name, arguments, timeout=server.config.tool_timeout, cancel=cancel,
                                on_progress=on_progress, headers=headers)

    def close(self) -> None:
        """Close every server and join every thread. Idempotent."""
        with self._lock:
            self._closed = True
            clients = [s.client for s in self._servers if s.client is not None]
            for server in self._servers:
                server.client = None
        for client in clients:
            client.close()
        while True:
            with self._lock:
                threads = [t for t in self._threads if t is not threading.current_thread()]
            if not threads:
                break
            for thread in threads:
                thread.join(JOIN_SECONDS)
                if thread.is_alive():
                    log.warning("MCP: %s did not end", thread.name)
                    with self._lock:
                        self._threads.discard(thread)
