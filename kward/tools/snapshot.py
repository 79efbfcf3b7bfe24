"""A bounded stat snapshot of a workspace, for telling what a shell command changed where
git cannot tell (`kward.tools.changes`).

`take` walks the tree below the root and keeps, for every entry that is no directory
(regular files, symlinks, FIFOs, ...), its signature ``(st_mtime_ns, st_size, st_ino,
st_mode)`` from ``lstat``. It does not descend into directories named in `SKIP_DIRS`
(version control data, dependency and cache trees) nor follow symlinks (a symlink is an
entry of its own, whatever it points to). It stops after `MAX_ENTRIES` entries
(directories included): the snapshot is then `capped` and tells nothing. A directory that
cannot be listed (no permission) is recorded in `unreadable`; what lies below it is unseen
in both snapshots compared. Each directory is opened with ``O_NOFOLLOW`` and must be the
very directory (device, inode) its parent listed, so a directory swapped for a symlink
while walking is not followed out of the workspace; an entry that vanishes between its
listing and its ``lstat`` is left out.

`diff` compares two snapshots: a name new in a directory is ``added``, a name gone is
``deleted``, a changed signature is ``modified`` (a rename is a deletion and an addition).

`rescan` brings a snapshot up to date in place for some directories only (those a
`kward.tools.fswatch.DirWatcher` saw change) and returns what `diff` would have found
there: each directory named is listed again (a subdirectory new in it is walked whole,
one gone is dropped with everything below), and each tree named is dropped and walked
whole again (made, or replaced, since). A directory it starts from is reached from the
root one component at a time without following symlinks.

`deadline` (a monotonic time) bounds a walk: past it `TimeUp` is raised.

Cost: one ``listdir`` per directory and one ``lstat`` per entry (about 2 µs an entry here;
see tools/bench_changes.py). Pure functions over the filesystem (a `rescan` mutates the
snapshot it is given: its caller owns it); any thread.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

MAX_ENTRIES = 20_000
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                       ".mypy_cache", ".pytest_cache"})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEVER = 1 << 80  # an mtime no file has
_CLOCK_EVERY = 64  # directories between two looks at the clock

Sig = tuple[int, int, int, int]  # (st_mtime_ns, st_size, st_ino, st_mode)


class TimeUp(Exception):
    """A walk went past its deadline."""


def signature(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)


@dataclass(slots=True)
class Snapshot:
    """`dirs`: each directory walked (``""`` for the root, else ``"a/b/"``) -> {name:
    signature} of its entries that are no directories; `subdirs`: the names of the
    directories walked below each; `counts`: the entries each listed (directories
    included). `recent`: the regular files whose mtime was at or after `take`'s
    `recent_since_ns`, path -> signature."""

    dirs: dict[str, dict[str, Sig]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    capped: bool = False
    count: int = 0
    recent: dict[str, Sig] = field(default_factory=dict)
    subdirs: dict[str, set[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.capped and not self.unreadable


def take(root: str, *, max_entries: int = MAX_ENTRIES, recent_since_ns: int | None = None,
         deadline: float | None = None) -> Snapshot:
    """Walk `root` (a realpath); see the module doc. OSError when the root itself cannot
    be opened."""
    snap = Snapshot()
    top = os.stat(root)
    _walk(root, snap, [("", top.st_dev, top.st_ino)], max_entries,
          _NEVER if recent_since_ns is None else recent_since_ns, deadline)
    return snap


def _walk(root: str, snap: Snapshot, pending: list[tuple[str, int, int]], max_entries: int, recent: int,
          deadline: float | None) -> None:
    """Walk the directories in `pending` ((rel, st_dev, st_ino) each) and all below them
    into `snap`, stopping (`capped`) when it counts more than `max_entries`."""
    lstat, s_isdir, s_isreg = os.lstat, stat.S_ISDIR, stat.S_ISREG
    walked = 0
    while pending:
        rel, dev, ino = pending.pop()
        walked += 1
        if deadline is not None and walked % _CLOCK_EVERY == 1 and time.monotonic() > deadline:
            raise TimeUp(rel)
        try:
            fd = os.open(os.path.join(root, rel[:-1]) if rel else root, _DIR_FLAGS)
        except PermissionError:
            snap.unreadable.append(rel)
            continue
        except OSError:  # gone, or no longer a directory
            continue
        try:
            here = os.fstat(fd)
            if (here.st_dev, here.st_ino) != (dev, ino):
                continue  # replaced since its parent was listed
            try:
                names = os.listdir(fd)
            except PermissionError:
                snap.unreadable.append(rel)
                continue
            entries: dict[str, Sig] = {}
            subdirs: set[str] = set()
            listed = 0
            for name in names:
                try:
                    st = lstat(name, dir_fd=fd)
                except FileNotFoundError:
                    continue  # vanished since the listing
                except OSError:
                    snap.unreadable.append(rel)
                    continue
                listed += 1
                if snap.count + listed > max_entries:
                    snap.capped = True
                    snap.count += listed
                    return
                mode = st.st_mode
                if s_isdir(mode):
                    if name not in SKIP_DIRS:
                        pending.append((f"{rel}{name}/", st.st_dev, st.st_ino))
                        subdirs.add(name)
                    continue
                mtime = st.st_mtime_ns
                sig = (mtime, st.st_size, st.st_ino, mode)
                entries[name] = sig
                if mtime >= recent and s_isreg(mode):
                    snap.recent[rel + name] = sig
            snap.dirs[rel] = entries
            snap.subdirs[rel] = subdirs
            snap.counts[rel] = listed
            snap.count += listed
        finally:
            os.close(fd)


def diff(before: Snapshot, after: Snapshot) -> list[tuple[str, str]]:
    """``[(path, status)]`` sorted by path: what differs from `before` to `after`, leaving
    out what lies below a directory either could not read."""
    blind = tuple(before.unreadable) + tuple(after.unreadable)
    empty: dict[str, Sig] = {}
    out: list[tuple[str, str]] = []
    for rel in before.dirs.keys() | after.dirs.keys():
        if blind and rel.startswith(blind):
            continue
        old = before.dirs.get(rel, empty)
        new = after.dirs.get(rel, empty)
        if old == new:
            continue
        out.extend(_compare(rel, old, new))
    out.sort()
    return out


def _compare(prefix: str, old: dict[str, Sig], new: dict[str, Sig]) -> list[tuple[str, str]]:
    out = []
    for name, sig in new.items():
        was = old.get(name)
        if was is None:
            out.append((prefix + name, "added"))
        elif was != sig:
            out.append((prefix + name, "modified"))
    out.extend((prefix + name, "deleted") for name in old.keys() - new.keys())
    return out


def _open_dir(root: str, rel: str) -> int:
    """A descriptor of directory `rel` below `root`, reached one component at a time
    without following symlinks. OSError when it is not (any more) a directory there."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in rel[:-1].split("/") if rel else ():
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def rescan(root: str, snap: Snapshot, dirs: Iterable[str], trees: Iterable[str] = (), *,
           max_entries: int = MAX_ENTRIES, recent_since_ns: int | None = None,
           deadline: float | None = None) -> list[tuple[str, str]]:
    """Update `snap` for `dirs` and `trees` (see the module doc; ``""`` or ``"a/b/"``
    each) and return ``[(path, status)]`` sorted by path, as `diff` would have found
    there. `snap.recent` gains the recent files seen. Past `max_entries` `snap` is
    `capped` and tells nothing (its caller drops it)."""
    recent = _NEVER if recent_since_ns is None else recent_since_ns
    old: dict[str, Sig] = {}
    fresh = Snapshot(count=snap.count)

    def drop(top: str) -> None:
        for rel in [d for d in snap.dirs if d.startswith(top)]:
            for name, sig in snap.dirs.pop(rel).items():
                old[rel + name] = sig
            snap.subdirs.pop(rel, None)
            fresh.count -= snap.counts.pop(rel, 0)
        for rel in [d for d in fresh.dirs if d.startswith(top)]:  # walked moments ago, gone again
            del fresh.dirs[rel]
            fresh.subdirs.pop(rel, None)
            fresh.count -= fresh.counts.pop(rel, 0)
        snap.unreadable[:] = [u for u in snap.unreadable if not u.startswith(top)]
        parent, _, name = top[:-1].rpartition("/")
        snap.subdirs.get(parent + "/" if parent else "", set()).discard(name)

    def walk(top: str) -> None:
        try:
            fd = _open_dir(root, top)
        except PermissionError:
            fresh.unreadable.append(top)
            return
        except OSError:
            return  # gone again
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        _walk(root, fresh, [(top, st.st_dev, st.st_ino)], max_entries, recent, deadline)
        parent, _, name = top[:-1].rpartition("/")
        if top:
            snap.subdirs.setdefault(parent + "/" if parent else "", set()).add(name)

    trees = sorted(set(trees), key=len)
    for top in trees:
        if not any(top.startswith(t) for t in trees if t != top):
            drop(top)
            walk(top)
    done = tuple(trees)
    for rel in sorted(set(dirs), key=lambda d: (d.count("/"), d)):
        if (done and rel.startswith(done)) or rel not in snap.dirs:
            continue  # walked whole above, or gone with (or never walked below) its parent
        if deadline is not None and time.monotonic() > deadline:
            raise TimeUp(rel)
        _relist(root, snap, rel, fresh, old, drop, walk, recent, max_entries)
        if fresh.capped:
            break
    snap.count = fresh.count
    if fresh.capped:
        snap.capped = True
        return []
    for rel, entries in fresh.dirs.items():
        snap.dirs[rel] = entries
        snap.subdirs.setdefault(rel, set()).update(fresh.subdirs.get(rel, ()))
        snap.counts[rel] = fresh.counts.get(rel, 0)
    snap.unreadable.extend(u for u in fresh.unreadable if u not in snap.unreadable)
    for path in old:
        snap.recent.pop(path, None)
    snap.recent.update(fresh.recent)
    new = {rel + name: sig for rel, entries in fresh.dirs.items() for name, sig in entries.items()}
    out = [(p, "added") for p in new.keys() - old.keys()]
    out += [(p, "modified") for p in new.keys() & old.keys() if new[p] != old[p]]
    out += [(p, "deleted") for p in old.keys() - new.keys()]
    out.sort()
    return out


