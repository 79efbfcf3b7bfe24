"""One connection to one MCP server: the JSON-RPC session over a transport (stdio or
Streamable HTTP), the lifecycle and the two tool methods.

`McpClient(config, ...)` is not connected yet; `connect(timeout)` starts the transport and
makes the handshake (``initialize`` with `PROTOCOL_VERSION` and kward's client info, then
``notifications/initialized``); `McpClient.open` does both. After it:

- `list_tools(timeout)` pages through ``tools/list`` (``nextCursor``), at most
  `MAX_TOOLS` tools in `MAX_PAGES` pages, each as an `McpTool` under its model name;
- `call_tool(remote, arguments, ...)` sends ``tools/call`` with a progress token, feeds
  ``notifications/progress`` for it to `on_progress(message, progress, total)` (on the
  transport's receiving thread: it must not block), and maps the answer
  (`kward.mcp.results`). A call that runs past its timeout, or whose cancel token fires,
  is cancelled at the server (``notifications/cancelled``); the first is an error
  result, the second raises `Canceled`. A server that goes away is an error result too.

What the server sends on its own: ``ping`` is answered, any other request gets "method
not found" (kward offers no client features); ``notifications/tools/list_changed`` calls
`on_tools_changed()`; ``notifications/message`` is logged. When the transport is lost
(the process exited, the HTTP session expired) every waiting request fails with
`McpError`, `alive` turns False and `on_lost(reason)` is called, once.

Thread contract: any thread may make requests, concurrently; `_lock` guards the pending
table and the id counter and is never held while sending or calling back. Callbacks run
on the transport's threads. `close()` is idempotent, may run on any thread (a transport
thread included) and ends the transport's threads (joined).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.mcp.config import ServerConfig, tool_name
from kward.model import ToolResult

__all__ = ["MAX_TOOLS", "PROTOCOL_VERSION", "McpClient", "McpError", "McpTimeout", "McpTool", "Transport"]

log = logging.getLogger("kward.mcp")

PROTOCOL_VERSION = "2025-06-18"
#: the versions kward speaks; a server answering another one is refused
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_TOOLS = 1000
MAX_PAGES = 100
MAX_DESCRIPTION = 8000
METHOD_NOT_FOUND = -32601

Receive = Callable[[Any], None]
Lost = Callable[[str], None]
Progress = Callable[[Any, Any, Any], None]


class McpError(Exception):
    """The server could not be reached, answered with an error, or went away."""


class McpTimeout(McpError):
    """A request got no answer in time (it was cancelled at the server)."""


class Transport(Protocol):
    """How messages travel (`kward.mcp.stdio`, `kward.mcp.http`). `start` begins
    delivering what the server sends to `receive` (any JSON value) and calls `lost` once
    when the connection ends; `send` raises McpError when the message cannot go out;
    `abandon(id)` stops waiting for the answer to request `id`; `set_protocol_version`
    tells it the negotiated version."""

    kind: str

    def start(self, receive: Receive, lost: Lost) -> None: ...

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str] | None = None) -> None: ...

    def abandon(self, request_id: int) -> None: ...

    def set_protocol_version(self, version: str) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool one server lists: `name` is the model's name (`tool_name`), `remote_name`
    the server's; `read_only` when the server annotated it ``readOnlyHint: true``."""

    name: str
    server: str
    remote_name: str
    display_name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False


class _Pending:
    __slots__ = ("done", "message", "error", "progress")

    def __init__(self, progress: Progress | None):
        self.done = threading.Event()
        self.message: dict[str, Any] | None = None
        self.error: str | None = None
        self.progress = progress


def make_transport(config: ServerConfig) -> Transport:
    """The transport `config` names (imported only when used)."""
    if config.url is not None:
        from kward.mcp.http import HttpTransport

        return HttpTransport(config.url, dict(config.headers), idle_timeout=max(300.0, config.tool_timeout + 30))
    from kward.mcp.stdio import StdioTransport

    return StdioTransport(config)


