"""Git looks for `kward.tools.changes`: what ``git status`` lists (`kward.tools.gitstatus`),
the ``lstat`` signature of each listed path, and the contents (symlink targets) of the
listed files, read by `prepare` just before a command.

- `take`: a full ``git status``; `compare_full(before)`: another, and what changed from
  `before` (each path either lists, and when HEAD moved each path that differs between the
  two commits).
- With a `DirWatcher`: `refresh(look, activity)` brings a kept look up to date with what
  changed since it was taken (between two commands: reported by neither), and
  `compare_watched(look, activity)` does the same after a command and returns what it
  changed. Files that only had events between commands become `pending`: their
  signatures (and contents, by `prepare`) are taken before the command, git is not asked
  then; after the command one ``git status -- <paths>`` for the paths the watcher named
  (files with events, directories made or gone) and the pending ones is merged into the
  look. Directories made or gone between commands are asked about at once. With more than
  `MAX_SPECS` paths (or HEAD not where the look had it) they return None and the caller
  takes a full look.

How a path is compared: one git listed before, or pending, by its signature (and
content, when the signature looks the same and it changed less than `RECENT_NS` before
the look, or the watcher saw it written), one clean before with its blob in HEAD as it
was (read with git's filters: the bytes a checkout writes). A pending path that changed
and that git does not list after is reported only if git does not ignore it (it is in
HEAD when it is there, ``git check-ignore`` says so when it is gone). Baselines
(`FileChange.before`): the bytes read before, the blob, ``b""`` for an added file; each at
most `MAX_FILE_BYTES`, and `MAX_CALL_BYTES` of each kind per command.

Pure functions over git, the filesystem and the look they are given (mutated by `refresh`,
`prepare` and `compare_watched`: the caller owns it); any thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from kward.model import FileChange
from kward.tools import baselines, snapshot
from kward.tools.baselines import (
    RECENT_NS,
    BaselineCache,
    Budget,
    git_mode,
    is_link,
    is_regular,
    lstat_sig,
    read_link,
    same_bytes,
)
from kward.tools.fswatch import Activity
from kward.tools.gitstatus import MAX_ARGV_BYTES, Git, TreeEntry
from kward.tools.snapshot import Sig

MAX_ENTRIES = snapshot.MAX_ENTRIES
MAX_SPECS = 1000
_BLOB_MODES = ("100644", "100755", "120000")


@dataclass(slots=True)
class GitLook:
    """HEAD's commit, the paths git lists, those `pending` (see the module doc) and the
    signatures of both (None: missing); `kept` and `links` the contents and targets read
    of them, `unread` those still to read, `recent` the regular files among them changed
    less than RECENT_NS before a look."""

    head: str | None
    listed: set[str]
    sigs: dict[str, Sig | None]
    kept: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, bytes] = field(default_factory=dict)
    recent: set[str] = field(default_factory=set)
    unread: set[str] = field(default_factory=set)
    kept_bytes: int = 0
    pending: set[str] = field(default_factory=set)

    def forget(self, path: str) -> None:
        """Drop what was read of `path`."""
        data = self.kept.pop(path, None)
        if data is not None:
            self.kept_bytes -= len(data)
        self.links.pop(path, None)


class Compared(NamedTuple):
    files: tuple[FileChange, ...]
    complete: bool
    after: GitLook | None  # the look after the command (None: capped)


def _since() -> int:
    return time.time_ns() - RECENT_NS


def _fresh(sig: Sig | None, since: int) -> bool:
    return sig is not None and is_regular(sig) and sig[0] >= since


def _set_sig(look: GitLook, path: str, sig: Sig | None, since: int) -> None:
    """Record `path`'s signature in `look`, and whether it changed too recently to trust it."""
    look.sigs[path] = sig
    if _fresh(sig, since):
        look.recent.add(path)
    else:
        look.recent.discard(path)


def _look(head: str | None, paths: frozenset[str], sigs: dict[str, Sig | None], since: int) -> GitLook:
    return GitLook(head, set(paths), {p: sigs[p] for p in paths}, recent={p for p in paths if _fresh(sigs[p], since)},
                   unread=set(paths))


