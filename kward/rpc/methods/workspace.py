"""workspace/validate, workspace/info."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.workspace import WorkspaceInfoResult, WorkspaceValidateResult


def validate(call: Call) -> WorkspaceValidateResult:
    return {"root": str(call.runtime.resolve_workspace(call.params.text("workspaceRoot")))}


def info(call: Call) -> WorkspaceInfoResult:
    ws = call.runtime.describe_workspace(call.params.text("workspaceRoot"))
    return {"root": str(ws.root), "basename": ws.basename, "writable": ws.writable}
