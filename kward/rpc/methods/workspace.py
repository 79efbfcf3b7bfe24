"""workspace/validate, workspace/info."""

from __future__ import annotations

from kward.rpc.registry import Call
from kward.workspace import describe, resolve_root


def validate(call: Call) -> dict:
    root = resolve_root(call.params.str("workspaceRoot"), call.app.launch_cwd)
    return {"root": str(root)}


def info(call: Call) -> dict:
    ws = describe(resolve_root(call.params.str("workspaceRoot"), call.app.launch_cwd))
    return {"root": str(ws.root), "basename": ws.basename, "writable": ws.writable}
