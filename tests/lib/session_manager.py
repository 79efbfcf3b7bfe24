"""A `SessionManager` on temp directories, used in this process, and the payloads of its
session handles as the protocol shows them (`kward.rpc.wire.sessions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kward.sessions.manager import SessionManager


def new_manager(tmp_path: Path, name: str = "ws") -> tuple[SessionManager, Path]:
    """A manager keeping sessions under `tmp_path/home/.kward/sessions`, and its default
    workspace `tmp_path/<name>` (created)."""
    workspace = tmp_path / name
    workspace.mkdir(exist_ok=True)
    return SessionManager(tmp_path / "home" / ".kward" / "sessions", default_workspace=str(workspace)), workspace


def payload(handle: Any) -> dict[str, Any]:
    """The session payload of a SessionHandle now (as the protocol shows it); an
    OpenSession, which has no RPC id, is shown under the id "(none)"."""
    import dataclasses

    from kward.rpc.wire import sessions as wire

    info = handle.info()
    return dict(wire.session(info if info.id is not None else dataclasses.replace(info, id="(none)")))


def opened(handle: Any) -> dict[str, Any]:
    """The session payload a SessionHandle was opened with."""
    from kward.rpc.wire import sessions as wire

    return wire.session(handle.opened)
