"""MCP tools as the model's tools: `mcp_spec` makes a `ToolSpec` of a tool an MCP server
lists (`kward.mcp.McpTool`), whose handler calls it through the server's manager.

The call itself runs on a thread of its own (started and joined by the handler), because
the server's progress reports (``notifications/progress``) arrive on the MCP client's
reader thread: they are fed to the call's `LiveOutput` with ``flush=False`` and the
turn's thread, waiting for the call, publishes them (`LiveOutput.poll`), so only the
turn's thread ever emits turn events and the reader never waits for the client.

A cancel of the turn reaches the call through `ctx.cancel` (the manager sends
``notifications/cancelled`` and raises `Canceled`); the handler returns when the call does.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from kward.cancel import CancelToken
from kward.tools.base import Args, ToolContext, ToolResult, ToolSpec

if TYPE_CHECKING:  # pragma: no cover
    from kward.mcp.client import McpTool

MAX_DESCRIPTION = 4000  # characters of a server's tool description the model is given

Progress = Callable[[Any, Any, Any], None]


class Caller(Protocol):
    """What calls an MCP tool by its model name (`kward.mcp.McpManager.call`)."""

    def __call__(self, name: str, arguments: Mapping[str, Any], *, cancel: CancelToken | None = ...,
                 on_progress: Progress | None = ..., headers: Mapping[str, str] | None = ...) -> ToolResult: ...


def mcp_spec(tool: McpTool, call: Caller) -> ToolSpec:
    """The model's tool `tool.name`: the server's description and input schema; read-only
    when the server annotated it so (approval then never asks)."""
    description = (tool.description or tool.display_name or tool.remote_name)[:MAX_DESCRIPTION]

    def handler(args: Args, ctx: ToolContext) -> ToolResult:
        return run_call(lambda on_progress: call(tool.name, dict(args.data), cancel=ctx.cancel,
                                                 on_progress=on_progress, headers=dict(ctx.headers)), ctx)

    return ToolSpec(name=tool.name, description=description, properties={}, required=(), handler=handler,
                    read_only=tool.read_only, parameters=tool.input_schema)


def run_call(start: Callable[[Progress], ToolResult], ctx: ToolContext) -> ToolResult:
    """`start(on_progress)` on a thread of its own, while this (the turn's) thread
    publishes the progress it reports to `ctx.live`; its result, or what it raised."""
    live = ctx.live
    wake = threading.Event()
    outcome: list[ToolResult | BaseException] = []

    def on_progress(message: Any, progress: Any, total: Any) -> None:
        if live is not None:
            live.progress(message if isinstance(message, str) else None, _figure(progress), _figure(total),
                          flush=False)
            wake.set()

    def target() -> None:
        try:
            outcome.append(start(on_progress))
        except BaseException as exc:  # handed to the turn's thread
            outcome.append(exc)
        finally:
            wake.set()

    thread = threading.Thread(target=target, name="kward-mcp-call", daemon=True)
    thread.start()
    try:
        while True:
            wake.clear()  # (before the poll: a report stored after it sets it again)
            due = live.poll() if live is not None else None
            if outcome:
                break
            wake.wait(due)
    finally:
        thread.join()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result  # Canceled, or a bug the registry reports as the call's error
    return result


def _figure(value: Any) -> float | None:
    """A progress figure as a number (a server's wrong type: none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