def _relist(root: str, snap: Snapshot, rel: str, fresh: Snapshot, old: dict[str, Sig],
            drop: Callable[[str], None], walk: Callable[[str], None], recent: int, max_entries: int) -> None:
    """List directory `rel` again: its entries into `fresh` (the old ones into `old`), its
    new subdirectories walked, its gone ones dropped."""
    try:
        fd = _open_dir(root, rel)
    except PermissionError:
        if rel not in snap.unreadable:
            snap.unreadable.append(rel)
        return
    except OSError:
        return  # gone: its parent's listing (or a later one) drops it
    try:
        try:
            names = os.listdir(fd)
        except PermissionError:
            if rel not in snap.unreadable:
                snap.unreadable.append(rel)
            return
        entries: dict[str, Sig] = {}
        subdirs: set[str] = set()
        listed = 0
        for name in names:
            try:
                st = os.lstat(name, dir_fd=fd)
            except FileNotFoundError:
                continue
            except OSError:
                fresh.unreadable.append(rel)
                continue
            listed += 1
            if stat.S_ISDIR(st.st_mode):
                if name not in SKIP_DIRS:
                    subdirs.add(name)
                continue
            sig = signature(st)
            entries[name] = sig
            if sig[0] >= recent and stat.S_ISREG(sig[3]):
                fresh.recent[rel + name] = sig
    finally:
        os.close(fd)
    if rel in snap.unreadable:
        snap.unreadable.remove(rel)
    known = snap.subdirs.get(rel, set())
    for name in known - subdirs:
        drop(f"{rel}{name}/")
    for name, sig in snap.dirs.pop(rel, {}).items():
        old[rel + name] = sig
    fresh.count += listed - snap.counts.pop(rel, 0)
    fresh.dirs[rel] = entries
    fresh.counts[rel] = listed
    snap.subdirs[rel] = set(subdirs)
    if fresh.count > max_entries:
        fresh.capped = True
        return
    for name in subdirs - known:
        walk(f"{rel}{name}/")
