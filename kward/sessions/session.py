"""An open session file: its file, its live state, the busy/idle bookkeeping cleanup
needs, and closing and deleting it. This process opens each session file once: every RPC
id on it is a `kward.sessions.handle.SessionHandle` over the same OpenSession (one writer,
one turn lock).

Thread contract: one `threading.RLock` per OpenSession (``_lock``) guards the live state
(conversation, name, read paths, the file offset the state reflects), the busy/closing
flags and the turn lock's descriptor. Every append happens under it, so this process's
view changes in file order. Records appended by other processes are folded in by
`refresh` (called by `turn_lock`, `info`, `rename`, `name`, `entry_messages` and
before cleanup decisions) and when our own append lands after them. Any thread may call
any method; the agent loop's worker thread appends inside `turn_lock`. The lock is held
for one record or one check at a time, never for a whole turn.

A file that vanished (deleted, moved, replaced by another file) makes every append,
`rename` and `sync` raise SessionFileGone; cleanup never deletes what is at its path.

Closing and deleting: a closed session is fsynced and its descriptor released (at once,
or when its running turn ends: `end_work`); an unused one (idle, empty, unnamed, still
ours at its path, and open in no other process) is deleted instead. `delete` removes the
file whatever it holds, refused (`session_in_use`) while another process has it open
unless forced; a file another one replaced at the path is never deleted
(`session_file_gone`). Whether another process has it open is asked under the turn lock
(`SessionFile.exclusive_presence`).

Watching: `watch(watcher)` (the session manager, when it registers the session) makes
every append of this process that changes the name or the cumulative usage (`spent`) call
``watcher(session, Changed)``, under ``_lock`` and in append order (so a face reports
changes in the order they happened). The watcher must be quick, must not block and must
not wait for another thread that takes this session's lock. Records of other processes
folded in by `refresh` are not reported (their effect shows in the next report).

Messages are treated as immutable once appended: they are shared, not copied, between the
live list, clones and forks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

from kward.errors import SessionFileGone, SessionInUse, SessionNotFound
from kward.model import MESSAGE_TYPES, Message, ToolCall, ToolResult, Usage
from kward.sessions.codec import encode, tool_execution_fields
from kward.sessions.format import (
    EXTRA_TYPES,
    SessionHeader,
    clean_name,
    make_record,
    message_record,
    session_info_record,
)
from kward.sessions.lines import LineScanner, range_reader
from kward.sessions.reader import SkipReport, body_records
from kward.sessions.replay import MemoryState, Replay
from kward.sessions.store import SessionFile, remove_session_files, try_turn_lock
from kward.timefmt import iso_from_ns, normalize_iso

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session as the faces show it (the protocol's session payload). `id` is the RPC id
    (None from `OpenSession.info`: the handle adds it); None fields are unknown."""

    id: str | None
    persistent_id: str
    path: str
    workspace_root: str
    cwd: str
    name: str | None
    created_at: str | None
    modified_at: str | None
    parent_id: str | None
    parent_path: str | None


class Changed(NamedTuple):
    """What one record this process appended changed (see `OpenSession.watch`): the name
    (`renamed`: it is now `name`, None when cleared) and/or the cumulative usage
    (`usage_changed`: it is now `spent`)."""

    renamed: bool
    name: str | None
    usage_changed: bool
    spent: Usage


#: `watcher(session, change)`: see `OpenSession.watch`.
Watcher = Callable[["OpenSession", Changed], None]


