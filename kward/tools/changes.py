"""What a shell command changed in the workspace: `ChangeWatch` looks before and after.

    watch = ChangeWatch(ctx.workspace_root, env, ctx.cancel)
    before = watch.begin()        # just before the command is spawned
    ...                           # the command runs
    changes = watch.end(before)   # after it exited or timed out (not after a cancel)
    changes.files                 # tuple[FileChange, ...], sorted by path
    changes.complete              # False: the list may miss files (see below)

How it looks (chosen by `begin`):

- **git**, when the workspace (or an ancestor) is a git work tree and ``git`` is on
  kward's PATH (`kward.tools.gitstatus`): ``git status`` before and after, and
  an ``lstat`` of every path either lists. A path listed before (dirty or untracked) is
  compared by its ``lstat`` signature (mtime_ns, size, inode, mode), so a file already
  dirty and modified again is seen; a path only listed after, or changed between the
  commits when the command moved HEAD, is compared with its entry in HEAD as it was
  before. What git ignores is not reported. A change of the index alone (``git add``) is
  no change of the file.
- **snapshot** otherwise, or when git fails: `kward.tools.snapshot` before and after
  (what it skips and its cap are stated there). A work tree whose ``git status`` timed
  out is looked at by snapshot for `SLOW_GIT_SECONDS` (so each command does not wait
  for git again).

"modified" means the file's content, type or permission bits changed. When kward kept
its content from before (below), a file found with the same bytes and mode again (a
``touch``, a rewrite with equal bytes) is not reported; otherwise a changed signature is
reported. A file changed less than `RECENT_NS` before the command began is compared by
content even when its signature looks the same (a second write within the filesystem's
timestamp granularity can keep the same mtime); when its content was not kept it is
reported as modified. Paths outside the workspace are never looked at.

Baselines (`FileChange.before`): ``b""`` for an added file. In git mode, for a modified
or deleted regular file: its bytes read before the command (a path git listed before)
or its blob in HEAD as it was before (a clean path), each only when at most
`MAX_FILE_BYTES`, and at most `MAX_CALL_BYTES` of each kind per call; else None. In
snapshot mode None. Bytes read before are cached by (path, signature) across calls
(`BaselineCache`), so a dirty file is read once while it does not change.

`complete` is False when the snapshot hit its cap or git listed more than `MAX_ENTRIES`
paths (then `files` is empty), when a directory could not be read (then `files` holds
what was seen), or when the look failed (logged; `files` empty). A failure never fails
the command. `kward.errors.Canceled` passes through (during `begin`: the command does
not run).

Threads: a watch is used by one thread (the turn's worker); `begin` and `end` block it
while git runs or the tree is walked. `BaselineCache` is shared by every watch of the
process and guarded by its lock.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, NamedTuple, Union

from kward.cancel import CancelToken
from kward.confined import Escape, open_below
from kward.errors import Canceled
from kward.fsutil import read_fd
from kward.model import FileChange
from kward.tools import snapshot
from kward.tools.gitstatus import Git, GitUnavailable, Status, TreeEntry
from kward.tools.snapshot import Sig, signature

log = logging.getLogger(__name__)

MAX_ENTRIES = snapshot.MAX_ENTRIES
MAX_FILE_BYTES = 1024 * 1024
MAX_CALL_BYTES = 8 * 1024 * 1024
CACHE_BYTES = 16 * 1024 * 1024
RECENT_NS = 1_000_000_000
SLOW_GIT_SECONDS = 600.0

_slow_lock = threading.Lock()
_slow_git: dict[str, float] = {}  # workspace -> monotonic time until which git is not asked


class Changes(NamedTuple):
    files: tuple[FileChange, ...]
    complete: bool
    method: str  # "git", "snapshot" or "none" (the look failed)

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


# --- reading files ------------------------------------------------------------------------

def read_file(root: str, rel: str, sig: Sig) -> bytes | None:
    """The bytes of regular file `rel` below `root` if it still has signature `sig`
    (reached without following any symlink); else None."""
    try:
        node = open_below(root, rel.split("/"), follow=False)
    except (Escape, OSError):
        return None
    with node:
        if not node.is_file or node.st is None or signature(node.st) != sig:
            return None
        data = read_fd(node.fd, sig[1] + 1) if node.fd is not None else b""
    return data if len(data) == sig[1] else None


class BaselineCache:
    """File contents read before commands, by absolute path and signature, least recently
    used dropped first past `capacity` bytes. Any thread; `_lock` guards the table."""

    def __init__(self, capacity: int = CACHE_BYTES):
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[Sig, bytes]] = OrderedDict()
        self._size = 0

    def read(self, root: str, rel: str, sig: Sig, *, cache: bool = True) -> bytes | None:
        """`read_file`, served from the cache while `sig` is unchanged. `cache=False` (a
        file changed moments ago, whose signature may not show a second change) reads
        it and keeps nothing."""
        key = os.path.join(root, rel)
        if cache:
            with self._lock:
                hit = self._items.get(key)
                if hit is not None and hit[0] == sig:
                    self._items.move_to_end(key)
                    return hit[1]
        data = read_file(root, rel, sig)
        if data is not None and cache and len(data) <= self.capacity:
            with self._lock:
                old = self._items.pop(key, None)
                if old is not None:
                    self._size -= len(old[1])
                self._items[key] = (sig, data)
                self._size += len(data)
                while self._size > self.capacity:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self._size -= len(dropped)
        return data


_CACHE = BaselineCache()


class _Budget:
    """Bytes still allowed for one kind of content in one call."""

    def __init__(self) -> None:
        self.left = MAX_CALL_BYTES

    def take(self, size: int) -> bool:
        if size > MAX_FILE_BYTES or size > self.left:
            return False
        self.left -= size
        return True


def _lstat(root: str, rel: str) -> Sig | None:
    """The signature of the file (not directory) at `rel`; None when there is none."""
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:  # missing (or unreachable: the same for before and after)
        return None
    return None if stat.S_ISDIR(st.st_mode) else signature(st)


def _git_mode(sig: Sig) -> str:
    mode = sig[3]
    if stat.S_ISLNK(mode):
        return "120000"
    if stat.S_ISREG(mode):
        return "100755" if mode & stat.S_IXUSR else "100644"
    return ""


def _is_regular(sig: Sig | None) -> bool:
    return sig is not None and stat.S_ISREG(sig[3])


# --- the watch ----------------------------------------------------------------------------

@dataclass(slots=True)
class _GitBefore:
    git: Git
    status: Status
    sigs: dict[str, Sig | None]  # lstat of each path listed (None: missing)
    kept: dict[str, bytes]  # contents read before, of listed regular files
    links: dict[str, bytes]  # targets of listed symlinks
    recent: set[str]  # listed regular files changed less than RECENT_NS before begin


@dataclass(slots=True)
class _SnapshotBefore:
    snapshot: snapshot.Snapshot
    kept: dict[str, bytes] = field(default_factory=dict)  # contents of the recent files


@dataclass(slots=True)
class _Nothing:
    """The look could not be taken (or is capped): `end` reports nothing, incomplete."""

    method: str


Before = Union[_GitBefore, _SnapshotBefore, _Nothing]


class ChangeWatch:
    """Before/after change detection for one command in `root` (see the module doc);
    `env` is the environment the command gets (git runs with it, less redirections)."""

    def __init__(self, root: Path | str, env: Mapping[str, str], cancel: CancelToken,
                 cache: BaselineCache = _CACHE):
        self.root = str(root)
        self.env = env
        self.cancel = cancel
        self.cache = cache

    def begin(self) -> Before:
        try:
            git = None if self._git_is_slow() else Git.find(self.root, self.env, self.cancel)
            if git is not None:
                try:
                    return self._git_begin(git)
                except GitUnavailable as exc:
                    log.info("changed files of %s by snapshot: %s", self.root, exc)
                    self._note_slow(exc)
            return self._snapshot_begin()
        except Canceled:
            raise
        except Exception:  # never fail the command for this
            log.exception("changed-file detection failed before the command in %s", self.root)
            return _Nothing("none")

    def end(self, before: Before) -> Changes:
        try:
            if isinstance(before, _GitBefore):
                try:
                    return self._git_end(before)
                except GitUnavailable as exc:
                    log.info("changed files of %s unknown: %s", self.root, exc)
                    self._note_slow(exc)
                    return Changes((), False, "git")
            if isinstance(before, _SnapshotBefore):
                return self._snapshot_end(before)
            return Changes((), False, before.method)
        except Canceled:
            raise
        except Exception:
            log.exception("changed-file detection failed after the command in %s", self.root)
            return Changes((), False, "none")

    # --- git ------------------------------------------------------------------------------

    def _git_is_slow(self) -> bool:
        with _slow_lock:
            until = _slow_git.get(self.root)
            if until is not None and until <= time.monotonic():
                del _slow_git[self.root]
                until = None
        return until is not None

    def _note_slow(self, exc: GitUnavailable) -> None:
        if exc.timed_out:
            with _slow_lock:
                _slow_git[self.root] = time.monotonic() + SLOW_GIT_SECONDS

    def _git_begin(self, git: Git) -> Before:
        recent_since = time.time_ns() - RECENT_NS
        status = git.status()
        if len(status.paths) > MAX_ENTRIES:
            return _Nothing("git")
        sigs = {p: _lstat(self.root, p) for p in status.paths}
        recent = {p for p, sig in sigs.items() if _is_regular(sig) and sig is not None and sig[0] >= recent_since}
        budget, kept, links = _Budget(), {}, {}
        for path in sorted(sigs):
            sig = sigs[path]
            if sig is not None and stat.S_ISLNK(sig[3]):
                target = self._link(path)
                if target is not None:
                    links[path] = target
            elif sig is not None and _is_regular(sig) and budget.take(sig[1]):
                data = self.cache.read(self.root, path, sig, cache=path not in recent)
                if data is None:
                    budget.left += sig[1]
                else:
                    kept[path] = data
        return _GitBefore(git, status, sigs, kept, links, recent)

    def _git_end(self, b: _GitBefore) -> Changes:
        git, was = b.git, b.status
        now_status = git.status()
        candidates = set(was.paths) | now_status.paths
        if now_status.head is not None and now_status.head != was.head:
            candidates |= git.changed_between(was.head, now_status.head)
        if len(candidates) > MAX_ENTRIES:
            return Changes((), False, "git")
        now = {p: _lstat(self.root, p) for p in candidates}
        clean = sorted(p for p in candidates if p not in was.paths)
        head = git.head_entries(was.head, clean) if was.head is not None and clean else {}
        budget = _Budget()
        wanted = [e.oid for p, e in sorted(head.items()) if e.mode in ("100644", "100755", "120000")
                  and budget.take(e.size)]
        blobs = git.blobs(wanted)
        files: list[FileChange] = []
        for path in sorted(candidates):
            if path in was.paths:
                change = self._listed_change(path, b.sigs[path], now[path], b)
            else:
                change = self._clean_change(path, head.get(path), now[path], blobs)
            if change is not None:
                files.append(change)
        return Changes(tuple(files), True, "git")

    def _link(self, path: str) -> bytes | None:
        try:
            return os.fsencode(os.readlink(os.path.join(self.root, path)))
        except OSError:
            return None

    def _same_bytes(self, path: str, sig: Sig, data: bytes | None) -> bool:
        """Whether regular file `path` (signature `sig` now) holds exactly `data`."""
        if data is None or not _is_regular(sig) or sig[1] != len(data):
            return False
        return read_file(self.root, path, sig) == data

    def _listed_change(self, path: str, was: Sig | None, now: Sig | None, b: _GitBefore) -> FileChange | None:
        """A path git listed before: compared by its lstat (and content when kept)."""
        if was is None:
            return None if now is None else FileChange(path, "added", b"")
        kept = b.kept.get(path)
        if now is None:
            return FileChange(path, "deleted", kept)
        if was == now and path not in b.recent:
            return None
        if was[3] == now[3]:
            if stat.S_ISLNK(now[3]):
                if b.links.get(path) is not None and self._link(path) == b.links[path]:
                    return None
            elif self._same_bytes(path, now, kept):
                return None
        return FileChange(path, "modified", kept)

    def _clean_change(self, path: str, entry: TreeEntry | None, now: Sig | None,
                      blobs: dict[str, bytes]) -> FileChange | None:
        """A path git did not list before: as it was in HEAD, or absent."""
        if entry is None:
            return None if now is None else FileChange(path, "added", b"")
        blob = blobs.get(entry.oid)
        before = blob if entry.mode in ("100644", "100755") else None
        if now is None:
            return FileChange(path, "deleted", before)
        if blob is not None and _git_mode(now) == entry.mode:
            if entry.mode == "120000":
                if self._link(path) == blob:
                    return None
            elif self._same_bytes(path, now, blob):
                return None
        return FileChange(path, "modified", before)

    # --- snapshot -------------------------------------------------------------------------

    def _snapshot_begin(self) -> Before:
        snap = snapshot.take(self.root, recent_since_ns=time.time_ns() - RECENT_NS)
        if snap.capped:
            log.info("changed files of %s not reported: more than %d entries", self.root, MAX_ENTRIES)
            return _Nothing("snapshot")
        budget, kept = _Budget(), {}
        for path, sig in sorted(snap.recent.items()):
            if budget.take(sig[1]):
                data = read_file(self.root, path, sig)
                if data is not None:
                    kept[path] = data
        return _SnapshotBefore(snap, kept)

    def _snapshot_end(self, b: _SnapshotBefore) -> Changes:
        after = snapshot.take(self.root)
        if after.capped:
            return Changes((), False, "snapshot")
        found = dict(snapshot.diff(b.snapshot, after))
        for path, sig in b.snapshot.recent.items():
            if path in found:
                continue
            rel, _, name = path.rpartition("/")
            if after.dirs.get(rel + "/" if rel else "", {}).get(name) != sig:
                continue  # gone with its directory, or unseen
            if not self._same_bytes(path, sig, b.kept.get(path)):
                found[path] = "modified"
        files = tuple(FileChange(p, s, b"" if s == "added" else None) for p, s in sorted(found.items()))
        return Changes(files, b.snapshot.complete and after.complete, "snapshot")