def take(git: Git, root: str) -> GitLook | None:
    """A full look; None past MAX_ENTRIES listed paths (it tells nothing)."""
    since = _since()
    status = git.status()
    if len(status.paths) > MAX_ENTRIES:
        return None
    return _look(status.head, status.paths, {p: lstat_sig(root, p) for p in status.paths}, since)


def prepare(look: GitLook, root: str, cache: BaselineCache) -> None:
    """Just before the command: read what is unread (within the bounds; a file that does
    not fit stays unread) and keep as recent what still is."""
    since = _since()
    look.recent = {p for p in look.recent if _fresh(look.sigs.get(p), since)}
    left = baselines.MAX_CALL_BYTES - look.kept_bytes
    unfit = set()
    for path in sorted(look.unread):
        sig = look.sigs.get(path)
        if sig is not None and is_link(sig):
            target = read_link(root, path)
            if target is not None:
                look.links[path] = target
        elif sig is not None and is_regular(sig):
            if sig[1] > baselines.MAX_FILE_BYTES:
                continue
            if sig[1] > left:
                unfit.add(path)
                continue
            data = cache.read(root, path, sig, cache=path not in look.recent)
            if data is not None:
                look.kept[path] = data
                look.kept_bytes += len(data)
                left -= len(data)
    look.unread = unfit


def _listed_change(root: str, path: str, was: Sig | None, now: Sig | None, b: GitLook,
                   written: set[str] | None) -> FileChange | None:
    """A path git listed before: compared by its lstat (and content when kept)."""
    if was is None:
        return None if now is None else FileChange(path, "added", b"")
    kept = b.kept.get(path)
    if now is None:
        return FileChange(path, "deleted", kept)
    if was == now and (path not in b.recent or (written is not None and path not in written)):
        return None
    if was[3] == now[3]:
        if is_link(now):
            if b.links.get(path) is not None and read_link(root, path) == b.links[path]:
                return None
        elif same_bytes(root, path, now, kept):
            return None
    return FileChange(path, "modified", kept)


def _clean_change(root: str, path: str, entry: TreeEntry | None, now: Sig | None,
                  blobs: dict[str, bytes]) -> FileChange | None:
    """A path git did not list before: as it was in HEAD, or absent."""
    if entry is None:
        return None if now is None else FileChange(path, "added", b"")
    blob = blobs.get(path)
    before = blob if entry.mode in ("100644", "100755") else None
    if now is None:
        return FileChange(path, "deleted", before)
    if blob is not None and git_mode(now) == entry.mode:
        if entry.mode == "120000":
            if read_link(root, path) == blob:
                return None
        elif same_bytes(root, path, now, blob):
            return None
    return FileChange(path, "modified", before)


def _changes(git: Git, root: str, b: GitLook, candidates: set[str], now: dict[str, Sig | None],
             written: set[str] | None, listed_now: frozenset[str],
             drivers: frozenset[str] | None) -> tuple[FileChange, ...]:
    known = b.listed | b.pending
    clean = sorted(p for p in candidates if p not in known)
    head = git.head_entries(b.head, clean) if b.head is not None and clean else {}
    budget = Budget()
    wanted = {p: e for p, e in sorted(head.items()) if e.mode in _BLOB_MODES and budget.take(e.size)}
    blobs = git.head_contents(wanted, drivers) if wanted else {}
    found: dict[str, FileChange] = {}
    for path in candidates:
        if path in known:
            change = _listed_change(root, path, b.sigs.get(path), now[path], b, written)
        else:
            change = _clean_change(root, path, head.get(path), now[path], blobs)
        if change is not None:
            found[path] = change
    unlisted = sorted(p for p in found if p in b.pending and p not in b.listed and p not in listed_now)
    if unlisted:  # changed, and git lists it neither before nor after: ignored, or clean in HEAD now
        present = [p for p in unlisted if now[p] is not None]
        tracked = git.head_entries(b.head, present).keys() if b.head is not None and present else set()
        gone = [p for p in unlisted if now[p] is None]
        ignored = git.ignored(gone) if gone else set()
        for path in unlisted:
            if (path in ignored) if now[path] is None else (path not in tracked):
                del found[path]
    return tuple(found[p] for p in sorted(found))


