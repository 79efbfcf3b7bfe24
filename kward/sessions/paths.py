"""Where session files live and how user-given paths are resolved.

Layout (the original kward's)::

    <config>/sessions/--<workspace path, leading slash removed, / \\ : replaced by ->--/
        <UTC ISO time with ms, ':' -> '-'>_<uuid>.jsonl

A session file being created has a hidden temp name there first (`CREATING`).

Pure functions over the file system (they stat, never write): safe from any thread.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from kward.errors import InvalidParams, PathNotAllowed

_SEPARATORS = re.compile(r"[/\\:]")

#: The temp names of `kward.sessions.store.SessionFile.create`:
#: ``.<name>.jsonl.<pid>.<8 hex>.creating`` (never listed as sessions;
#: `fsutil.remove_stale_files` removes those of dead processes).
CREATING = re.compile(r"^\..+\.jsonl\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.creating$")


def safe_cwd(workspace_root: str) -> str:
    """``/home/u/proj`` -> ``--home-u-proj--``."""
    path = os.path.abspath(workspace_root)
    if path[:1] in ("/", "\\"):
        path = path[1:]
    return f"--{_SEPARATORS.sub('-', path)}--"


def workspace_session_dir(sessions_dir: Path, workspace_root: str) -> Path:
    """The directory holding every session of one workspace (not created here)."""
    return Path(sessions_dir) / safe_cwd(workspace_root)


def resolve_session_path(path: str | os.PathLike[str], workspace_root: str) -> str:
    """Resolve a session path (``~`` expanded, relative to the workspace) to an existing file.

    A missing path is InvalidParams; something that exists but is not a regular file (a
    directory, a FIFO, a device) is PathNotAllowed: reading it could block or mislead.
    The returned path is the real path (symlinks resolved), so one file has one key.
    """
    raw = os.fspath(path)
    if not raw.strip():
        raise InvalidParams("Session path is empty", data={"param": "path"})
    if "\0" in raw:
        raise InvalidParams("Session path contains a NUL byte", data={"param": "path"})
    expanded = os.path.expanduser(raw)
    full = os.path.normpath(os.path.join(workspace_root, expanded))
    try:
        st = os.stat(full)
    except FileNotFoundError:
        raise InvalidParams(f"Session file not found: {full}", data={"path": full}) from None
    except OSError as exc:
        raise PathNotAllowed(f"Session file cannot be read: {full}: {exc.strerror}", data={"path": full}) from None
    if not stat.S_ISREG(st.st_mode):
        raise PathNotAllowed(f"Session path is not a regular file: {full}", data={"path": full})
    return os.path.realpath(full)


def resume_root(session_path: str, header_cwd: str, sessions_dir: Path, requested: str | None,
                default: str) -> str:
    """The workspace root a resumed session works in (where its tools read and write).

    A session file is data anybody can craft, so its header's ``cwd`` alone never decides:
    with a `requested` root (the client's ``workspaceRoot``, a real path) that root is
    used, whatever the header says. Without one, the header's ``cwd`` is used only when
    kward itself filed the session there: the file lies in `sessions_dir` in the folder
    named after that ``cwd`` (`workspace_session_dir`) and the directory exists. Any other
    file (an arbitrary path, a copy, a header naming another place) opens in `default`
    (the launch directory).
    """
    if requested is not None:
        return requested
    if header_cwd and os.path.isabs(header_cwd) and "\0" not in header_cwd:
        filed = os.path.dirname(session_path) == str(workspace_session_dir(sessions_dir, header_cwd))
        if filed and os.path.isdir(header_cwd):
            return os.path.realpath(header_cwd)
    return default


def lock_path_for(session_path: Path) -> Path:
    """The sidecar file whose flock is the session's turn lock."""
    return session_path.with_name(session_path.name + ".lock")


def presence_path_for(session_path: Path) -> Path:
    """The sidecar earlier versions held a shared flock on while the session was open
    (now `kward.sessions.presence`); removed with the session, never an export target."""
    return session_path.with_name(session_path.name + ".open")