class McpClient:
    def __init__(self, config: ServerConfig, *, client_version: str, transport: Transport | None = None,
                 on_lost: Lost | None = None, on_tools_changed: Callable[[], None] | None = None):
        self.config = config
        self._client_version = client_version
        self._transport = transport if transport is not None else make_transport(config)
        self._on_lost = on_lost
        self._on_tools_changed = on_tools_changed
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._progress: dict[str, _Pending] = {}
        self._alive = False
        self._lost_reason: str | None = None
        self._closed = False
        self.protocol_version: str | None = None
        self.server_info: Mapping[str, Any] = {}
        self.capabilities: Mapping[str, Any] = {}

    @classmethod
    def open(cls, config: ServerConfig, *, client_version: str, timeout: float,
             headers: Mapping[str, str] | None = None, **kwargs: Any) -> McpClient:
        """A connected client (see `connect`); closed again when the handshake fails."""
        client = cls(config, client_version=client_version, **kwargs)
        try:
            client.connect(timeout, headers=headers)
        except BaseException:
            client.close()
            raise
        return client

    @property
    def alive(self) -> bool:
        return self._alive and not self._closed

    @property
    def lost_reason(self) -> str | None:
        return self._lost_reason

    def connect(self, timeout: float, *, headers: Mapping[str, str] | None = None) -> None:
        """Start the transport and make the handshake. Raises McpError (the server could
        not be started, did not answer in `timeout` seconds, or speaks another version)."""
        if self._closed:
            raise McpError("closed")
        try:
            self._transport.start(self._receive, self._lost)
        except OSError as exc:
            what = self.config.command[0] if self.config.command else self.config.url
            raise McpError(f"could not start {what}: {exc.strerror or exc}") from None
        self._alive = True

        result = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "kward", "version": self._client_version},
        }, timeout=timeout, headers=headers)
        version = result.get("protocolVersion")
        if version not in SUPPORTED_VERSIONS:
            raise McpError(f"speaks MCP protocol version {str(version)[:40]!r}; kward speaks {PROTOCOL_VERSION}")
        self.protocol_version = version
        self._transport.set_protocol_version(version)
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        caps = result.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        self.notify("notifications/initialized", None, headers=headers)

    # --- requests ---------------------------------------------------------------------

    def request(self, method: str, params: Mapping[str, Any] | None, *, timeout: float,
                cancel: CancelToken | None = None, headers: Mapping[str, str] | None = None,
                progress: Progress | None = None) -> dict[str, Any]:
        """Send one request and wait for its result object. Raises McpError (an error
        answer, a lost server), McpTimeout (no answer in `timeout` seconds: cancelled at
        the server) or Canceled (`cancel` fired: cancelled at the server)."""
        pending = _Pending(progress)
        with self._lock:
            if not self.alive:
                raise McpError(self._lost_reason or "not connected")
            request_id = next(self._ids)
            self._pending[request_id] = pending
            token = None
            if progress is not None:
                token = f"kward-{request_id}"
                self._progress[token] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        body = dict(params or {})
        if token is not None:
            body["_meta"] = {**(body.get("_meta") or {}), "progressToken": token}
        if params is not None or token is not None:
            message["params"] = body
        forget = cancel.on_cancel(pending.done.set) if cancel is not None else (lambda: None)
        try:
            self._transport.send(message, headers=headers)
            if not pending.done.wait(timeout):
                if method != "initialize":  # (the spec: initialize is never cancelled)
                    self._cancel_at_server(request_id, f"timed out after {timeout:g} s", headers)
                raise McpTimeout(f"no answer to {method} in {timeout:g} s")
            if pending.message is None and pending.error is None and cancel is not None and cancel.cancelled:
                self._cancel_at_server(request_id, "the turn was cancelled", headers)
                raise Canceled("Canceled.")
        finally:
            forget()
            with self._lock:
                self._pending.pop(request_id, None)
                if token is not None:
                    self._progress.pop(token, None)
        if pending.error is not None:
            raise McpError(pending.error)
        assert pending.message is not None
        error = pending.message.get("error")
        if error is not None:
            text = error.get("message") if isinstance(error, dict) else None
            code = error.get("code") if isinstance(error, dict) else None
            suffix = f" (code {code})" if isinstance(code, int) and not isinstance(code, bool) else ""
            raise McpError(f"{str(text)[:2000] if text else 'an error'}{suffix}")
        result = pending.message.get("result")
        return result if isinstance(result, dict) else {}

    def notify(self, method: str, params: Mapping[str, Any] | None, *,
               headers: Mapping[str, str] | None = None) -> None:
        """Send one notification (nothing is awaited); a lost server is not an error here."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        try:
            self._transport.send(message, headers=headers)
        except McpError as exc:
            log.debug("MCP server %s: %s not sent: %s", self.config.name, method, exc)

    def _cancel_at_server(self, request_id: int, reason: str, headers: Mapping[str, str] | None) -> None:
        if self.alive:
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason}, headers=headers)
        self._transport.abandon(request_id)

    def list_tools(self, timeout: float) -> list[McpTool]:
        """Every tool the server lists (see the module doc). Raises McpError."""
        deadline = time.monotonic() + timeout
        tools: list[McpTool] = []
        seen: set[str] = set()
        cursor: object = None
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            result = self.request("tools/list", params, timeout=max(0.05, deadline - time.monotonic()))
            listed = result.get("tools")
            if not isinstance(listed, list):
                raise McpError("tools/list answered without a tools list")
            for raw in listed:
                tool = self._tool(raw)
                if tool is not None and tool.remote_name not in seen and len(tools) < MAX_TOOLS:
                    seen.add(tool.remote_name)
                    tools.append(tool)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return tools

    def _tool(self, raw: object) -> McpTool | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            return None
        remote = raw["name"][:256]
        schema = raw.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            schema = {"type": "object", "properties": {}}
        found = raw.get("annotations")
        annotations: dict[str, Any] = found if isinstance(found, dict) else {}
        title = raw.get("title") or annotations.get("title")
        description = raw.get("description")
        return McpTool(name=tool_name(self.config.name, remote), server=self.config.name, remote_name=remote,
                       display_name=title[:200] if isinstance(title, str) and title else remote,
                       description=description[:MAX_DESCRIPTION] if isinstance(description, str) else "",
                       input_schema=schema, read_only=annotations.get("readOnlyHint") is True)

    def call_tool(self, remote: str, arguments: Mapping[str, Any], *, timeout: float,
                  cancel: CancelToken | None = None, on_progress: Progress | None = None,
                  headers: Mapping[str, str] | None = None) -> ToolResult:
        """The result of ``tools/call`` (see the module doc). Raises Canceled only."""
        from kward.mcp.results import tool_result

        label = f"{remote} ({self.config.name})"
        try:
            result = self.request("tools/call", {"name": remote, "arguments": dict(arguments)}, timeout=timeout,
                                  cancel=cancel, headers=headers, progress=on_progress or _ignore)
        except McpTimeout:
            return ToolResult.error(f"MCP tool {label} timed out after {timeout:g} s; the call was cancelled")
        except McpError as exc:
            return ToolResult.error(f"MCP tool {label}: {exc}")
        return tool_result(result, label)

    # --- what the server sends --------------------------------------------------------

    def _receive(self, message: Any) -> None:
        """Transport thread: one message (or a batch) from the server."""
        if isinstance(message, list):
            for item in message[:1000]:
                self._receive(item)
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._answer_request(message)
            else:
                self._notification(method, message.get("params"))
            return
        request_id = message.get("id")
        if ("result" in message or "error" in message) and isinstance(request_id, int):
            with self._lock:
                pending = self._pending.get(request_id)
            if pending is not None and not pending.done.is_set():
                pending.message = message
                pending.done.set()

    def _answer_request(self, message: dict[str, Any]) -> None:
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
        if message.get("method") == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {"code": METHOD_NOT_FOUND, "message": "kward does not offer this"}
        try:
            self._transport.send(answer)
        except McpError:
            pass

    def _notification(self, method: str, params: object) -> None:
        params = params if isinstance(params, dict) else {}
        if method == "notifications/progress":
            token = params.get("progressToken")
            with self._lock:
                pending = self._progress.get(token) if isinstance(token, str) else None
            if pending is not None and pending.progress is not None and not pending.done.is_set():
                try:
                    pending.progress(params.get("message"), params.get("progress"), params.get("total"))
                except Exception:
                    log.exception("MCP server %s: a progress report could not be handled", self.config.name)
        elif method == "notifications/tools/list_changed":
            if self._on_tools_changed is not None:
                self._on_tools_changed()
        elif method == "notifications/message":
            log.info("MCP server %s: %s", self.config.name, str(params.get("data"))[:2000])

    def _lost(self, reason: str) -> None:
        """Transport thread: the connection ended."""
        with self._lock:
            if self._lost_reason is not None:
                return
            self._lost_reason = reason
            self._alive = False
            waiting = list(self._pending.values())
        for pending in waiting:
            if not pending.done.is_set():
                pending.error = reason
                pending.done.set()
        if self._on_lost is not None and not self._closed:
            self._on_lost(reason)

    def close(self) -> None:
        """End the connection (the stdio server's process group with it). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._alive = False
            if self._lost_reason is None:
                self._lost_reason = "closed"
            waiting = list(self._pending.values())
        for pending in waiting:
            pending.error = pending.error or "the connection was closed"
            pending.done.set()
        self._transport.close()


def _ignore(message: Any, progress: Any, total: Any) -> None:
    """A progress callback that keeps the token (servers may report) but drops reports."""
