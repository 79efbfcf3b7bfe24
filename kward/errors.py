"""Error classes that carry their JSON-RPC code and a stable reason slug.

Every failure a client can see is one of these classes. The RPC boundary turns them into
wire form once (`kward.rpc.protocol.error_object`); nothing matches on message text. Messages are for
people and may change; `reason` slugs are a contract and are listed in `REASONS` (and in
docs/protocol.md, which a test keeps in step with this table).

Safe to import from any layer: standard library only, no side effects; any thread.
"""

from __future__ import annotations

import errno as _errno
import os
from typing import Any

from kward.fsutil import UnusableFile

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
OVERLOADED = -32001
CONFIG_ERROR = -32002
FILESYSTEM_ERROR = -32003
PLUGIN_ERROR = -32004
PROVIDER_ERROR = -32005  # the model provider failed a request a method made itself

#: Every stable reason slug a client may receive in ``error.data.reason``.
REASONS: dict[str, str] = {
    "parse_error": "The body is not valid JSON.",
    "invalid_utf8": "The body is not valid UTF-8.",
    "invalid_request": "The message is not a valid JSON-RPC 2.0 request.",
    "batch_not_supported": "A JSON array (batch) was sent; kward answers each request singly.",
    "missing_content_length": "A frame header block has no Content-Length.",
    "invalid_content_length": "Content-Length is not a non-negative integer.",
    "header_too_long": "A header line is longer than 8 KiB.",
    "invalid_header": "A header block holds a line that is not a `Name: value` header.",
    "frame_too_large": "A frame body is larger than the configured maximum; it was skipped.",
    "method_not_found": "The method does not exist.",
    "experimental_api_required": "The method is experimental: the client did not pass capabilities.experimentalApi: true.",
    "invalid_params": "A param is missing, of the wrong type or out of range.",
    "internal_error": "An unexpected failure; the traceback is in the log file.",
    "overloaded": "The client is not reading fast enough; retry later.",
    "input_too_large": "User input is larger than the configured maximum.",
    "shutting_down": "The server is stopping and takes no new work.",
    "invalid_config": "config.json cannot be read or a config value has the wrong type.",
    "workspace_not_found": "The workspace path does not exist.",
    "not_a_directory": "A path that must be a directory (the workspace, a part of a config or session path) is not.",
    "read_only_filesystem": "A file kward must write lies on a read-only file system.",
    "permission_denied": "The OS refused access to a file or directory kward needs.",
    "disk_full": "The disk (or the user's quota) is full.",
    "name_too_long": "A file name or path is longer than the OS allows (or loops through symlinks).",
    "too_many_open_files": "The process or system ran out of file descriptors.",
    "unusable_file": "One of kward's own files is a symlink, not a regular file, another user's, or too big.",
    "filesystem_error": "Another failure of a file or directory operation; data names the path and the OS's words.",
    "session_not_found": "No RPC session has that id.",
    "session_busy": "Another process is running a turn on this session.",
    "session_in_use": "Another process has the session open; sessions/delete needs force: true.",
    "session_file_gone": "The open session's file was deleted, moved or replaced; nothing more is saved to it.",
    "turn_not_found": "No turn has that id (finished turns are forgotten after a while).",
    "question_not_found": "No pending UI question has that id in that session.",
    "path_not_allowed": "A path lies outside the places this method may touch.",
    "directory_not_found": "The directory a file is to be written in does not exist (nothing is created).",
    "not_logged_in": "The provider has no usable credentials.",
    "login_not_found": "No OAuth login has that id (finished logins are forgotten after a while).",
    "login_finished": "The OAuth login is no longer pending (completed, failed or cancelled).",
    "login_state_mismatch": "The callback's `state` is not this login's; the login stays pending.",
    "login_failed": "The authorization server refused the login (a bad or used code, a denied consent).",
    "rate_limited": "The provider refused the request for now (HTTP 429) even after retries.",
    "usage_limit": "The account's usage limit or quota is reached; wait until it resets.",
    "context_overflow": "The conversation is too long for the model's context window.",
    "provider_error": "The model provider failed the request (server error, bad response, broken stream).",
    "canceled": "The work was canceled.",
    "memory_not_found": "No memory has that id (or none that the operation applies to).",
    "invalid_memory_store": "A memory file (memory/core.json, soft.jsonl, events.jsonl, .lock) is unusable: not JSON of "
                            "the expected shape, not a regular file of this user, or larger than the cap.",
    "memory_full": "The memory store holds as many memories of that layer as it may (or its file is at its size cap).",
    "logging_disabled": "Telemetry logging is off (or the category a method needs is).",
    "command_not_found": "No prompt template, skill or plugin command has that name.",
    "plugin_failed": "A plugin command raised an error (the plugin's own failure, not kward's).",
    "plugin_timeout": "A plugin command did not return within plugins.command_timeout_seconds.",
    "nothing_to_compact": "The session has no older conversation to summarize (what there is fits the kept part).",
    "already_compacted": "The session's last entry is a compaction summary: nothing new to summarize.",
    "empty_summary": "The model returned an empty summary; the session was not changed.",
    "turn_in_progress": "A turn is running or queued on the session; compact once it finished.",
}


