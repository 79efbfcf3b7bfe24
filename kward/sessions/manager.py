"""The process-wide registry of open RPC sessions and every ``sessions/*`` operation.

Knows nothing of JSON-RPC: methods take Python values, raise the classes of
``kward.errors`` and return OpenSession objects or the plain dicts the protocol shows.

Locking: ``SessionManager._lock`` (a ``threading.Lock``) guards only the two maps
``_sessions`` (RPC id -> OpenSession) and ``_by_path`` (real file path -> RPC id, with a
reservation marker while a resume loads). It is never held during file I/O: a resume
reserves the path, loads without the lock, then registers. Per-session state is guarded by
each OpenSession's own lock (see ``kward.sessions.session``). Any thread may call any
method; slow ones (resume of a big file, clone, export, transcript, list) belong on worker
threads.

Cleanup rule (issue 3, point 5): sessions this process opened that are idle, empty and
unnamed are closed and their files deleted when the client creates, resumes, clones or
forks into another session, on close, and at `shutdown_all`; never a session with content
or a name, never one whose turn lock another process holds. Listing deletes nothing.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from kward.errors import InvalidParams, SessionLocked, SessionNotFound
from kward.workspace import resolve_root
from kward.sessions.export import export_conversation
from kward.sessions.listing import DEFAULT_LIMIT, list_sessions
from kward.sessions.messages import entry_id, full_text, compact, parse_entry_id, role_of
from kward.sessions.paths import resolve_session_path, workspace_session_dir
from kward.sessions.opening import create_session, derive_session, load_session
from kward.sessions.session import OpenSession
from kward.sessions.transcript import normalize_transcript, tool_details_from_file, wanted_tool_call_ids

log = logging.getLogger(__name__)

_RESERVED = "<loading>"


class SessionManager:
    """Open sessions of this process. `sessions_dir` is ``Paths.sessions_dir``;
    `default_workspace` is used when a call names no workspace (default: the cwd)."""

    def __init__(self, sessions_dir: Path, default_workspace: str | None = None):
        self.sessions_dir = Path(os.path.realpath(sessions_dir))  # one file, one path key
        self.default_workspace = Path(os.path.realpath(default_workspace or os.getcwd()))
        self._lock = threading.Lock()
        self._sessions: dict[str, OpenSession] = {}
        self._by_path: dict[str, str] = {}

    # --- registry --------------------------------------------------------------------

    def get(self, session_id: Any) -> OpenSession:
        """The open session with that RPC id; SessionNotFound (``Unknown session: <id>``)."""
        with self._lock:
            session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None or session.closed:
            raise SessionNotFound(str(session_id))
        return session

    def sessions(self) -> list[OpenSession]:
        with self._lock:
            return list(self._sessions.values())

    def _register(self, session: OpenSession) -> None:
        with self._lock:
            self._sessions[session.id] = session
            self._by_path[session.path] = session.id

    def _unregister(self, session: OpenSession) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)
            if self._by_path.get(session.path) == session.id:
                del self._by_path[session.path]

    def workspace(self, workspace_root: str | None) -> str:
        """The real path of an existing workspace directory (relative to the default one);
        InvalidParams ``workspace_not_found`` / ``not_a_directory`` otherwise."""
        return str(resolve_root(workspace_root, self.default_workspace))

    # --- opening ---------------------------------------------------------------------

    def create(self, workspace_root: str | None = None, name: str | None = None, *,
               model: str | None = None, reasoning_effort: str | None = None) -> OpenSession:
        """A new persisted session (named when `name` is non-empty)."""
        root = self.workspace(workspace_root)
        session = create_session(self.sessions_dir, root, name=name, model=model,
                                 reasoning_effort=reasoning_effort)
        self._register(session)
        self.cleanup_unused(keep=session)
        return session

    def resume(self, path: str, workspace_root: str | None = None) -> OpenSession:
        """Open an existing session file under a new RPC id.

        `path` is resolved against the workspace root. SessionLocked when this process
        already has the file open (another process having it open is fine); InvalidParams
        when it is missing or not a kward session; PathNotAllowed when not a regular file.
        """
        root = self.workspace(workspace_root)
        real = resolve_session_path(path, root)
        with self._lock:
            holder = self._by_path.get(real)
            if holder is not None:
                if holder == _RESERVED:
                    raise SessionLocked(f"Session file is being opened by another request: {real}",
                                        data={"path": real})
                raise SessionLocked(f"Session file is already open as RPC session {holder}: {real}",
                                    data={"sessionId": holder, "path": real})
            self._by_path[real] = _RESERVED
        try:
            session = load_session(real, root)
        except BaseException:
            with self._lock:
                self._by_path.pop(real, None)
            raise
        self._register(session)
        self.cleanup_unused(keep=session)
        return session

    def rename(self, session_id: str, name: str | None) -> OpenSession:
        session = self.get(session_id)
        session.rename(name)
        return session

    def clone(self, session_id: str) -> OpenSession:
        """A new independent session with every non-system live message and the read paths."""
        source = self.get(session_id)
        messages, read_paths = source.snapshot()
        session = derive_session(self.sessions_dir, source, messages, read_paths)
        self._register(session)
        self.cleanup_unused(keep=session)
        return session

    def fork_messages(self, session_id: str) -> list[dict[str, str]]:
        """``[{entryId: "message:<n>", text}]`` for the user messages of the live branch."""
        session = self.get(session_id)
        session.refresh()
        return [{"entryId": entry_id(i), "text": compact(full_text(m))}
                for i, m in enumerate(session.entry_messages()) if role_of(m) == "user"]

    def fork(self, session_id: str, entry: Any) -> tuple[OpenSession, str]:
        """A new session holding the messages before the chosen user message; returns it
        and that message's text (for the composer)."""
        source = self.get(session_id)
        index = parse_entry_id(entry)
        if index is None:
            raise InvalidParams(f"Invalid entryId: {entry}", data={"param": "entryId"})
        source.refresh()
        messages = source.entry_messages()
        if index >= len(messages):
            raise InvalidParams(f"Unknown fork entryId: {entry}", data={"param": "entryId"})
        chosen = messages[index]
        if role_of(chosen) != "user":
            raise InvalidParams(f"Entry is not forkable: {entry}", data={"param": "entryId"})
        session = derive_session(self.sessions_dir, source, messages[:index])
        self._register(session)
        self.cleanup_unused(keep=session)
        return session, full_text(chosen)

    # --- reading ---------------------------------------------------------------------

    def list(self, workspace_root: str | None = None, limit: int | None = DEFAULT_LIMIT) -> list[dict[str, Any]]:
        """Recent sessions of a workspace as a tree. This process's own idle, empty,
        unnamed sessions are left out (as the original); nothing is deleted."""
        root = self.workspace(workspace_root)
        skip = []
        for s in self.sessions():
            if s.workspace_root == root and not s.busy:
                s.refresh()  # another process may have written to it
                if s.is_empty:
                    skip.append(s.path)
        return list_sessions(str(workspace_session_dir(self.sessions_dir, root)), root, limit, skip)

    def transcript(self, session_id: str) -> dict[str, Any]:
        """``{session, messages}`` with the normalized live conversation."""
        session = self.get(session_id)
        payload = session.payload()  # refreshes
        messages = session.entry_messages()
        details = tool_details_from_file(session.path, wanted_tool_call_ids(messages))
        return {"session": payload, "messages": normalize_transcript(messages, details)}

    def export(self, session_id: str, path: Any = None, format: Any = None) -> dict[str, str]:
        """Write Markdown/HTML of the live conversation; ``{path, format}``."""
        session = self.get(session_id)
        session.refresh()
        return export_conversation(session.entry_messages(), fmt=format, path=path,
                                   session_path=session.path, workspace_root=session.workspace_root)

    # --- closing ---------------------------------------------------------------------

    def delete(self, session_id: str) -> dict[str, Any]:
        """Close the session and delete its file and sidecar lock: ``{deleted, path}``."""
        session = self.get(session_id)
        self._unregister(session)
        path = session.delete()
        return {"deleted": True, "path": path}

    def close(self, session_id: str) -> dict[str, Any]:
        """Close the session (deleting its file when unused): ``{closed: true}``."""
        session = self.get(session_id)
        self._unregister(session)
        session.close(delete_if_unused=True)
        return {"closed": True}

    def cleanup_unused(self, keep: OpenSession | None = None) -> list[str]:
        """Close and delete this process's idle, empty, unnamed sessions other than `keep`
        (and other than any open on the same file); return the deleted paths."""
        deleted = []
        for session in self.sessions():
            if keep is not None and (session is keep or session.path == keep.path):
                continue
            if session.busy or not session.is_empty:
                continue
            if session.delete_if_unused():
                self._unregister(session)
                deleted.append(session.path)
        return deleted

    def shutdown_all(self) -> None:
        """Close every session (running turns should be cancelled first): unused ones are
        deleted, the others fsynced and closed (a busy one closes when its turn ends)."""
        for session in self.sessions():
            self._unregister(session)
            try:
                session.close(delete_if_unused=True)
            except OSError:
                log.exception("Closing session %s failed", session.path)