class OpenSession:
    """One session file opened by this process. Build with ``kward.sessions.opening``
    (`create_session`, `load_session`, `derive_session`)."""

    def __init__(self, file: SessionFile, header: SessionHeader, replay: Replay, offset: int,
                 workspace_root: str, *, skipping: bool = False):
        self.header = header
        self.workspace_root = workspace_root
        self._file = file
        self._replay = replay
        self._offset = offset  # the state reflects the file up to here
        self._skipping = skipping  # `_offset` lies inside an over-long line (skipped)
        self._lock = threading.RLock()
        self._busy = 0
        self._closing = False
        self._finalized = False
        self._turn_lock_fd: int | None = None
        self._watcher: Watcher | None = None

    def __repr__(self) -> str:
        return f"OpenSession({self.path!r})"

    # --- read-only views -------------------------------------------------------------

    @property
    def path(self) -> str:
        return str(self._file.path)

    @property
    def persistent_id(self) -> str:
        return self.header.id

    @property
    def name(self) -> str | None:
        """The current name, including a rename another process appended since our last look."""
        with self._lock:
            self.refresh()
            return self._replay.name

    @property
    def conversation(self) -> list[Message]:
        """The live message list (not a copy): read it, never mutate it."""
        return self._replay.conversation

    @property
    def read_paths(self) -> set[str]:
        """Real paths read successfully in this conversation (the tools layer may add)."""
        return self._replay.read_paths

    @property
    def memory_state(self) -> MemoryState | None:
        return self._replay.memory_state

    @property
    def model(self) -> str | None:
        return self._replay.model

    @property
    def reasoning_effort(self) -> str | None:
        return self._replay.reasoning_effort

    @property
    def is_empty(self) -> bool:
        """No user/assistant/tool message was ever written and no name is set."""
        with self._lock:
            return self._empty()

    def _empty(self) -> bool:
        """Under `_lock`: see `is_empty`."""
        return self._replay.content_messages == 0 and self._replay.name is None

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._busy > 0

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._closing

    def entry_messages(self) -> list[Message]:
        """Non-system live messages: the list ``message:<n>`` entry ids index, including
        messages another process appended since our last look."""
        with self._lock:
            self.refresh()
            return [m for m in self._replay.conversation if m.role != "system"]

    def spent(self) -> Usage:
        """The session's cumulative usage (`Replay.spent`), with what other processes
        appended so far."""
        with self._lock:
            self.refresh()
            return self._replay.spent

    def snapshot(self) -> tuple[list[Message], set[str]]:
        """(non-system live messages, copy of the read paths), consistent with each other
        and with everything other processes appended so far."""
        with self._lock:
            self.refresh()
            return self.entry_messages(), set(self._replay.read_paths)

    # --- writing ---------------------------------------------------------------------

    def append_message(self, message: Message) -> None:
        """Persist `message` (one line, written before return) and add it to the live list."""
        if not isinstance(message, MESSAGE_TYPES):
            raise TypeError(f"not a kward.model message: {type(message).__name__}")
        record = message_record(encode(message))
        with self._lock:
            self._append(record, lambda: self._replay.add_message(message))

    def append_tool_execution(self, call: ToolCall, result: ToolResult) -> None:
        """Persist the ``tool_execution_end`` audit record of a finished tool call."""
        self.append_record("tool_execution_end", **tool_execution_fields(call, result))

    def append_record(self, record_type: str, **fields: object) -> dict[str, Any]:
        """Persist a ``compaction``, ``tool_execution_end``, ``memory_state`` or
        ``session_info`` record and apply it to the live state; return the record.

        A session_info without ``name`` carries the current name (so it does not clear it);
        a compaction (``message=<compactionSummary>``) rebuilds the live list and clears the
        read paths exactly as a reload would.
        """
        if record_type not in EXTRA_TYPES:
            raise ValueError(f"append_record cannot write {record_type!r} records")
        with self._lock:
            if record_type == "session_info" and "name" not in fields:
                self.refresh()  # the current name may have been set by another process
                if self._replay.name is not None:
                    fields = {"name": self._replay.name, **fields}
            if record_type == "compaction" and not isinstance(fields.get("message"), dict):
                raise ValueError("a compaction record needs message={...compactionSummary...}")
            record = make_record(record_type, **fields)
            self._append(record, lambda: self._replay.apply(record))
            return record

    def rename(self, name: str | None) -> None:
        """Set or clear (empty/None) the name: appends a session_info record."""
        with self._lock:
            self.refresh()
            record = session_info_record(clean_name(name))
            self._append(record, lambda: self._replay.apply(record))

    def sync(self) -> None:
        """fsync what was appended (end of a turn), then confirm that the file is still
        the one at its path: SessionFileGone when it was deleted, moved or replaced, since
        what was appended is then lost."""
        self._file.descriptor.sync()
        self._file.descriptor.check_present()

    def present(self) -> bool:
        """Whether the file is still open and the one at its path."""
        try:
            return self._file.descriptor.state() == "present"
        except ValueError:  # closed
            return False

    def watch(self, watcher: Watcher | None) -> None:
        """Report this process's changes of the name and of the usage to `watcher` (see
        the module docstring); None: report nothing."""
        with self._lock:
            self._watcher = watcher

    def _append(self, record: dict[str, Any], apply: Callable[[], object]) -> None:
        if self._finalized:
            raise SessionNotFound(self.path)
        start, end = self._file.append(record)
        if start > self._offset:  # another process appended since our last look
            self._catch_up(start)
        self._offset = end  # before applying: if that fails, the line is never read back and applied twice
        self._skipping = False
        replay = self._replay
        name, spent = replay.name, replay.spent  # (others' records included: only ours are reported)
        apply()
        watcher = self._watcher
        if watcher is not None and (replay.name != name or replay.spent != spent):
            try:
                watcher(self, Changed(replay.name != name, replay.name, replay.spent != spent, replay.spent))
            except Exception:  # the record is written: a report that failed must not fail the append
                log.exception("a session watcher failed")

    # --- other processes -------------------------------------------------------------

    def refresh(self) -> None:
        """Fold in complete records other processes appended since our last look (nothing
        when the file is gone: see `PooledDescriptor.size`)."""
        with self._lock:
            if self._finalized:
                return
            try:
                size = self._file.descriptor.size()
            except SessionFileGone:
                return
            if size > self._offset:
                self._catch_up(size)

    def _catch_up(self, upto: int) -> None:
        """Apply the complete records in [_offset, upto), in bounded memory (an
        unterminated last line is left for a later look)."""
        report = SkipReport(self.path)
        scanner = LineScanner(range_reader(self._file.descriptor.pread, self._offset, upto), self._offset,
                              skipping=self._skipping)
        for record in body_records(scanner, report):
            if not self._replay.apply(record):
                report.note("invalid", f"byte {scanner.consumed}")
        report.count_scan(scanner)
        self._offset, self._skipping = scanner.consumed, scanner.skipping
        report.emit()

    # --- turns, busy state ------------------------------------------------------------

    def begin_work(self) -> None:
        """Mark a queued or running turn, or an answer being built (not idle: cleanup
        leaves the session alone). Raises SessionNotFound when the session was closed."""
        with self._lock:
            if self._closing:
                raise SessionNotFound(self.path)
            self._busy += 1

    def end_work(self) -> None:
        """Undo one `begin_work`; a close requested meanwhile completes here."""
        with self._lock:
            self._busy -= 1
            if self._busy == 0 and self._closing and not self._finalized:
                self._finalize(delete_if_unused=True)

    @contextlib.contextmanager
    def work(self) -> Iterator["OpenSession"]:
        self.begin_work()
        try:
            yield self
        finally:
            self.end_work()

    @contextlib.contextmanager
    def turn_lock(self) -> Iterator["OpenSession"]:
        """Hold the cross-process turn lock for a turn or compaction; SessionBusy at once
        when another process holds it, SessionFileGone when the file is gone. Catches up
        with others' records on entry and fsyncs on exit. The session counts as busy
        meanwhile, and its file keeps its descriptor (pinned)."""
        with self.work(), self._file.descriptor.pinning():
            fd = self._file.take_turn_lock(label=self.path)
            with self._lock:
                self._turn_lock_fd = fd
            try:
                self.refresh()
                yield self
            finally:
                try:
                    self._file.descriptor.sync()
                finally:
                    with self._lock:  # `_alone` reads it under the lock
                        self._turn_lock_fd = None
                        os.close(fd)  # releases the flock

    # --- what a face shows ------------------------------------------------------------

    def info(self) -> SessionInfo:
        """What the faces show of the session (without an RPC id: the handle adds it).
        `modified_at` (the file's mtime) is never before `created_at` (the header's time,
        from another clock)."""
        self.refresh()
        try:
            mtime = iso_from_ns(self._file.descriptor.fstat().st_mtime_ns)
        except (OSError, ValueError, SessionFileGone):  # closed, or gone
            mtime = None
        header = self.header
        created = normalize_iso(header.timestamp) or mtime
        return SessionInfo(id=None, persistent_id=header.id, path=self.path, workspace_root=self.workspace_root,
                           cwd=header.cwd or self.workspace_root, name=self.name, created_at=created,
                           modified_at=max(mtime, created) if mtime and created else mtime,
                           parent_id=header.parent_id, parent_path=header.parent_path)

    # --- closing and deleting ---------------------------------------------------------

    def close(self, *, delete_if_unused: bool = True) -> bool:
        """Stop accepting work; fsync and close the file (at once, or when the running
        turn ends). Returns True when the file was deleted as unused (idle, empty,
        unnamed, no other process has it open)."""
        with self._lock:
            if self._closing:
                return False
            self._closing = True
            if self._busy:
                return False
            return self._finalize(delete_if_unused=delete_if_unused)

    def delete_if_unused(self) -> bool:
        """Close and delete the file if idle, empty and unnamed, re-checked against the
        file under the turn lock (skipped if another process holds it). When it returns
        False the session stays open and usable."""
        with self._lock:
            if self._closing or self._busy or not self._try_delete_unused():
                return False
            self._closing = True
            self._finalized = True
            return True

    def check_deletable(self, *, force: bool = False) -> None:
        """Raise what `delete` would (SessionFileGone when another file is at the path now;
        unless `force`, SessionInUse when another process has it open); changes nothing."""
        with self._lock:
            if self._finalized:  # deleted or closed by a concurrent request
                raise SessionNotFound(self.path)
            if self._gone_state() is None and not force:
                with self._alone() as alone:
                    if not alone:
                        raise self._in_use()

    def delete(self, *, force: bool = False) -> str:
        """Close and remove the file and its sidecars, whatever they hold. Without `force`,
        SessionInUse when another process has it open; SessionFileGone when another file
        is at the path now (both change nothing); a missing file only loses its sidecars."""
        with self._lock:
            if self._finalized:  # deleted or closed by a concurrent request
                raise SessionNotFound(self.path)
            if self._gone_state() == "missing":
                self._closing = self._finalized = True
                self._close_gone()
            elif force:
                self._closing = self._finalized = True
                self._file.delete()
            else:
                with self._alone() as alone:
                    if not alone:
                        raise self._in_use()
                    self._closing = self._finalized = True
                    self._file.delete()  # while nobody else can open it
            return self.path

    def _gone_state(self) -> str | None:
        """Under `_lock`: None while the file is ours at its path, ``missing`` when
        nothing is there; SessionFileGone when another file is there now."""
        state = self._file.descriptor.state()
        if state == "replaced":
            self._file.descriptor.check_present()  # raises, naming the path
        return None if state == "present" else state

    def _close_gone(self) -> None:
        """Close a session whose file is missing, removing the sidecars left beside it."""
        try:
            with contextlib.suppress(OSError):  # tidying only
                remove_session_files(self._file.path, sidecars_only=True)
        finally:
            self._file.close()

    def _in_use(self) -> SessionInUse:
        return SessionInUse(f"Session is open in another process: {self.path}; close it there, "
                            "or pass force: true to delete it anyway", data={"path": self.path})

    @contextlib.contextmanager
    def _alone(self) -> Iterator[bool]:
        """Under `_lock`: yield True when no other process has the file open or runs a
        turn on it; while the block runs with True nobody can open it.

        The presence check must run under the turn lock (see
        ``SessionFile.exclusive_presence``): ours when a turn of this process holds it,
        else taken for the check (busy elsewhere: not alone)."""
        lock_fd = None
        if self._turn_lock_fd is None:
            lock_fd = try_turn_lock(self._file.lock_path)
            if lock_fd is None:
                yield False
                return
        try:
            with self._file.exclusive_presence() as alone:
                yield alone
        finally:
            if lock_fd is not None:
                os.close(lock_fd)

    def _finalize(self, *, delete_if_unused: bool) -> bool:
        """Under `_lock`, closing and not busy: delete when unused, else fsync and close."""
        try:
            deleted = delete_if_unused and self._try_delete_unused()
        except OSError as exc:  # e.g. the directory became read-only: keep the file
            log.warning("Could not remove unused session %s: %s", self.path, exc)
            deleted = False
        self._finalized = True
        if not deleted:
            if delete_if_unused and self._file.descriptor.state() == "missing":
                self._close_gone()
            else:
                self._file.close()
        return deleted

    def _try_delete_unused(self) -> bool:
        """Under `_lock`: delete the file when empty and unnamed, still ours (not gone)
        and no other process runs a turn on it or has it open, re-checking emptiness
        against the file meanwhile. True when deleted."""
        if not self._empty() or not self.present():
            return False
        with self._alone() as alone:
            if not alone:
                return False  # another process has it open or runs a turn on it
            self.refresh()
            if not self._empty():
                return False
            self._file.delete()
        log.info("Deleted unused session %s", self.path)
        return True