class KwardError(Exception):
    """Base class: a failure with a JSON-RPC `code`, a human `message` and a stable `reason`.

    `data` holds extra wire fields (plain JSON values) merged into ``error.data``.
    """

    code: int = INTERNAL_ERROR
    reason: str = "internal_error"

    def __init__(self, message: str, *, reason: str | None = None, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if reason is not None:
            if reason not in REASONS:
                raise ValueError(f"unregistered error reason: {reason}")
            self.reason = reason
        self.data = dict(data or {})


class ParseError(KwardError):
    code = PARSE_ERROR
    reason = "parse_error"


class InvalidRequest(KwardError):
    code = INVALID_REQUEST
    reason = "invalid_request"


class ShuttingDown(InvalidRequest):
    """A request the stopping server answers without running it to the end: it arrived
    after the stop began, or was still running when the stop gave up on it."""

    reason = "shutting_down"


class MethodNotFound(KwardError):
    code = METHOD_NOT_FOUND
    reason = "method_not_found"


class InvalidParams(KwardError):
    code = INVALID_PARAMS
    reason = "invalid_params"


class InternalError(KwardError):
    code = INTERNAL_ERROR
    reason = "internal_error"


class Overloaded(KwardError):
    code = OVERLOADED
    reason = "overloaded"


class ConfigError(KwardError):
    """config.json is unreadable or a value has the wrong type."""

    code = CONFIG_ERROR
    reason = "invalid_config"


class FilesystemError(KwardError):
    """A file or directory operation failed for a reason outside kward (a read-only or full
    disk, missing permissions, a path component that is a file, ...).

    Built from the OSError by `FilesystemError.from_os_error`; `data` carries `path` (and
    `path2` for a rename), `errno` (the symbolic name, e.g. ``EROFS``) and `osMessage`, the
    OS's own words. Code -32003; see `NameTooLong` for the exception.
    """

    code = FILESYSTEM_ERROR
    reason = "filesystem_error"

    @classmethod
    def from_os_error(cls, exc: OSError) -> "FilesystemError":
        if isinstance(exc, UnusableFile):
            reason = "unusable_file"
        else:
            reason = _ERRNO_REASONS.get(exc.errno or 0, "filesystem_error")
        words = exc.strerror or (os.strerror(exc.errno) if exc.errno else type(exc).__name__)
        data: dict[str, Any] = {"osMessage": words}
        if exc.errno:
            data["errno"] = _errno.errorcode.get(exc.errno, str(exc.errno))
        message = words
        for key, name in (("path", exc.filename), ("path2", exc.filename2)):
            if name is not None:
                shown = os.fsdecode(name) if isinstance(name, bytes) else str(name)
                data[key] = shown
                message += (": " if key == "path" else " -> ") + repr(shown)
        if reason == "not_a_directory" and "path" in data:
            blocker = _first_non_directory(data["path"])
            if blocker is not None and blocker != data["path"]:
                data["notADirectory"] = blocker
                message += f" ({blocker!r} is not a directory)"
        kind = NameTooLong if reason == "name_too_long" else cls
        return kind(message, reason=reason, data=data)


class PathNotAllowed(InvalidParams):
    reason = "path_not_allowed"


class DirectoryNotFound(InvalidParams):
    """The directory a file is to be written in does not exist; `data.directory` names it,
    `data.missing` its first missing part."""

    reason = "directory_not_found"


class Canceled(KwardError):
    """Raised inside work that noticed its cancel token; never sent as a response error."""

    reason = "canceled"


class SessionNotFound(InvalidParams):
    """The message must stay `Unknown session: <id>`: clients match that text."""

    reason = "session_not_found"

    def __init__(self, session_id: str):
        super().__init__(f"Unknown session: {session_id}", data={"sessionId": session_id})


class StateConflict(KwardError):
    """The request is well formed, but the state of what it names does not allow it now
    (another process runs a turn on the session, the session's file is gone, telemetry is
    off, ...). -32602 on the wire, as clients expect of these; not `InvalidParams`: no
    param is wrong, and retrying later (or after changing the state) may work."""

    code = INVALID_PARAMS


class SessionBusy(StateConflict):
    """Another process holds the session's turn lock."""

    reason = "session_busy"


class NameTooLong(FilesystemError):
    """ENAMETOOLONG / ELOOP: -32602, since such names come from the client (an export
    target, a workspace or session path)."""

    code = INVALID_PARAMS
    reason = "name_too_long"


class NotLoggedIn(KwardError):
    """No usable credentials: never logged in, logged out, or the stored login expired and
    refreshing it failed for good. The message names what fixes it."""

    code = PROVIDER_ERROR
    reason = "not_logged_in"


class LoginError(InvalidParams):
    """An OAuth login step that cannot proceed: `login_not_found`, `login_finished`,
    `login_state_mismatch` or `login_failed` (the default). -32602: the step's params
    (login id, code, callback URL) are what was wrong."""

    reason = "login_failed"


class AuthServerError(KwardError):
    """The OAuth authorization server could not be reached or failed (network, 5xx) while
    refreshing a login; retrying later may work. Reason `provider_error`."""

    code = PROVIDER_ERROR
    reason = "provider_error"


class SessionInUse(StateConflict):
    """`sessions/delete` without `force` of a session another process has open."""

    reason = "session_in_use"


class SessionFileGone(StateConflict):
    """The file an open session appends to is no longer at its path (deleted, moved or
    replaced): what would be appended could never be read back."""

    reason = "session_file_gone"


class MemoryNotFound(InvalidParams):
    """`memory/promote` or `memory/relax` of an id that names no memory it applies to."""

    reason = "memory_not_found"


class MemoryStoreError(KwardError):
    """A memory file kward must read or append to is unusable: core.json is not an array of
    records, or a file is a symlink, a FIFO, a device, another user's, or over the size
    cap. -32002, like an unusable config.json: the user has to fix or remove the file.
    `data.path` names it."""

    code = CONFIG_ERROR
    reason = "invalid_memory_store"


class MemoryFull(StateConflict):
    """An add (or promotion) beyond the cap of a memory layer (`kward.limits`); `data`
    names the `layer` and its `limit`. Forgetting memories makes room."""

    reason = "memory_full"


class LoggingDisabled(StateConflict):
    """`logging/stats` or `logging/tokenCsv` while no telemetry category (or not the one it
    reads) is enabled."""

    reason = "logging_disabled"


class CommandNotFound(InvalidParams):
    """`commands/run` or `prompts/expand` of a name no command has; a `/skill:<name>`
    turn of a name no skill has."""

    reason = "command_not_found"


class InputTooLarge(InvalidParams):
    """A turn's input, or the text a prompt template or skill command would expand it to,
    over `rpc.max_input_chars` (`actual` characters; `expanded`: the command that would
    expand to them, as typed, e.g. ``/plan``)."""

    reason = "input_too_large"

    def __init__(self, actual: int, limit: int, expanded: str | None = None):
        what = f"{expanded} expands to " if expanded else ""
        super().__init__(f"Input is too large: {what}{actual} characters (the limit is {limit})",
                         data={"input_error_code": "input_too_large", "max_chars": limit, "actual_chars": actual})


class PluginFailed(KwardError):
    """A plugin's code raised (or could not run); the plugin is at fault, not kward.
    `data` names the plugin and the command."""

    code = PLUGIN_ERROR
    reason = "plugin_failed"


class PluginTimeout(PluginFailed):
    """A plugin's code did not return in time; its thread is abandoned (it may still run)."""

    reason = "plugin_timeout"


class NothingToCompact(StateConflict):
    """`sessions/compact` of a conversation with nothing older than the kept recent part."""

    reason = "nothing_to_compact"

    def __init__(self) -> None:
        super().__init__("Nothing to compact")


class AlreadyCompacted(StateConflict):
    """`sessions/compact` right after a compaction: the summary is the last entry."""

    reason = "already_compacted"

    def __init__(self) -> None:
        super().__init__("Already compacted")


class EmptySummary(KwardError):
    """The summarizer (the model) answered nothing; the session is left as it was."""

    code = PROVIDER_ERROR
    reason = "empty_summary"

    def __init__(self) -> None:
        super().__init__("Compaction produced an empty summary; context was not changed.")


class TurnInProgress(StateConflict):
    """`sessions/compact` while a turn runs or is queued on the session in this process."""

    reason = "turn_in_progress"


_ERRNO_REASONS: dict[int, str] = {
    _errno.EROFS: "read_only_filesystem",
    _errno.EACCES: "permission_denied",
    _errno.EPERM: "permission_denied",
    _errno.ENOSPC: "disk_full",
    getattr(_errno, "EDQUOT", _errno.ENOSPC): "disk_full",
    _errno.ENOTDIR: "not_a_directory",
    _errno.ENAMETOOLONG: "name_too_long",
    _errno.ELOOP: "name_too_long",
    _errno.EMFILE: "too_many_open_files",
    _errno.ENFILE: "too_many_open_files",
}


def _first_non_directory(path: str) -> str | None:
    """The nearest ancestor of `path` that exists and is not a directory (the component
    that makes the OS answer ENOTDIR), or None. A few stat calls; error path only."""
    current = os.path.abspath(path)
    for _ in range(64):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
        if os.path.lexists(current):
            return None if os.path.isdir(current) else current
    return None


def as_kward_error(exc: BaseException) -> KwardError | None:
    """The one conversion used at every boundary (RPC responses, failed turns): a
    KwardError as it is, an OSError of a file operation as `FilesystemError`, anything
    else None (a bug: the caller logs it and answers `internal_error`). Network errors
    (ConnectionError, TimeoutError) and OSErrors without an errno are not filesystem
    failures and also give None."""
    if isinstance(exc, KwardError):
        return exc
    if isinstance(exc, OSError) and exc.errno is not None and not isinstance(exc, (ConnectionError, TimeoutError)):
        return FilesystemError.from_os_error(exc)
    return None
