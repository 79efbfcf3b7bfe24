"""Snapshot looks for `kward.tools.changes` (a workspace outside git, or where git fails):
a `kward.tools.snapshot.Snapshot` and the contents of its recent files.

- `take`: a full walk; `prepare` (just before a command): the recent files are those
  changed less than `RECENT_NS` before now, and their contents are read (at most
  `MAX_CALL_BYTES`, each at most `MAX_FILE_BYTES`), so that one rewritten within the
  timestamp granularity is still seen.
- `compare_full(before, after)`: what differs between two full looks.
- With a `DirWatcher`: `refresh(look, activity)` brings a kept look up to date with what
  changed since it was taken (between two commands: reported by neither), and
  `advance(look, activity)` does the same after a command and returns what it changed.
  Both re-list only the directories the watcher names (`snapshot.rescan`), so their cost
  follows what changed, not the size of the workspace.

A recent file whose signature is unchanged is compared by content: in a full compare each
of them, with a watcher those that had events. Without its content kept it is reported as
modified.

Pure functions over the filesystem and the look they are given (mutated by `refresh` and
`advance`: the caller owns it); any thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kward.model import FileChange
from kward.tools import baselines, snapshot
from kward.tools.baselines import RECENT_NS, read_file, same_bytes
from kward.tools.fswatch import Activity
from kward.tools.snapshot import Sig, Snapshot


@dataclass(slots=True)
class PlainLook:
    """`snap` and `kept`: the contents of recent files (`snap.recent`), read by `prepare`."""

    snap: Snapshot
    kept: dict[str, bytes] = field(default_factory=dict)
    recent: dict[str, Sig] = field(default_factory=dict)  # as `prepare` found them: what `advance` checks


def take(root: str, deadline: float | None = None) -> PlainLook | None:
    """A full look; None when the snapshot is capped (it tells nothing)."""
    snap = snapshot.take(root, recent_since_ns=time.time_ns() - RECENT_NS, max_entries=snapshot.MAX_ENTRIES,
                         deadline=deadline)
    return None if snap.capped else PlainLook(snap)


def prepare(look: PlainLook, root: str) -> None:
    """Just before the command: keep the recent files (and their contents) that still are."""
    since = time.time_ns() - RECENT_NS
    recent = look.snap.recent = {p: sig for p, sig in look.snap.recent.items() if sig[0] >= since}
    kept = {p: data for p, data in look.kept.items() if p in recent}
    left = baselines.MAX_CALL_BYTES - sum(len(d) for d in kept.values())
    for path, sig in sorted(recent.items()):
        if path in kept or sig[1] > baselines.MAX_FILE_BYTES or sig[1] > left:
            continue
        data = read_file(root, path, sig)
        if data is not None:
            kept[path] = data
            left -= len(data)
    look.kept = kept
    look.recent = dict(recent)


def _recent_changes(root: str, before: PlainLook, found: dict[str, str], after: Snapshot,
                    written: set[str] | None) -> None:
    """Add to `found` the recent files of `before` rewritten with the same signature
    (`written`: the paths that had events; None: any)."""
    for path, sig in before.recent.items():
        if path in found or (written is not None and path not in written):
            continue
        rel, _, name = path.rpartition("/")
        if after.dirs.get(rel + "/" if rel else "", {}).get(name) != sig:
            continue  # gone with its directory, or unseen
        if not same_bytes(root, path, sig, before.kept.get(path)):
            found[path] = "modified"


def _files(found: dict[str, str]) -> tuple[FileChange, ...]:
    return tuple(FileChange(p, s, b"" if s == "added" else None) for p, s in sorted(found.items()))


def compare_full(root: str, before: PlainLook, after: PlainLook) -> tuple[tuple[FileChange, ...], bool]:
    """(what changed from `before` to `after`, whether that is whole)."""
    found = dict(snapshot.diff(before.snap, after.snap))
    _recent_changes(root, before, found, after.snap, None)
    return _files(found), before.snap.complete and after.snap.complete


def _rescan(root: str, look: PlainLook, act: Activity, deadline: float | None) -> dict[str, str] | None:
    found = dict(snapshot.rescan(root, look.snap, act.dirty, act.new_dirs, max_entries=snapshot.MAX_ENTRIES,
                                 recent_since_ns=time.time_ns() - RECENT_NS, deadline=deadline))
    return None if look.snap.capped else found


def refresh(root: str, look: PlainLook, act: Activity, deadline: float | None = None) -> bool:
    """Bring `look` up to date with `act` (changes between commands); False when it is
    capped now (the caller drops it)."""
    found = _rescan(root, look, act, deadline)
    if found is None:
        return False
    for path in act.files() | found.keys():
        look.kept.pop(path, None)
    return True


def advance(root: str, look: PlainLook, act: Activity,
            deadline: float | None = None) -> tuple[tuple[FileChange, ...], bool] | None:
    """After the command: `look` (taken before it) brought up to date with `act`, and
    (what the command changed, whether that is whole); None when the look is capped now
    (the caller drops it)."""
    written = act.files()
    found = _rescan(root, look, act, deadline)
    if found is None:
        return None
    _recent_changes(root, look, found, look.snap, written)
    for path in written | found.keys():
        look.kept.pop(path, None)
    return _files(found), look.snap.complete
