"""sessions/* (but sessions/transcript: `kward.rpc.shapes.transcript`) and the
`session/event` payloads (docs/protocol.md "Sessions", "Compaction events", "Session
updates"). The session payload (`Session`) is shared by create, resume, rename, clone,
fork and transcript; the compaction payloads (`CompactionStartPayload`,
`CompactionEndPayload`) are also those of the compactionStart / compactionEnd turn events.
Built by `kward.rpc.wire.sessions`, `kward.rpc.wire.events` (`compaction_payload`,
`session_event`) and `kward.rpc.wire.runtime` (`spent`)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, AN_ADDITION, ORIGINAL, Doc, Entry, Length, Range
from kward.rpc.shapes.envelopes import SessionEvent
from kward.rpc.shapes.errors import ErrorData

# --- the session payload ---------------------------------------------------------------------


class _SessionRequired(TypedDict):
    id: Annotated[str, Doc("the RPC session id: what `sessionId` params take")]
    persistentId: Annotated[str, Doc("the id in the session file's header")]
    path: Annotated[str, Doc("absolute path of the session file")]
    workspaceRoot: Annotated[str, Doc("real path of the workspace the tools work in")]
    cwd: Annotated[str, Doc("the workspace recorded in the file's header")]


class Session(_SessionRequired, total=False):
    """The session payload: what create, resume, rename and clone answer, and `session`
    of sessions/fork and sessions/transcript (unknown fields left out)."""

    name: Annotated[str, Doc("absent when the session has no name")]
    createdAt: Annotated[str, Doc("ISO 8601 UTC with milliseconds, from the header; absent only when unknown")]
    modifiedAt: Annotated[str, Doc("the file's modification time, never before createdAt; absent only when "
                                   "unknown (the file cannot be looked at)")]
    parentId: Annotated[str, Doc("persistentId of the session this one was cloned or forked from")]
    parentPath: Annotated[str, Doc("path of that session's file")]


# --- sessions/create, resume, rename, clone ----------------------------------------------------


class SessionsCreateParams(TypedDict, total=False):
    workspaceRoot: Annotated[str | None, Doc("default: the launch directory")]
    name: Annotated[str | None, Length(maximum=10_000), Doc("blank means none")]
    memory: Annotated[bool | None, AN_ADDITION, Doc("false: the session's turns use no memory (default true)")]


class _SessionsResumeParamsRequired(TypedDict):
    path: Annotated[str, Length(minimum=1), Doc("the session file; `~` expanded, relative to workspaceRoot")]


class SessionsResumeParams(_SessionsResumeParamsRequired, total=False):
    workspaceRoot: Annotated[str | None, Doc("resolves a relative path; when given, the workspace the session "
                                             "opens in")]


class _SessionsRenameParamsRequired(TypedDict):
    sessionId: str


class SessionsRenameParams(_SessionsRenameParamsRequired, total=False):
    name: Annotated[str | None, Length(maximum=10_000), Doc("missing, null or blank clears the name")]


class SessionIdParams(TypedDict):
    """The params of a method that reads only the RPC session id."""

    sessionId: Annotated[str, Doc("RPC session id")]


# --- sessions/list ---------------------------------------------------------------------------


class SessionsListParams(TypedDict, total=False):
    workspaceRoot: Annotated[str | None, Doc("whose sessions to list (default: the launch directory)")]
    limit: Annotated[int | None, Range(minimum=1, maximum=100_000), Doc("default 20")]


class _ListedSessionRequired(TypedDict):
    id: Annotated[str, Doc("the persistent id (open it with sessions/resume {path})")]
    path: str
    cwd: Annotated[str, Doc("the workspace recorded in the file")]
    workspaceRoot: Annotated[str, Doc("the workspace that was listed")]
    createdAt: str
    modifiedAt: str
    firstMessage: Annotated[str, Doc("the first user (or compaction summary) text, whitespace collapsed, at most "
                                     "120 characters; \"\" when none")]
    messageCount: Annotated[int, Range(minimum=0)]
    depth: Annotated[int, Range(minimum=0), Doc("0 for a root; a child is one deeper than its parent")]
    isLast: Annotated[bool, Doc("the entry is the last of its siblings")]
    ancestorContinues: Annotated[list[bool], Doc("for drawing tree lines")]


class ListedSession(_ListedSessionRequired, total=False):
    """A sessions/list entry."""

    name: Annotated[str, Doc("absent when unnamed")]
    parentId: Annotated[str, Doc("persistent id of the session it was cloned or forked from")]
    parentPath: str


class SessionsListResult(TypedDict):
    sessions: Annotated[list[ListedSession], Doc("newest first, ordered as a tree")]


# --- sessions/compact ------------------------------------------------------------------------


class _SessionsCompactParamsRequired(TypedDict):
    sessionId: str


class SessionsCompactParams(_SessionsCompactParamsRequired, total=False):
    customInstructions: Annotated[str | None, Length(maximum=100_000), Doc("extra guidance for the summarizer")]


class CompactionDetails(TypedDict):
    read_files: Annotated[list[str], Doc("paths of successful read_file calls in what was summarized, sorted")]
    modified_files: Annotated[list[str], Doc("paths of successful write_file / edit_file calls, sorted")]


class SessionsCompactResult(TypedDict):
    """What a compaction did (also the `result` of a completed compactionEnd)."""

    summary: Annotated[str, Doc("the checkpoint (Markdown) that replaces the older messages")]
    firstKeptEntryId: Annotated[str, Doc("the first kept message: its own id or `message:<n>`")]
    tokensBefore: Annotated[int, Doc("the estimated context before the compaction")]
    details: CompactionDetails


# --- sessions/forkMessages, fork ---------------------------------------------------------------


class ForkMessage(TypedDict):
    entryId: Annotated[str, Doc("`message:<n>`")]
    text: Annotated[str, Doc("the user message's text, whitespace collapsed, at most 120 characters")]


class SessionsForkMessagesResult(TypedDict):
    messages: list[ForkMessage]


class SessionsForkParams(TypedDict):
    sessionId: str
    entryId: Annotated[str, Doc("a `message:<n>` id from sessions/forkMessages")]


class SessionsForkResult(TypedDict):
    session: Session
    text: Annotated[str, Doc("the chosen message's full text, for the composer")]
    cancelled: Literal[False]


# --- sessions/export, delete, close ----------------------------------------------------------


class _SessionsExportParamsRequired(TypedDict):
    sessionId: str


class SessionsExportParams(_SessionsExportParamsRequired, total=False):
    path: Annotated[str | None, Doc("where to write (default: beside the session file)")]
    format: Annotated[str | None, Doc("markdown (alias md) or html, in any case; default markdown")]


class SessionsExportResult(TypedDict):
    path: Annotated[str, Doc("the real path written")]
    format: Literal["markdown", "html"]


class _SessionsDeleteParamsRequired(TypedDict):
    sessionId: str


class SessionsDeleteParams(_SessionsDeleteParamsRequired, total=False):
    force: Annotated[bool | None, AN_ADDITION, Doc("delete even when another process has the session open")]


class SessionsDeleteResult(TypedDict):
    deleted: Literal[True]
    path: str


class SessionsCloseResult(TypedDict):
    closed: Literal[True]


# --- sessions/diff (and the turnDiff event's change summary) ---------------------------------


class _SessionsDiffFileRequired(TypedDict):
    path: Annotated[str, Doc("relative to the workspace root, `/`-separated")]
    status: Literal["added", "deleted", "modified"]
    added: Annotated[int | None, Doc("lines added; null when not known")]
    removed: Annotated[int | None, Doc("lines removed; null when not known")]


class SessionsDiffFile(_SessionsDiffFileRequired, total=False):
    """One changed file of a change summary."""

    binary: Literal[True]
    omitted: Annotated[Literal["binary", "tooLarge", "unknownBaseline", "notRegularFile", "unreadable", "capped"],
                       Doc("why the file's diff is not in `diff`")]


class _SessionsDiffResultRequired(TypedDict):
    files: Annotated[list[SessionsDiffFile], Length(maximum=1000), Doc("the changed files in path order (at most 1000)")]
    diff: Annotated[str, Doc("one unified diff of the text files")]
    truncated: Annotated[bool, Doc("a cap left something out")]


class SessionsDiffResult(_SessionsDiffResultRequired, total=False):
    """A change summary (docs/protocol.md "File changes")."""

    note: Annotated[str, Doc("what is not in `diff`, and why")]
    complete: Annotated[Literal[False], Doc("a tool call said its list of changed files may miss some")]


# --- session/event payloads --------------------------------------------------------------------


class CompactionStartPayload(TypedDict):
    """compactionStart (a `session/event`, and a turn event of an automatic compaction)."""

    reason: Annotated[Literal["manual", "threshold", "overflow"],
                      Doc("manual (sessions/compact, /compact), threshold or overflow (automatic)")]


class NoCompactionResult(TypedDict):
    """The `result` of an aborted compaction: an empty object."""


class CompactionEndError(TypedDict):
    """The JSON-RPC error object of an aborted compaction."""

    code: int
    message: str
    data: ErrorData


class _CompactionEndPayloadRequired(TypedDict):
    result: Annotated[SessionsCompactResult | NoCompactionResult,
                      Doc("the sessions/compact result; {} when aborted")]
    aborted: bool
    willRetry: Annotated[bool, Doc("the model request that overflowed is sent again")]
    errorMessage: Annotated[str | None, Doc("why it was aborted; null when it completed")]


class CompactionEndPayload(_CompactionEndPayloadRequired, total=False):
    """compactionEnd (a `session/event`, and a turn event of an automatic compaction)."""

    estimatedTokensAfter: Annotated[int, AN_ADDITION, Doc("a completed compaction's estimate of the compacted "
                                                          "context")]
    error: Annotated[CompactionEndError, AN_ADDITION, Doc("an aborted compaction's error")]


class SessionEventSessionUpdatedPayload(TypedDict):
    name: Annotated[str | None, Doc("the new name; null when it was cleared")]
    path: Annotated[str, Doc("the session file")]


class SessionUsageTokens(TypedDict):
    """A session's cumulative token counts."""

    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    reasoning: int
    total: int


