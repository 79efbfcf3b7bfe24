"""The `sessions/*` results: the session payload (`session`: create, resume, rename, clone,
fork, and inside transcript), a `sessions/list` item (`listed_session`), and the results
of forkMessages, export, delete, close and compact, and the change summary of
`sessions/diff` and the `turnDiff` event (`changes`). Keys as docs/protocol.md and the original
kward's. Pure functions, any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.wire.shape import present

if TYPE_CHECKING:  # pragma: no cover
    from kward.compaction.events import CompactionResult
    from kward.model import ChangeSummary, DiffFile
    from kward.rpc.shapes.sessions import (
        ForkMessage,
        ListedSession,
        Session,
        SessionsCloseResult,
        SessionsCompactResult,
        SessionsDeleteResult,
        SessionsDiffFile,
        SessionsDiffResult,
        SessionsExportResult,
        SessionsForkMessagesResult,
    )
    from kward.sessions.export import Exported
    from kward.sessions.listing import SessionSummary
    from kward.sessions.manager import ForkEntry
    from kward.sessions.session import SessionInfo


def session(info: SessionInfo) -> Session:
    """The session payload of a `kward.sessions.session.SessionInfo` (None fields left out;
    the info is the handle's, which always carries its RPC id)."""
    if info.id is None:
        raise ValueError("a session payload needs the session's RPC id")
    out: Session = {"id": info.id, "persistentId": info.persistent_id, "path": info.path,
                    "workspaceRoot": info.workspace_root, "cwd": info.cwd}
    if info.name is not None:
        out["name"] = info.name
    if info.created_at is not None:
        out["createdAt"] = info.created_at
    if info.modified_at is not None:
        out["modifiedAt"] = info.modified_at
    if info.parent_id is not None:
        out["parentId"] = info.parent_id
    if info.parent_path is not None:
        out["parentPath"] = info.parent_path
    return out


def listed_session(s: SessionSummary) -> ListedSession:
    """A `sessions/list` item (`kward.sessions.listing.SessionSummary`), tree decoration
    included."""
    out: ListedSession = {"id": s.id, "path": s.path, "cwd": s.cwd or s.workspace_root,
                          "workspaceRoot": s.workspace_root, "createdAt": s.created_at, "modifiedAt": s.modified_at,
                          "firstMessage": s.first_message, "messageCount": s.message_count, "depth": s.depth,
                          "isLast": s.is_last, "ancestorContinues": list(s.ancestor_continues)}
    if s.name is not None:
        out["name"] = s.name
    if s.parent_id is not None:
        out["parentId"] = s.parent_id
    if s.parent_path is not None:
        out["parentPath"] = s.parent_path
    return out


def fork_entry(e: ForkEntry) -> ForkMessage:
    return {"entryId": e.entry_id, "text": e.text}


def fork_messages(entries: list[ForkEntry]) -> SessionsForkMessagesResult:
    """`sessions/forkMessages`: ``{messages: [{entryId, text}]}``."""
    return {"messages": [fork_entry(e) for e in entries]}


def exported(e: Exported) -> SessionsExportResult:
    """`sessions/export`: ``{path, format}``."""
    return {"path": e.path, "format": e.format}


def deleted(path: str) -> SessionsDeleteResult:
    """`sessions/delete`: ``{deleted: true, path}``."""
    return {"deleted": True, "path": path}


def closed() -> SessionsCloseResult:
    """`sessions/close`: ``{closed: true}``."""
    return {"closed": True}


def compaction_result(result: CompactionResult) -> SessionsCompactResult:
    """`sessions/compact`: ``{summary, firstKeptEntryId, tokensBefore, details}`` of a
    `kward.compaction.run.CompactionResult`."""
    return {"summary": result.summary, "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before,
            "details": {"read_files": list(result.details.get("read_files", [])),
                        "modified_files": list(result.details.get("modified_files", []))}}


def _diff_file(f: DiffFile) -> SessionsDiffFile:
    out: SessionsDiffFile = {"path": f.path, "status": f.status, "added": f.added, "removed": f.removed}
    if f.binary:
        out["binary"] = True
    if f.omitted is not None:
        out["omitted"] = f.omitted
    return out


def changes(summary: ChangeSummary) -> SessionsDiffResult:
    """A `kward.model.ChangeSummary` (`sessions/diff`, `turnDiff`): ``{files: [{path,
    status, added, removed, binary?, omitted?}], diff, truncated, note?, complete?}``
    (`complete: false` only when the files may be incomplete)."""
    out: SessionsDiffResult = {"files": [_diff_file(f) for f in summary.files], "diff": summary.diff,
                           "truncated": summary.truncated}
    if summary.note is not None:
        out["note"] = summary.note
    if not summary.complete:
        out["complete"] = False
    return out
