"""The read-before-write rule: a conversation may write or edit a file only after it read
it (or wrote it itself). The conversation's read set holds the realpaths of such files.

Two places apply the rule and must agree: the tools that add to the set and check it
(`kward.tools.reading`, `kward.tools.writing`), and the session replay that rebuilds the
set from a session file (`kward.sessions.replay`). What they share is here: the tools
whose successful results count (`READ_TOOLS`), and how a path the model gave becomes the
realpath the set holds (`realpath_below`, the resolution the tools' confinement does:
`kward.confined`, symlinks inside the workspace followed).

Pure functions over the file system: safe from any thread.
"""

from __future__ import annotations

import os

from kward.confined import Escape, open_below, split_below

#: Tools whose successful result puts the file's realpath in the read set.
READ_TOOLS = frozenset({"read_file", "write_file", "edit_file"})


def realpath_below(root: str, path: str) -> str | None:
    """The realpath of the existing file or directory `path` names inside the workspace
    `root` (a relative path is taken relative to it), or None when there is none: it is
    missing, leaves the workspace (lexically or through a symlink), or cannot be named."""
    if not isinstance(path, str) or "\x00" in path:
        return None
    root = os.path.normpath(root)
    parts = split_below(root, path)
    if parts is None:
        return None
    try:
        with open_below(root, parts) as node:
            return node.path
    except (Escape, OSError, ValueError):
        return None
