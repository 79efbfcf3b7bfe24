"""The process-wide registry of open RPC sessions and every ``sessions/*`` operation.

Knows nothing of JSON-RPC: methods take Python values, raise the classes of
``kward.errors`` and return SessionHandle objects or typed values (`ForkEntry`,
`SessionSummary`, `Transcript`, `Exported`); the RPC face shapes them for the wire.

One file, one OpenSession: this process opens a session file once and gives every RPC id
on it a `SessionHandle` over that OpenSession (one writer, one live state; the turn
manager gives them one queue). Resuming a file this process has open adds an id;
concurrent resumes of one file share the first one's load. Closing an id closes the file
only when no other id is left on it; deleting through one id closes every id on the file.

Locking: ``SessionManager._lock`` (a ``threading.Lock``) guards only the maps
``_handles`` (RPC id -> handle), ``_by_path`` (real file path -> OpenSession) and
``_loading`` (real path -> event set when that load ends). It is never held during file
I/O, nor while taking another lock: a resume registers a load, loads without the lock,
then registers. Per-session state is guarded by each OpenSession's own lock (see
``kward.sessions.session``). Any thread may call any method; slow ones (resume of a big
file, clone, export, transcript, list) belong on worker threads.

Cleanup rule: sessions this process opened that are idle, empty and
unnamed are closed (every id on them) and their files deleted when the client creates,
resumes, clones or forks into another session (not with `tidy_on_open=False`: a server of
several clients), on close, and at `shutdown_all`; never a
session with content or a name, never one another process has open or runs a turn on,
never one whose file is gone. Listing deletes no session.

Changes: with `on_change`, every change of a session's name or cumulative usage made by
this process (`kward.sessions.session.Changed`: a rename, the automatic name, an assistant
message or a compaction record with usage) is reported as ``on_change(handles, change)``
with the open ids on that file (in the order they were opened), on the appending thread,
under that session's lock (`OpenSession.watch`: quick, never blocking). A session being opened counts as
busy until what its answer shows (`SessionHandle.opened`) is taken, so pipelined creates
each answer with a complete view of a session that existed then.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple

from kward.errors import InvalidParams, SessionNotFound
from kward.fsutil import remove_stale_files
from kward.model import Message, UserMessage
from kward.sessions.descriptors import DEFAULT_POOL
from kward.sessions.entries import compact, entry_id, parse_entry_id
from kward.sessions.handle import SessionHandle
from kward.sessions.listing import DEFAULT_LIMIT, SessionSummary, list_workspace
from kward.sessions.messages import full_text
from kward.sessions.opening import create_session, derive_session, load_session
from kward.sessions.paths import (
    CREATING,
    resolve_session_path,
    resume_root,
    workspace_session_dir,
)
from kward.sessions.presence import PresenceTable
from kward.sessions.session import Changed, OpenSession
from kward.sessions.transcript import (
    Transcript,
    tool_details_from_file,
    wanted_tool_call_ids,
)
from kward.workspace import resolve_root

if TYPE_CHECKING:  # pragma: no cover
    from kward.sessions.export import Exported

log = logging.getLogger(__name__)


class ForkEntry(NamedTuple):
    """A user message a session can be forked before: its `entry_id` (``message:<n>``, the
    id form of `kward.sessions.entries.entry_id`, as a compaction's `first_kept_entry_id`)
    and its text, compacted for a menu."""

    entry_id: str
    text: str


#: ``on_change(handles, change)``: see the module docstring.
ChangeListener = Callable[[list[SessionHandle], Changed], None]


class SessionManager:
    """Open sessions of this process. `sessions_dir` is ``Paths.sessions_dir``;
    `default_workspace` is used when a call names no workspace (default: the cwd).
    `presence` holds the presence locks of the sessions it opens (one table per process;
    by default a new one). `on_change` hears of this process's renames and usage (see the
    module docstring)."""

    def __init__(self, sessions_dir: Path, default_workspace: str | None = None,
                 presence: PresenceTable | None = None, on_change: ChangeListener | None = None, *,
                 tidy_on_open: bool = True):
        self.sessions_dir = Path(os.path.realpath(sessions_dir))  # one file, one path key
        self.default_workspace = Path(os.path.realpath(default_workspace or os.getcwd()))
        self.presence = presence if presence is not None else PresenceTable()
        self._lock = threading.Lock()
        self._handles: dict[str, SessionHandle] = {}
        self._by_path: dict[str, OpenSession] = {}
        self._loading: dict[str, threading.Event] = {}
        self._tidied: set[str] = set()  # session directories whose stale temp files were removed
        self._on_change = on_change
        # False for a server of several clients: one client's new session must not delete
        # another's empty one (they are tidied when closed and at shutdown_all only)
        self._tidy_on_open = tidy_on_open

    # --- registry --------------------------------------------------------------------

    def get(self, session_id: object) -> SessionHandle:
        """The open session with that RPC id (any value a client sent: a non-string is no
        id); SessionNotFound (``Unknown session: <id>``)."""
        with self._lock:
            handle = self._handles.get(session_id) if isinstance(session_id, str) else None
        if handle is None or handle.closed:
            raise SessionNotFound(str(session_id))
        return handle

    def handles_on(self, session_id: object) -> list[SessionHandle]:
        """Every open RPC id on the file of `session_id` (itself first)."""
        handle = self.get(session_id)
        with self._lock:
            others = [h for h in self._handles.values() if h.shared is handle.shared and h is not handle]
        return [handle, *others]

    def _open_sessions(self) -> list[OpenSession]:
        """The distinct files behind the open ids."""
        with self._lock:
            return list({id(h.shared): h.shared for h in self._handles.values()}.values())

    def _changed(self, shared: OpenSession, change: Changed) -> None:
        """`shared`'s watcher: report the change with the ids open on it (none: nothing)."""
        with self._lock:
            handles = [h for h in self._handles.values() if h.shared is shared]
        if handles and self._on_change is not None:
            self._on_change(handles, change)

    def _drop(self, shared: OpenSession) -> None:
        """Forget every id on `shared` (its file was closed or deleted)."""
        with self._lock:
            for handle in [h for h in self._handles.values() if h.shared is shared]:
                handle.detach()
                del self._handles[handle.id]
            if self._by_path.get(shared.path) is shared:
                del self._by_path[shared.path]

    def _opened(self, shared: OpenSession, loading: threading.Event | None = None) -> SessionHandle:
        """Register a session just opened (no id knows it yet) under a new id; end the
        load of its path (`loading`) in the same step, so a resume waiting for it shares it."""
        shared.begin_work()  # see _announce
        if self._on_change is not None:
            shared.watch(self._changed)
        handle = SessionHandle(shared)
        with self._lock:
            self._handles[handle.id] = handle
            self._by_path[shared.path] = shared
            if loading is not None:
                self._loading.pop(shared.path, None)
        if loading is not None:
            loading.set()
        return self._announce(handle)

    def _attach(self, shared: OpenSession) -> SessionHandle | None:
        """A new id on a session this process has open (busy, see `_announce`); None when
        its last id was closed meanwhile."""
        try:
            shared.begin_work()
        except SessionNotFound:  # closing
            return None
        handle = SessionHandle(shared)
        with self._lock:
            current = self._by_path.get(shared.path) is shared
            if current:
                self._handles[handle.id] = handle
        if current:
            return handle
        shared.end_work()
        return None

    def _announce(self, handle: SessionHandle) -> SessionHandle:
        """The session is busy (`begin_work`) since it was registered: clean up the other
        sessions, take what the answer shows, then let it be idle."""
        try:
            if self._tidy_on_open:
                self.cleanup_unused(keep=handle.shared)
            handle.opened = handle.info()
        finally:
            handle.shared.end_work()
        return handle

    def _tidy(self, directory: Path) -> None:
        """Remove the ``.creating`` temp files killed processes left in `directory`, the
        first time this process writes there (`list_workspace` removes those it comes across)."""
        with self._lock:
            if str(directory) in self._tidied:
                return
            self._tidied.add(str(directory))
        remove_stale_files(directory, CREATING)

    def workspace(self, workspace_root: str | None) -> str:
        """The real path of an existing workspace directory (relative to the default one);
        InvalidParams ``workspace_not_found`` / ``not_a_directory`` otherwise."""
        return str(resolve_root(workspace_root, self.default_workspace))

    # --- opening ---------------------------------------------------------------------

    def create(self, workspace_root: str | None = None, name: str | None = None, *,
               model: str | None = None, reasoning_effort: str | None = None) -> SessionHandle:
        """A new persisted session (named when `name` is non-empty)."""
        root = self.workspace(workspace_root)
        self._tidy(workspace_session_dir(self.sessions_dir, root))
        return self._opened(create_session(self.sessions_dir, root, name=name, model=model,
                                           reasoning_effort=reasoning_effort, presence=self.presence))

    def resume(self, path: str, workspace_root: str | None = None) -> SessionHandle:
        """Open an existing session file under a new RPC id.

        `path` is resolved against the workspace root. The session works in the root
        `paths.resume_root` decides (the given `workspace_root`; without one the header's
        cwd only for a file kward filed for that cwd, else the default workspace). A file
        this process already has open gets another id on the same OpenSession (one whose
        file was replaced since is not shared: the new file is opened); InvalidParams when
        it is missing or not a kward session; PathNotAllowed when not a regular file.
        """
        root = self.workspace(workspace_root)
        real = resolve_session_path(path, root)
        requested = root if workspace_root is not None and workspace_root.strip() else None
        stale: OpenSession | None = None
        while True:
            with self._lock:
                shared = self._by_path.get(real)
                if shared is stale:
                    shared = None
                loading = self._loading.get(real) if shared is None else None
                mine = None
                if shared is None and loading is None:
                    mine = self._loading[real] = threading.Event()
            if shared is not None:
                if shared.closed or not shared.present():  # closing, or its file is gone
                    stale = shared  # (what is at the path now is another file): open afresh
                    continue
                handle = self._attach(shared)
                if handle is not None:
                    return self._announce(handle)
                continue  # closed meanwhile: look again
            if loading is not None:
                loading.wait()  # another request is loading this file: share its session
                continue
            assert mine is not None
            try:
                shared = load_session(real, lambda header: resume_root(
                    real, header.cwd, self.sessions_dir, requested, str(self.default_workspace)),
                    presence=self.presence)
            except BaseException:
                with self._lock:
                    self._loading.pop(real, None)
                mine.set()
                raise
            return self._opened(shared, mine)

    def rename(self, session_id: str, name: str | None) -> SessionHandle:
        session = self.get(session_id)
        session.rename(name)
        return session

    def clone(self, session_id: str) -> SessionHandle:
        """A new independent session with every non-system live message and the read paths."""
        source = self.get(session_id)
        messages, read_paths = source.snapshot()
        return self._opened(self._derive(source.shared, messages, read_paths))

    def fork_messages(self, session_id: str) -> list[ForkEntry]:
        """The user messages of the live branch, oldest first."""
        session = self.get(session_id)
        session.refresh()
        return [ForkEntry(entry_id(i), compact(full_text(m)))
                for i, m in enumerate(session.entry_messages()) if isinstance(m, UserMessage)]

    def fork(self, session_id: str, entry: object) -> tuple[SessionHandle, str]:
        """A new session holding the messages before the chosen user message (`entry`, a
        ``message:<n>`` entry id; anything else is InvalidParams); returns it and that
        message's text (for the composer). With nothing before that message the new session
        is unnamed, so while it stays empty it is an unused session (the cleanup rule)."""
        source = self.get(session_id)
        index = parse_entry_id(entry)
        if index is None:
            raise InvalidParams(f"Invalid entryId: {entry}", data={"param": "entryId"})
        source.refresh()
        messages = source.entry_messages()
        if index >= len(messages):
            raise InvalidParams(f"Unknown fork entryId: {entry}", data={"param": "entryId"})
        chosen = messages[index]
        if not isinstance(chosen, UserMessage):
            raise InvalidParams(f"Entry is not forkable: {entry}", data={"param": "entryId"})
        before = messages[:index]
        return self._opened(self._derive(source.shared, before, keep_name=bool(before))), full_text(chosen)

    def _derive(self, source: OpenSession, messages: list[Message],
                read_paths: set[str] | None = None, *, keep_name: bool = True) -> OpenSession:
        self._tidy(workspace_session_dir(self.sessions_dir, source.workspace_root))
        return derive_session(self.sessions_dir, source, messages, read_paths, presence=self.presence,
                              keep_name=keep_name)

    # --- reading ---------------------------------------------------------------------

    def list_workspace(self, workspace_root: str | None = None,
                       limit: int | None = DEFAULT_LIMIT) -> list[SessionSummary]:
        """Recent sessions of a workspace as a tree (`kward.sessions.listing.list_workspace`).
        This process's own idle, empty, unnamed sessions are left out (as the original);
        no session is deleted."""
        root = self.workspace(workspace_root)
        skip = []
        for s in self._open_sessions():
            if s.workspace_root == root and not s.busy:
                s.refresh()  # another process may have written to it
                if s.is_empty:
                    skip.append(s.path)
        return list_workspace(self.sessions_dir, root, limit, skip, pool=DEFAULT_POOL)

    def transcript(self, session_id: str) -> Transcript:
        """The live conversation with what the file's tool_execution_end records add."""
        session = self.get(session_id)
        info = session.info()  # refreshes
        messages = session.entry_messages()
        return Transcript(info, messages, tool_details_from_file(session.path, wanted_tool_call_ids(messages)))

    def export(self, session_id: str, path: object = None, format: object = None) -> Exported:
        """Write Markdown/HTML of the live conversation; where it went and its format
        (`path` and `format` as a client sent them, checked by `kward.sessions.export`)."""
        from kward.sessions.export import (
            export_conversation,  # (html and the export target's checks)
        )

        session = self.get(session_id)
        session.refresh()
        return export_conversation(session.entry_messages(), fmt=format, path=path,
                                   session_path=session.path, workspace_root=session.workspace_root)

    # --- closing ---------------------------------------------------------------------

    def check_deletable(self, session_id: str, *, force: bool = False) -> None:
        """Raise what `delete` would refuse with (see there); changes nothing."""
        try:
            self.get(session_id).shared.check_deletable(force=force)
        except SessionNotFound:  # the file was finalized by a concurrent delete or close
            raise SessionNotFound(session_id) from None

    def delete(self, session_id: str, *, force: bool = False) -> str:
        """Delete the file and its sidecars and close every id on it; the file's path.

        Without `force`, SessionInUse when another process has it open; SessionFileGone
        when another file was put at its path. Both change nothing. A file already
        deleted elsewhere just closes the ids."""
        shared = self.get(session_id).shared
        try:
            path = shared.delete(force=force)
        except SessionNotFound:  # finalized by a concurrent delete or close
            raise SessionNotFound(session_id) from None
        self._drop(shared)
        return path

    def close(self, session_id: str) -> None:
        """Close this RPC id; the file closes (deleted when unused) when no other id is
        left on it."""
        handle = self.get(session_id)
        shared = handle.shared
        with self._lock:
            if self._handles.get(handle.id) is not handle:
                raise SessionNotFound(handle.id)  # closed by a concurrent request
            del self._handles[handle.id]
            handle.detach()
            last = not any(h.shared is shared for h in self._handles.values())
            if last and self._by_path.get(shared.path) is shared:
                del self._by_path[shared.path]
        if last:
            shared.close(delete_if_unused=True)

    def cleanup_unused(self, keep: OpenSession | None = None) -> list[str]:
        """Close and delete this process's idle, empty, unnamed sessions other than `keep`
        (every id on them); return the deleted paths."""
        deleted = []
        for shared in self._open_sessions():
            if shared is keep or shared.busy or not shared.is_empty:
                continue
            try:
                if not shared.delete_if_unused():
                    continue
            except OSError as exc:  # e.g. a read-only directory: the session stays open
                log.warning("Could not remove unused session %s: %s", shared.path, exc)
                continue
            self._drop(shared)
            deleted.append(shared.path)
        return deleted

    def shutdown_all(self) -> None:
        """Close every session (running turns should be cancelled first): unused ones are
        deleted, the others fsynced and closed (a busy one closes when its turn ends)."""
        for shared in self._open_sessions():
            self._drop(shared)
            try:
                shared.close(delete_if_unused=True)
            except OSError:
                log.exception("Closing session %s failed", shared.path)