def compare_full(git: Git, root: str, before: GitLook, drivers: frozenset[str] | None = None) -> Compared:
    """Another full look, and what changed since `before`."""
    since = _since()
    status = git.status()
    candidates = before.listed | before.pending | status.paths
    if status.head is not None and status.head != before.head:
        candidates |= git.changed_between(before.head, status.head)
    if len(candidates) > MAX_ENTRIES:
        return Compared((), False, None)
    now = {p: lstat_sig(root, p) for p in candidates}
    files = _changes(git, root, before, candidates, now, None, status.paths, drivers)
    return Compared(files, True, _look(status.head, status.paths, now, since))


def _specs(act: Activity, pending: set[str]) -> tuple[list[str], Callable[[str], bool]] | None:
    """The paths to ask git about (those `act` names, and the `pending` ones) and whether
    a path is among those `act` names; None when too many."""
    files = act.files()
    dirs = tuple(sorted(act.new_dirs | act.gone_dirs))
    specs = sorted(files | pending | {d[:-1] for d in dirs})
    if len(specs) > MAX_SPECS or sum(len(s) + 1 for s in specs) > MAX_ARGV_BYTES:
        return None
    return specs, lambda p: p in files or (bool(dirs) and p.startswith(dirs))


def _merge(look: GitLook, touched: set[str], listed: frozenset[str], now: dict[str, Sig | None],
           written: set[str], since: int) -> None:
    """Fold a status of some paths into `look`: `touched`, the paths `look` knew among
    them (listed or pending); `listed`, what git lists of them now, with signatures
    `now`. Nothing is pending after."""
    for path in touched - listed:
        look.forget(path)
        look.listed.discard(path)
        look.sigs.pop(path, None)
        look.recent.discard(path)
        look.unread.discard(path)
    for path in listed:
        sig = now[path]
        if path not in look.listed and path not in look.pending or look.sigs.get(path) != sig or path in written:
            look.forget(path)
            look.unread.add(path)
        look.listed.add(path)
        _set_sig(look, path, sig, since)
    look.pending.clear()


_Restricted = tuple[frozenset[str], set[str], dict[str, "Sig | None"]]


def _restricted(git: Git, root: str, look: GitLook, act: Activity) -> _Restricted | None:
    """(what git lists of the paths `act` names and the pending ones, the paths `look`
    knew among them, the signatures of both now); None when a full look is needed."""
    found = _specs(act, look.pending)
    if found is None:
        return None
    specs, matched = found
    touched = {p for p in look.listed if matched(p)} | look.pending
    if not specs:
        return frozenset(), touched, {}
    status = git.status(specs)
    if status.head != look.head:
        return None
    now = {p: lstat_sig(root, p) for p in touched | status.paths}
    return status.paths, touched, now


def refresh(git: Git, root: str, look: GitLook, act: Activity) -> bool:
    """Bring `look` up to date with `act` (changes between commands); False when a full
    look is needed instead. Files with events become pending (no git); directories made
    or gone are asked about at once."""
    since = _since()
    if not (act.new_dirs or act.gone_dirs):
        files = act.files()
        if len(look.pending | files) > MAX_SPECS or len(look.listed | look.pending | files) > MAX_ENTRIES:
            return False
        for path in files:
            sig = lstat_sig(root, path)
            look.forget(path)
            look.pending.add(path)
            look.unread.add(path)
            _set_sig(look, path, sig, since)
        return True
    found = _restricted(git, root, look, act)
    if found is None:
        return False
    listed, touched, now = found
    _merge(look, touched, listed, now, act.files(), since)
    return len(look.listed) <= MAX_ENTRIES


def compare_watched(git: Git, root: str, before: GitLook, act: Activity,
                    drivers: frozenset[str] | None = None) -> Compared | None:
    """After the command: what it changed, as the paths `act` names tell, and `before`
    brought up to date (as `Compared.after`); None when a full look is needed instead."""
    since = _since()
    found = _restricted(git, root, before, act)
    if found is None:
        return None
    listed, touched, now = found
    written = act.files()
    files = _changes(git, root, before, touched | listed, now, written, listed, drivers)
    _merge(before, touched, listed, now, written, since)
    if len(before.listed) > MAX_ENTRIES:
        return Compared((), False, None)
    return Compared(files, True, before)
