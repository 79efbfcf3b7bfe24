"""workspace/validate, workspace/info."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call


def validate(call: Call) -> dict[str, Any]:
    return {"root": str(call.runtime.resolve_workspace(call.params.text("workspaceRoot")))}


def info(call: Call) -> dict[str, Any]:
    ws = call.runtime.describe_workspace(call.params.text("workspaceRoot"))
    return {"root": str(ws.root), "basename": ws.basename, "writable": ws.writable}
