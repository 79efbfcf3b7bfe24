"""Workspace confinement: every path a tool touches goes through here.

Rules (the original's, plus parent creation for writes):

- A relative path is joined to the workspace realpath; an absolute path is taken as is.
- The lexically normalised absolute path must lie inside the root, and so must its
  realpath (a symlink file or a symlinked parent directory pointing out is refused).
- A path that does not exist yet (write_file) is judged by the realpath of its nearest
  existing ancestor, which must be a directory inside the root; the missing directories
  are created later under that realpath.
- Creating and writing walk from the root one component at a time (`open_confined_dir`:
  ``O_NOFOLLOW`` descriptors, ``mkdir``/``rename`` relative to them), so a component
  swapped for a symlink after the checks above is refused, never followed out.

Violations raise `kward.errors.PathNotAllowed` whose message is
``path outside workspace: <path as given>``; the registry shows it as ``Error: ...``.
Pure functions over the filesystem, safe from any thread; no locks.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from kward.errors import PathNotAllowed
from kward.tools.base import ToolError


def is_inside(path: str, root: str) -> bool:
    """True when absolute, normalised `path` equals `root` or lies below it."""
    if root == os.sep:
        return path.startswith(os.sep)
    return path == root or path.startswith(root + os.sep)


def _outside(path: str) -> PathNotAllowed:
    return PathNotAllowed(f"path outside workspace: {path}", data={"path": path})


def lexical_path(root: Path, path: str) -> str:
    """The absolute, normalised form of `path` (no symlinks resolved); confined."""
    if "\x00" in path:
        raise ToolError(f"path contains a NUL byte: {path!r}")
    lexical = os.path.normpath(os.path.join(str(root), path))
    if not is_inside(lexical, str(root)):
        raise _outside(path)
    return lexical


def resolve_existing(root: Path, path: str) -> str:
    """The realpath of an existing file or directory inside the workspace.

    Raises `PathNotAllowed` on escape and `ToolError` ``no such file or directory: <p>``
    when nothing is there.
    """
    lexical = lexical_path(root, path)
    if not os.path.lexists(lexical):
        raise ToolError(f"no such file or directory: {path}")
    real = os.path.realpath(lexical)
    if not is_inside(real, str(root)):
        raise _outside(path)
    return real


def resolve_for_write(root: Path, path: str) -> str:
    """Where a write to `path` lands: the realpath of an existing entry, or, for a new
    file, the realpath of its nearest existing ancestor joined with the missing parts."""
    lexical = lexical_path(root, path)
    if os.path.lexists(lexical):
        return resolve_existing(root, path)
    missing = [os.path.basename(lexical)]
    ancestor = os.path.dirname(lexical)
    while not os.path.lexists(ancestor):
        missing.append(os.path.basename(ancestor))
        ancestor = os.path.dirname(ancestor)
    real_ancestor = os.path.realpath(ancestor)
    if not is_inside(real_ancestor, str(root)):
        raise _outside(path)
    if not os.path.isdir(real_ancestor):
        raise ToolError(f"not a directory: {os.path.relpath(ancestor, root)}")
    return os.path.join(real_ancestor, *reversed(missing))


def open_confined_dir(root: Path, directory: str, path: str, *, create: bool = False) -> int:
    """A descriptor of `directory` (absolute, realpath form, inside `root`) opened by walking
    from the root one component at a time without following symlinks; missing components
    are created (``0777 & ~umask``) when `create`. The caller closes it.

    Raises `PathNotAllowed` when a component is (now) a symlink or the path leaves the
    root, `ToolError` when a component is not a directory.
    """
    rel = os.path.relpath(directory, str(root))
    parts = [] if rel == os.curdir else rel.split(os.sep)
    if parts and parts[0] == os.pardir:
        raise _outside(path)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(str(root), flags)
    try:
        for index, part in enumerate(parts):
            if create:
                try:
                    os.mkdir(part, dir_fd=fd)  # never follows a symlink named `part`
                except FileExistsError:
                    pass
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP or _is_symlink(part, fd):
                    raise _outside(path) from None
                if exc.errno == errno.ENOTDIR:
                    raise ToolError(f"not a directory: {'/'.join(parts[:index + 1])}") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def ensure_parent_dirs(root: Path, target: str, path: str) -> None:
    """Create the missing parent directories of `target` inside the root, checking every
    component on the way (see `open_confined_dir`)."""
    os.close(open_confined_dir(root, os.path.dirname(target), path, create=True))


def relative_display(root: Path, real: str) -> str:
    """`real` relative to the root, with `/` separators ('.' for the root itself)."""
    rel = os.path.relpath(real, str(root))
    return rel.replace(os.sep, "/")