class SessionEventUsageUpdatedPayload(TypedDict):
    """The session's cumulative usage, as runtime/stats reports it."""

    tokens: SessionUsageTokens
    cost: Annotated[float | None, Doc("USD rounded to 6 places; null while no call reported a cost")]


METHODS = {
    "sessions/create": Entry(SessionsCreateParams, Session, ORIGINAL),
    "sessions/resume": Entry(SessionsResumeParams, Session, ORIGINAL),
    "sessions/list": Entry(SessionsListParams, SessionsListResult, ORIGINAL),
    "sessions/rename": Entry(SessionsRenameParams, Session, ORIGINAL),
    "sessions/clone": Entry(SessionIdParams, Session, ORIGINAL),
    "sessions/compact": Entry(SessionsCompactParams, SessionsCompactResult, ORIGINAL),
    "sessions/forkMessages": Entry(SessionIdParams, SessionsForkMessagesResult, ORIGINAL),
    "sessions/fork": Entry(SessionsForkParams, SessionsForkResult, ORIGINAL),
    "sessions/export": Entry(SessionsExportParams, SessionsExportResult, ORIGINAL),
    "sessions/delete": Entry(SessionsDeleteParams, SessionsDeleteResult, ORIGINAL),
    "sessions/close": Entry(SessionIdParams, SessionsCloseResult, ORIGINAL),
    "sessions/diff": Entry(SessionIdParams, SessionsDiffResult, ADDITION),
}

NOTIFICATIONS = {
    "session/event": Entry(SessionEvent, None),
}

SESSION_EVENTS = {
    "compactionStart": Entry(CompactionStartPayload, None, ORIGINAL),
    "compactionEnd": Entry(CompactionEndPayload, None, ORIGINAL),
    "sessionUpdated": Entry(SessionEventSessionUpdatedPayload, None, ADDITION),
    "usageUpdated": Entry(SessionEventUsageUpdatedPayload, None, ADDITION),
}
