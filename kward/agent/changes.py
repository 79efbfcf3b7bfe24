"""What a session's tool calls changed in its workspace: the baselines behind `turnDiff`
and `sessions/diff`.

A `ChangeTracker` belongs to one session file open in this process (every RPC id on it
shares it, as they share the turn queue). It is fed the `kward.model.FileChange`s of
every tool result (`record`, called by the agent loop) and keeps, per path, the
`Baseline`: whether a file was there before the first change the session made to it and,
when known, its content then. It keeps the same for the running turn, from `begin_turn`
to `end_turn` (the content before the turn's first change of the path). It never reads
the workspace: the net changes are computed against the files as they are on disk when
asked (`kward.agent.diffs.summarize`).

Only what this process saw is known: changes made before the session was opened here (a
resumed session) and changes no tool reported (an editor, a shell command that reports
none) are not, except as the difference between a tracked file's baseline and its
content now. A tool call whose list may miss files (`ToolResult.changes_complete` False: a
shell command's look was capped or failed) is recorded as such (`record(...,
complete=False)`): the session's baselines, and the running turn's, are then not
`complete` (for the session: from then on).

Memory is bounded, and what does not fit is dropped to "unknown" (the path is still
tracked, its diff cannot be shown): a baseline over MAX_BASELINE_BYTES (1 MiB), and any
baseline once the tracker holds MAX_TOTAL_BYTES (32 MiB) of them. At most MAX_PATHS
(10,000) paths are tracked; changes of further paths are counted (`untracked`), not kept.

Thread contract: `record`, `begin_turn` and `end_turn` run on the turn's worker thread
(one turn per session file at a time); `session_baselines`, `turn_baselines` and the
counts from any thread. `_lock` guards the maps and counters, held for one update or one
copy, never while a file is read. `SessionChanges` (the trackers by session file) locks
itself too.
"""

from __future__ import annotations

import logging
import posixpath
import threading
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Protocol

from kward.model import FileChange

log = logging.getLogger(__name__)

MAX_BASELINE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 32 * 1024 * 1024
MAX_PATHS = 10_000
STATUSES = ("added", "modified", "deleted")


@dataclass(frozen=True, slots=True)
class Baseline:
    """A path before the first change: `existed` (a file was there) and its `content`
    (``b""`` when it did not exist; None: it existed, content not known)."""

    existed: bool
    content: bytes | None


class Baselines(NamedTuple):
    """A copy of one map of baselines (path -> Baseline), how many changes of paths past
    MAX_PATHS were not kept (`untracked`), and whether every call recorded in it listed
    all the files it changed (`complete`)."""

    paths: dict[str, Baseline]
    untracked: int
    complete: bool = True


def clean_path(path: object) -> str | None:
    """`path` as a workspace-relative ``/``-separated path in normal form; None when it is
    not one (empty, absolute, leaving the workspace, holding a NUL byte)."""
    if not isinstance(path, str) or not path or "\x00" in path or path.startswith("/"):
        return None
    norm = posixpath.normpath(path)
    if norm in (".", "..") or norm.startswith("../"):
        return None
    return norm


class ChangeTracker:
    """The baselines of one session file (see the module docstring)."""

    def __init__(self, *, max_baseline: int = MAX_BASELINE_BYTES, max_total: int = MAX_TOTAL_BYTES,
                 max_paths: int = MAX_PATHS):
        self._max_baseline = max_baseline
        self._max_total = max_total
        self._max_paths = max_paths
        self._lock = threading.Lock()
        self._session: dict[str, Baseline] = {}
        self._turn: dict[str, Baseline] | None = None  # None: no turn running
        self._bytes = 0  # baseline content held (session and turn maps; a shared one once)
        self._turn_bytes = 0  # the part held by the turn's map alone (freed by end_turn)
        self._untracked = 0
        self._turn_untracked = 0
        self._complete = True  # (the session's; the turn's below)
        self._turn_complete = True

    def begin_turn(self) -> None:
        """A turn starts: its baselines start empty."""
        with self._lock:
            self._bytes -= self._turn_bytes
            self._turn, self._turn_bytes, self._turn_untracked = {}, 0, 0
            self._turn_complete = True

    def end_turn(self) -> None:
        """The turn ended: its own baselines are let go (the session's stay)."""
        with self._lock:
            self._bytes -= self._turn_bytes
            self._turn, self._turn_bytes, self._turn_untracked = None, 0, 0
            self._turn_complete = True

    def record(self, changes: Iterable[FileChange], complete: bool = True) -> None:
        """Take the changes one tool call reported (`complete` False: its list may miss
        files). The first change of a path sets its baseline (for the session and for the
        running turn); later ones change nothing. A change that is not one (a bad path or
        status) is ignored."""
        with self._lock:
            if not complete:
                self._complete = False
                if self._turn is not None:
                    self._turn_complete = False
            for change in changes:
                path = clean_path(change.path)
                if path is None or change.status not in STATUSES:
                    log.debug("ignored a file change of a tool: %r", change)
                    continue
                self._record(path, change)

    def _record(self, path: str, change: FileChange) -> None:
        """Caller holds `_lock`."""
        new_session = path not in self._session
        new_turn = self._turn is not None and path not in self._turn
        if not (new_session or new_turn):
            return
        if new_session and len(self._session) >= self._max_paths:
            self._untracked += 1
            if self._turn is not None:
                self._turn_untracked += 1
            return
        existed = change.status != "added"
        content = change.before if existed else b""
        cost = len(content) if content else 0
        if content is not None and (cost > self._max_baseline or self._bytes + cost > self._max_total):
            content, cost = None, 0  # too much to keep: its content is unknown
        baseline = Baseline(existed, content)
        if new_session:
            self._session[path] = baseline
        if new_turn and self._turn is not None:
            self._turn[path] = baseline
            if not new_session:
                self._turn_bytes += cost
        self._bytes += cost

    def session_baselines(self) -> Baselines:
        with self._lock:
            return Baselines(dict(self._session), self._untracked, self._complete)

    def turn_baselines(self) -> Baselines:
        """The running turn's (empty outside a turn)."""
        with self._lock:
            return Baselines(dict(self._turn or {}), self._turn_untracked, self._turn_complete)

    @property
    def held_bytes(self) -> int:
        """Baseline content held now (for the tests of the caps)."""
        with self._lock:
            return self._bytes


class SessionFile(Protocol):
    """What keys a tracker: an open session file (`kward.sessions.session.OpenSession`)."""

    @property
    def closed(self) -> bool: ...


class SessionChanges:
    """The trackers of the session files open in this process, made by the first model turn
    of each (`tracker`) and dropped when the file is closed (`drop`; a tracker whose file
    was closed another way goes when the next one is made). Any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trackers: dict[SessionFile, ChangeTracker] = {}

    def tracker(self, session: SessionFile) -> ChangeTracker:
        with self._lock:
            found = self._trackers.get(session)
            if found is None:
                for closed in [s for s in self._trackers if s.closed]:
                    del self._trackers[closed]
                found = self._trackers[session] = ChangeTracker()
            return found

    def get(self, session: SessionFile) -> ChangeTracker | None:
        with self._lock:
            return self._trackers.get(session)

    def drop(self, session: SessionFile) -> None:
        with self._lock:
            self._trackers.pop(session, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._trackers)
