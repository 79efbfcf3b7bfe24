"""Recent sessions of one workspace, decorated as a parent/child tree.

`list_workspace` is what ``sessions/list`` shows, without any session being open: a
process that only lists (a UI's list refresh: ``initialize``, ``sessions/list``, exit)
calls it directly and imports only this module's few dependencies (the reader and the
record format, `kward.sessions.format`, whose texts it reads without decoding messages:
no conversation model, no store, no open-session state).
`kward.sessions.manager.SessionManager.list_workspace` uses it too, leaving out that
process's own unused sessions and passing its descriptor pool.

Cost model: one ``scandir`` plus one ``stat`` per ``*.jsonl`` file to order them by mtime;
only the newest files needed to fill `limit` items are opened and read. A file that is not
a readable kward session is passed over (and the next one read). Reading never writes:
listing deletes no session (only the temp files of dead processes' creates it came across).

Pure functions over the file system: safe from any thread.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Iterable, NamedTuple

from kward.errors import KwardError
from kward.fsutil import remove_stale_files
from kward.sessions.entries import CONTENT_ROLES, COUNTED_ROLES, compact, compacted
from kward.sessions.fdretry import Reclaimer, out_of_descriptors
from kward.sessions.format import (
    clean_name,
    first_kept_entry_id,
    record_role,
    shown_text,
)
from kward.sessions.paths import CREATING, workspace_session_dir
from kward.sessions.reader import SessionReader
from kward.timefmt import iso_from_ns, normalize_iso

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 20
# Records that never change a listing: passed over without JSON decoding.
_SKIP_PREFIXES = (b'{"type":"tool_execution_end"', b'{"type":"memory_state"')


class SessionSummary(NamedTuple):
    """What a listing shows about one file, plus its tree decoration."""

    id: str
    path: str
    cwd: str
    created_at: str
    modified_at: str
    mtime_ns: int
    name: str | None
    first_message: str
    message_count: int
    content_messages: int
    parent_id: str | None
    parent_path: str | None
    depth: int = 0
    is_last: bool = True
    ancestor_continues: tuple[bool, ...] = ()
    workspace_root: str = ""  # the workspace it was listed for


class _Entry(NamedTuple):
    """A light stand-in for a live message: its role, its own id (None when it has
    none) and the text it shows when a listing may show it (user messages, summaries)."""

    role: str
    ident: object
    shown: str | None


def _role(entry: _Entry) -> str:
    return entry.role


def _ident(entry: _Entry) -> object:
    return entry.ident


def summarize(path: str, mtime_ns: int, pool: Reclaimer | None = None) -> SessionSummary:
    """Read one file into a summary (InvalidParams when it is not a kward session);
    `pool` as for `SessionReader`.

    The live list is replayed with light stand-ins (`_Entry`), read from the records
    without decoding their messages (`kward.sessions.format.shown_text`), so a big
    session costs no more memory than its user messages' texts.
    """
    live: list[_Entry] = []
    name: str | None = None
    content = 0
    with SessionReader(path, pool) as reader:
        header = reader.header
        assert header is not None
        for record in reader.records(_SKIP_PREFIXES):
            kind = record.get("type")
            message = record.get("message")
            if kind == "message" and isinstance(message, dict):
                role = record_role(message)
                content += role in CONTENT_ROLES
                shown = shown_text(message) if role in ("user", "compactionSummary") else None
                live.append(_Entry(role, message.get("id"), shown))
            elif kind == "compaction" and isinstance(message, dict):
                summary = _Entry("compactionSummary", message.get("id"), shown_text(message))
                live = compacted(live, summary, first_kept_entry_id(message), _role, _ident)
            elif kind == "session_info":
                name = clean_name(record.get("name"))
    first_shown = next((entry.shown for entry in live if entry.shown is not None), None)
    modified = iso_from_ns(mtime_ns)
    created = normalize_iso(header.timestamp) or modified
    return SessionSummary(
        id=header.id,
        path=path,
        cwd=header.cwd,
        created_at=created,
        modified_at=max(modified, created),  # the header's clock may run ahead of the file system's
        mtime_ns=mtime_ns,
        name=name,
        first_message=compact(first_shown) if first_shown is not None else "",
        message_count=sum(1 for entry in live if entry.role in COUNTED_ROLES),
        content_messages=content,
        parent_id=header.parent_id,
        parent_path=header.parent_path,
    )


def newest_files(directory: str, temps: list[str] | None = None) -> list[tuple[int, str]]:
    """(mtime_ns, absolute path) of the ``*.jsonl`` files in `directory`, newest first.
    Hidden names are never sessions (``.*.creating`` temp files among them: their names
    are added to `temps` when given)."""
    found: list[tuple[int, str, str]] = []
    try:
        entries = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with entries:
        for entry in entries:
            name = entry.name
            if name[:1] == ".":
                if temps is not None and name.endswith(".creating"):
                    temps.append(name)
                continue
            if not name.endswith(".jsonl"):
                continue
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except OSError:
                continue  # deleted while we looked
            found.append((st.st_mtime_ns, entry.name, entry.path))
    found.sort(reverse=True)  # mtime desc, then name desc (names start with the time)
    return [(mtime, os.path.abspath(path)) for mtime, _, path in found]


def recent_sessions(directory: str, limit: int = DEFAULT_LIMIT, skip: Iterable[str] = (),
                    temps: list[str] | None = None, pool: Reclaimer | None = None) -> list[SessionSummary]:
    """The newest `limit` readable sessions in `directory`, undecorated, newest first.
    Paths in `skip` are passed over without being read; see `newest_files` for `temps`,
    `SessionReader` for `pool`."""
    skipped = set(skip)
    result: list[SessionSummary] = []
    for mtime_ns, path in newest_files(directory, temps):
        if len(result) >= limit:
            break
        if path in skipped:
            continue
        try:
            result.append(summarize(path, mtime_ns, pool))
        except (OSError, KwardError) as exc:
            if out_of_descriptors(exc):
                raise  # nothing wrong with the file: the listing would be silently short
            log.info("Not listing %s: %s", path, exc)
    return result


def decorate_tree(sessions: list[SessionSummary]) -> list[SessionSummary]:
    """Order as a tree: roots newest first, each followed by its children (newest first).

    A session whose parent is not in the list is a root. ``ancestorContinues`` follows
    the original: children of a root get ``[]``; deeper rows get their parent's list plus
    whether the parent has later siblings. Rows caught in a parent cycle become roots.
    """
    ids = {s.id for s in sessions}
    children: dict[str | None, list[SessionSummary]] = {}
    for s in sessions:
        key = s.parent_id if s.parent_id in ids and s.parent_id != s.id else None
        children.setdefault(key, []).append(s)
    for group in children.values():
        group.sort(key=lambda s: s.mtime_ns, reverse=True)
    result: list[SessionSummary] = []
    seen: set[str] = set()  # (paths: one file is listed once)

    def visit(group: list[SessionSummary], depth: int, continues: tuple[bool, ...]) -> None:
        group = [s for s in group if s.path not in seen]
        for index, s in enumerate(group):
            seen.add(s.path)
            last = index == len(group) - 1
            result.append(s._replace(depth=depth, is_last=last, ancestor_continues=continues))
            visit(children.get(s.id, []), depth + 1, () if depth == 0 else (*continues, not last))

    visit(children.get(None, []), 0, ())
    for s in sorted(sessions, key=lambda s: s.mtime_ns, reverse=True):
        if s.path not in seen:  # only rows caught in a parent cycle end up here
            visit([s], 0, ())
    return result


def list_sessions(directory: str, workspace_root: str, limit: int | None = DEFAULT_LIMIT,
                  skip: Iterable[str] = (), temps: list[str] | None = None,
                  pool: Reclaimer | None = None) -> list[SessionSummary]:
    """What ``sessions/list`` shows of one workspace's session directory, as a tree (see
    `newest_files` for `temps`, `SessionReader` for `pool`); the RPC face shapes it
    (`kward.rpc.wire.sessions.listed_session`)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        limit = DEFAULT_LIMIT  # as the original: a non-positive limit means the default
    listed = decorate_tree(recent_sessions(directory, limit, skip, temps, pool))
    return [summary._replace(workspace_root=workspace_root) for summary in listed]


def list_workspace(sessions_dir: str | os.PathLike[str], workspace_root: str, limit: int | None = DEFAULT_LIMIT,
                   skip: Iterable[str] = (), *, pool: Reclaimer | None = None) -> list[SessionSummary]:
    """``sessions/list`` of one workspace: the sessions kward filed in `sessions_dir`
    (``Paths.sessions_dir``) for `workspace_root` (an existing workspace's real path, as
    `kward.workspace.resolve_root` gives it), newest first as a tree; `limit` items at
    most (not a positive int: `DEFAULT_LIMIT`). Session files whose path is in `skip`
    are left out unread. The temp files of creates that dead processes left there and
    the listing came across are removed. `pool`: the descriptor pool of a process that
    has sessions open (see `SessionReader`); None in one that has not."""
    directory = workspace_session_dir(Path(os.path.realpath(sessions_dir)), workspace_root)
    temps: list[str] = []
    items = list_sessions(str(directory), workspace_root, limit, skip, temps, pool)
    if temps:  # hidden temp files seen by the listing's scandir: remove those of dead processes
        remove_stale_files(directory, CREATING, names=temps)
    return items
