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

Cost: one ``listdir`` per directory and one ``lstat`` per entry (about 2 µs an entry here;
see tools/bench_changes.py). Pure functions over the filesystem; any thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

MAX_ENTRIES = 20_000
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                       ".mypy_cache", ".pytest_cache"})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEVER = 1 << 80  # an mtime no file has

Sig = tuple[int, int, int, int]  # (st_mtime_ns, st_size, st_ino, st_mode)


def signature(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)


@dataclass(slots=True)
class Snapshot:
    """`dirs`: each directory walked (``""`` for the root, else ``"a/b/"``) -> {name:
    signature} of its entries that are no directories. `recent`: the regular files whose
    mtime was at or after `take`'s `recent_since_ns`, path -> signature."""

    dirs: dict[str, dict[str, Sig]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    capped: bool = False
    count: int = 0
    recent: dict[str, Sig] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.capped and not self.unreadable


def take(root: str, *, max_entries: int = MAX_ENTRIES, recent_since_ns: int | None = None) -> Snapshot:
    """Walk `root` (a realpath); see the module doc. OSError when the root itself cannot
    be opened."""
    snap = Snapshot()
    recent = _NEVER if recent_since_ns is None else recent_since_ns
    top = os.stat(root)
    pending: list[tuple[str, int, int]] = [("", top.st_dev, top.st_ino)]
    lstat, s_isdir, s_isreg = os.lstat, stat.S_ISDIR, stat.S_ISREG
    count = 0
    while pending:
        rel, dev, ino = pending.pop()
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
            for name in names:
                try:
                    st = lstat(name, dir_fd=fd)
                except FileNotFoundError:
                    continue  # vanished since the listing
                except OSError:
                    snap.unreadable.append(rel)
                    continue
                count += 1
                if count > max_entries:
                    snap.capped = True
                    snap.count = count
                    return snap
                mode = st.st_mode
                if s_isdir(mode):
                    if name not in SKIP_DIRS:
                        pending.append((f"{rel}{name}/", st.st_dev, st.st_ino))
                    continue
                mtime = st.st_mtime_ns
                sig = (mtime, st.st_size, st.st_ino, mode)
                entries[name] = sig
                if mtime >= recent and s_isreg(mode):
                    snap.recent[rel + name] = sig
            snap.dirs[rel] = entries
        finally:
            os.close(fd)
    snap.count = count
    return snap


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
        for name, sig in new.items():
            was = old.get(name)
            if was is None:
                out.append((rel + name, "added"))
            elif was != sig:
                out.append((rel + name, "modified"))
        out.extend((rel + name, "deleted") for name in old.keys() - new.keys())
    out.sort()
    return out
