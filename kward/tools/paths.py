"""Workspace confinement: every path a tool touches goes through here.

Rules (the original's, plus parent creation for writes):

- A relative path is joined to the workspace realpath; an absolute path is taken as is.
  The lexically normalised absolute path must lie inside the root.
- Every file or directory is then reached by `kward.confined.open_below`: a walk from the
  root, one ``O_NOFOLLOW`` component at a time, checking what was opened. A symlink met on
  the way is resolved textually and walked again the same way, so a symlink (file or
  directory) that points inside keeps working, while one pointing out, or a component
  swapped for such a symlink at any moment of the call, is refused. Callers work through
  the descriptor they got (`open_existing`), never through the path again.
- A path that does not exist yet (write_file) lands where its nearest existing ancestor
  resolves, which must be a directory inside the root; creating and writing then walk
  that resolved path from the root following no symlink at all (`open_confined_dir`).

Violations raise `kward.errors.PathNotAllowed` whose message is
``path outside workspace: <path as given>``; the registry shows it as ``Error: ...``.
Other failures of the walk are `ToolError`s (``no such file or directory: <p>``,
``not a directory: <p>``, ``too many levels of symbolic links: <p>``, or the OS's text).
Pure functions over the filesystem, safe from any thread; no locks.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kward.confined import Escape, Node, open_below, split_below
from kward.errors import PathNotAllowed
from kward.tools.base import ToolError


def is_inside(path: str, root: str) -> bool:
    """True when absolute, normalised `path` equals `root` or lies below it."""
    if root == os.sep:
        return path.startswith(os.sep)
    return path == root or path.startswith(root + os.sep)


def outside(path: str) -> PathNotAllowed:
    """The error for `path` (as given) leaving the workspace."""
    return PathNotAllowed(f"path outside workspace: {path}", data={"path": path})


def lexical_path(root: Path, path: str) -> str:
    """The absolute, normalised form of `path` (no symlinks resolved); confined."""
    if "\x00" in path:
        raise ToolError(f"path contains a NUL byte: {path!r}")
    lexical = os.path.normpath(os.path.join(str(root), path))
    if not is_inside(lexical, str(root)):
        raise outside(path)
    return lexical


def _walk(root: Path, parts: list[str] | None, path: str, *, file_in_the_way: str = "not a directory",
          **options: bool) -> Node:
    """`open_below` with its failures as this module's errors, named by `path` (the path
    as the model gave it). `file_in_the_way` words a file met where a directory must be:
    ``not a directory`` names the resolved prefix, anything else is used with `path`."""
    if parts is None:
        raise outside(path)
    try:
        return open_below(str(root), parts, **options)
    except Escape:
        raise outside(path) from None
    except NotADirectoryError as exc:
        where = exc.filename if file_in_the_way == "not a directory" else path
        raise ToolError(f"{file_in_the_way}: {where}") from None
    except ValueError:  # a name the OS cannot encode
        raise ToolError(f"no such file or directory: {path}") from None
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise ToolError(f"no such file or directory: {path}") from None
        if exc.errno == errno.ELOOP:
            raise ToolError(f"too many levels of symbolic links: {path}") from None
        raise ToolError(f"{exc.strerror or exc}: {path}") from None


def open_existing(root: Path, path: str) -> Node:
    """The existing file or directory `path` names, opened confined (symlinks inside the
    workspace followed); the caller closes the node. An entry that is neither a file nor
    a directory comes back without a descriptor (``node.fd is None``).

    Raises `PathNotAllowed` on escape, `ToolError` ``no such file or directory: <p>`` when
    nothing is there (a file in the middle of the path included).
    """
    return _walk(root, split_below(str(root), lexical_path(root, path)), path,
                 file_in_the_way="no such file or directory")


def resolve_for_write(root: Path, path: str) -> str:
    """Where a write to `path` lands: the resolved path of an existing entry, or, for a
    new file, the resolved path of its nearest existing ancestor (a directory inside the
    root) joined with the missing parts."""
    with _walk(root, split_below(str(root), lexical_path(root, path)), path, missing_ok=True) as node:
        return node.path


def open_resolved(root: Path, real: str, path: str, *, missing_ok: bool = False) -> Node:
    """Open `real`, a path resolved by this module, walking it from the root without
    following any symlink (one swapped in since it was resolved is refused)."""
    return _walk(root, split_below(str(root), real), path, follow=False, missing_ok=missing_ok)


def open_confined_dir(root: Path, directory: str, path: str, *, create: bool = False) -> int:
    """A descriptor of `directory` (a resolved path inside `root`) opened by walking from
    the root without following symlinks; missing components are created
    (``0777 & ~umask``) when `create`. The caller closes it.

    Raises `PathNotAllowed` when a component is (now) a symlink or the path leaves the
    root, `ToolError` when a component is not a directory.
    """
    node = _walk(root, split_below(str(root), directory), path, follow=False, create=create)
    if not node.is_dir or node.fd is None:
        node.close()
        raise ToolError(f"not a directory: {'/'.join(node.parts)}")
    return node.fd


def ensure_parent_dirs(root: Path, target: str, path: str) -> None:
    """Create the missing parent directories of `target` inside the root, checking every
    component on the way (see `open_confined_dir`)."""
    os.close(open_confined_dir(root, os.path.dirname(target), path, create=True))
