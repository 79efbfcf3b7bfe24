"""Workspace roots: resolve and describe the directory a client works in.

Pure functions over the filesystem; safe from any thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

from kward.errors import InvalidParams


class WorkspaceInfo(NamedTuple):
    root: Path
    basename: str
    writable: bool


def resolve_root(path: str | None, default: Path) -> Path:
    """The real path of an existing directory; `path` is relative to `default` if relative.

    `default` must already be a real path (the server resolves its launch directory once),
    so the common no-path case costs one stat. Raises InvalidParams (`workspace_not_found`
    / `not_a_directory`) with a clear message.
    """
    candidate = default
    if path is not None:
        if "\0" in path:
            raise InvalidParams("Invalid params: 'workspaceRoot' contains a NUL byte", data={"param": "workspaceRoot"})
        candidate = Path(os.path.expanduser(path))
        if not candidate.is_absolute():
            candidate = default / candidate
    try:
        real = Path(os.path.realpath(candidate)) if path is not None else default
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        raise InvalidParams(f"Workspace path does not exist: {candidate}", reason="workspace_not_found",
                            data={"path": str(candidate)}) from None
    except (OSError, ValueError) as exc:  # a name too long, a loop of symlinks, no permission, bad text
        detail = exc.strerror if isinstance(exc, OSError) else "not a valid file name"
        raise InvalidParams(f"Workspace path is not usable: {candidate}: {detail}",
                            reason="workspace_not_found", data={"path": str(candidate)}) from None
    if not stat.S_ISDIR(mode):
        raise InvalidParams(f"Workspace path is not a directory: {candidate}", reason="not_a_directory",
                            data={"path": str(candidate)})
    return real


def describe(root: Path) -> WorkspaceInfo:
    return WorkspaceInfo(root=root, basename=root.name or str(root), writable=os.access(root, os.W_OK))
