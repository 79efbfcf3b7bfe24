"""Where a conversation export goes, and writing it there without leaving that place.

Rules (the original's): no path -> beside the session file (``<session>.md`` /
``.html``). An explicit path is resolved against the session's workspace (``~``
expanded); its parent must exist (else DirectoryNotFound naming it and its first missing
part, when what exists of it lies inside the workspace or session directory; nothing is
created), must not be a symlink, and its real path must lie inside the real workspace or
the session's directory. Inside the session directory only
``.md`` and ``.html`` names are allowed (never a ``.jsonl`` or a ``.lock``/``.open``
sidecar). Anything else is PathNotAllowed; a path the OS cannot use (a name too long, no
permission to look) is InvalidParams naming ``path``.

Overwriting: an existing *regular file* is replaced (a client such as
Tauren asks the user in its save dialog first). Never replaced: a symlink, a directory or
any other non-regular file, a session file (wherever it lies), the ``.lock``/``.open``
sidecar of a session file and a directory's ``.kward-sessions.open`` presence file
(`kward.sessions.presence`): the atomic replace would swap the live file for a new inode
and every later append (or every process's presence lock) would be lost. The export is written ``0600`` (it holds the
conversation), whatever the replaced file's mode was.

Race-free writing (`kward.confined`): the checks above use the path once to find the
directory; the write then opens that directory by walking its real path from the root
(workspace or session directory) following no symlink, checks the target name through
that descriptor, and creates the temp file and renames it relative to it. A directory
swapped for a symlink at any moment is refused, never written through.

Temp files are named ``.exp-<pid>-<8 hex>.tmp``; the ones a killed process left (their
pid is dead) are removed by the next export into the same directory.

Pure functions plus one atomic write: safe from any thread; no locks.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from kward.confined import (
    FILE_FLAGS,
    Escape,
    open_below,
    remove_dead_temps,
    replace_file,
    split_below,
)
from kward.errors import DirectoryNotFound, InvalidParams, KwardError, PathNotAllowed
from kward.fsutil import FILE_MODE, read_fd
from kward.sessions.fdretry import out_of_descriptors
from kward.sessions.lines import HEADER_MAX
from kward.sessions.paths import lock_path_for, presence_path_for
from kward.sessions.presence import PRESENCE_NAME
from kward.sessions.reader import header_ok

TEMP_NAME = re.compile(r"\.exp-(?P<pid>[0-9]{1,10})-[0-9a-f]{8}\.tmp")


@dataclass(frozen=True, slots=True)
class ExportTarget:
    """A resolved export destination: `name` in the directory `parent` (components below
    the real directory `root`); `shown` is the path the result reports; `given` the path
    as the client sent it (for messages)."""

    root: str
    parent: tuple[str, ...]
    name: str
    shown: str
    given: str


def resolve_target(path: object, suffix: str, session_suffixes: Iterable[str], *, session_path: str,
                   workspace_root: str) -> ExportTarget:
    """Where an export goes (the module doc's location rules; the overwrite rules are
    applied by `write_export`, through the directory's descriptor)."""
    session_dir = os.path.realpath(os.path.dirname(session_path))
    if path is None or (isinstance(path, str) and not path.strip()):
        base = session_path[:-len(".jsonl")] if session_path.endswith(".jsonl") else session_path
        return ExportTarget(session_dir, (), os.path.basename(base) + suffix, base + suffix, "")
    if not isinstance(path, str):
        raise InvalidParams("path must be a string", data={"param": "path"})
    if "\x00" in path:
        raise InvalidParams("path contains a NUL byte", data={"param": "path"})
    target = os.path.normpath(os.path.join(workspace_root, os.path.expanduser(path.strip())))
    parent, name = os.path.split(target)
    if name in ("", ".", ".."):
        raise PathNotAllowed(f"Export path is not a file name: {path}", data={"path": target})
    if os.path.islink(parent) or not os.path.isdir(parent):
        raise _missing_directory(path, target, parent, session_dir, workspace_root)
    try:
        real_parent = os.path.realpath(parent)
    except OSError:  # a component changing under it (a symlink swapped in and out)
        raise _refused(path, target) from None
    in_session_dir = split_below(session_dir, real_parent) is not None
    root = session_dir if in_session_dir else os.path.realpath(workspace_root)
    parts = split_below(root, real_parent)
    if parts is None:
        raise _refused(path, target)
    shown = os.path.join(real_parent, name)
    if in_session_dir and not name.lower().endswith(tuple(session_suffixes)):
        raise PathNotAllowed(f"Only .md and .html exports may be written in the session directory: {path}",
                             data={"path": shown})
    return ExportTarget(root, tuple(parts), name, shown, path)


def write_export(target: ExportTarget, data: bytes) -> None:
    """Atomically write `data` at `target` through a confined directory descriptor;
    removes dead processes' temp files there first. Raises PathNotAllowed when the
    directory changed into something refused or the name may not be replaced."""
    try:
        node = open_below(target.root, list(target.parent), follow=False)
    except (Escape, FileNotFoundError, NotADirectoryError):
        raise _refused(target.given, target.shown) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a component is a symlink now (swapped in since the check)
            raise _refused(target.given, target.shown) from None
        raise _unusable(target, exc) from None
    with node:
        dir_fd = node.fd
        if dir_fd is None or not node.is_dir:
            raise _refused(target.given, target.shown)
        _check_replaceable(dir_fd, target)
        remove_dead_temps(dir_fd, TEMP_NAME)
        replace_file(dir_fd, target.name, data, FILE_MODE, f".exp-{os.getpid()}-{os.urandom(4).hex()}.tmp")


def _check_replaceable(dir_fd: int, target: ExportTarget) -> None:
    """Refuse a name that is not absent or a regular file, or that holds (or is the
    sidecar of) a session file."""
    try:
        st = os.stat(target.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _unusable(target, exc) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refused(target.given, target.shown)  # a symlink, a directory, a device...
    if target.name == PRESENCE_NAME:  # replacing it would drop every process's presence locks
        raise PathNotAllowed(f"Export would overwrite the sessions' presence file: {target.given or target.shown}",
                             data={"path": target.shown})
    base = os.path.splitext(target.name)[0]
    sidecar = target.name in (lock_path_for(Path(base)).name, presence_path_for(Path(base)).name)
    if (st is not None and _holds_session(dir_fd, target.name)) or (sidecar and _holds_session(dir_fd, base)):
        raise PathNotAllowed(f"Export would overwrite a session file: {target.given or target.shown}",
                             data={"path": target.shown})


def _holds_session(dir_fd: int, name: str) -> bool:
    """True when the regular file `name` of `dir_fd` starts like a session file (the rule
    of `reader.SessionReader`, read through the descriptor)."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if out_of_descriptors(exc):
            raise  # cannot tell: never guess "not a session"
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = read_fd(fd, HEADER_MAX)
    except OSError:
        return False
    finally:
        os.close(fd)
    return header_ok(data)


def _missing_directory(given: str, target: str, parent: str, session_dir: str, workspace_root: str) -> Exception:
    """DirectoryNotFound when `parent` does not exist but its nearest existing ancestor (a
    directory, symlinks resolved) lies inside the workspace or the session directory; PathNotAllowed for
    anything else (a dangling symlink, a file, a place outside: nothing is said about what
    is there). Only "no such file" (or an ancestor that is no directory) means missing: a
    path the OS refuses to look at (EACCES, ...) is answered as `_unusable_path`."""
    try:
        missing = parent
        above = os.path.dirname(parent)
        while above != missing and not _exists(above):
            missing, above = above, os.path.dirname(above)
        if _exists(missing) or not stat.S_ISDIR(os.stat(above).st_mode):
            return _refused(given, target)
    except OSError as exc:
        return _unusable_path(given, target, exc)
    try:
        real_above = os.path.realpath(above)
    except OSError:
        return _refused(given, target)
    if split_below(session_dir, real_above) is None and split_below(os.path.realpath(workspace_root),
                                                                    real_above) is None:
        return _refused(given, target)
    return DirectoryNotFound(f"Export directory does not exist: {parent} ({missing} is missing); create it first",
                             data={"path": target, "directory": parent, "missing": missing})


def _exists(path: str) -> bool:
    """Whether something is at `path` (no symlink followed); False only when nothing is
    (FileNotFoundError, NotADirectoryError); any other OSError is raised."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def _refused(given: str, shown: str) -> PathNotAllowed:
    return PathNotAllowed(f"Export path outside workspace or session directory: {given or shown}",
                          data={"path": shown})


def _unusable(target: ExportTarget, exc: OSError) -> Exception:
    return _unusable_path(target.given, target.shown, exc)


def _unusable_path(given: str, shown: str, exc: OSError) -> Exception:
    """InvalidParams naming ``path``; `exc` itself when the process is out of descriptors
    (answered ``too_many_open_files``: nothing is wrong with the path)."""
    if out_of_descriptors(exc):
        return exc
    return InvalidParams(f"Export path is not usable: {given or shown}: {exc.strerror or exc}",
                         data={"param": "path", "path": shown})
