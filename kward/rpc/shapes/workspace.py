"""workspace/validate, workspace/info (docs/protocol.md "Workspace methods")."""

from __future__ import annotations

from typing import Annotated, TypedDict

from kward.rpc.shapes.base import Doc, Entry


class WorkspaceRootParams(TypedDict, total=False):
    """The params of `workspace/validate` and `workspace/info`."""

    workspaceRoot: Annotated[str | None, Doc("the directory (relative: to the launch directory; `~` expanded); "
                                             "default: the launch directory")]


class WorkspaceValidateResult(TypedDict):
    root: Annotated[str, Doc("the real path")]


class WorkspaceInfoResult(TypedDict):
    root: Annotated[str, Doc("the real path")]
    basename: str
    writable: Annotated[bool, Doc("this process may write there")]


METHODS = {
    "workspace/validate": Entry(WorkspaceRootParams, WorkspaceValidateResult),
    "workspace/info": Entry(WorkspaceRootParams, WorkspaceInfoResult),
}
