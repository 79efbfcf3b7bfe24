"""Which directories of a workspace saw changes since the last look: `DirWatcher`, over
Linux inotify (`kward.tools.inotify`), for `kward.tools.changes`.

    watcher = DirWatcher(root, skip=..., meta_dirs=[...], rule_dirs=[...])
    ...                                   # the workspace changes
    activity = watcher.collect(vet=...)   # what changed since the last collect (or since open)

Opening watches every directory below `root` but those `skip(parent, name)` refuses (and,
with `nested_repos`, any below the root holding a ``.git``: a nested repository or a
submodule), each reached without following symlinks. It raises `Unusable` when a
directory cannot be watched or listed (no permission), when more than `max_watches`
directories would be, or when the kernel's limit of watches is reached; and
`kward.tools.inotify.Unavailable` where there is no inotify. Also watched, not
descended into: `meta_dirs` (a repository's git directories; ``recursive`` ones, such as
``refs/heads``, with their subdirectories; one missing is left out) and `rule_dirs`
(directories above the workspace whose ``.gitignore`` or ``.gitattributes`` apply to it).

`collect` drains the events queued so far (non-blocking; no thread) into an `Activity`:

- `dirty`: the directories whose entries changed; `names`: per directory, the entries
  (not directories) that were created, written, had their metadata changed, were deleted
  or renamed (a rename across directories shows in both);
- `new_dirs`: directories that appeared (made, or moved in), already watched when
  `collect` returns, with their own subdirectories; what they hold was never seen (a
  caller looks at them whole). `vet(dirs)` may refuse some (git: the ignored ones):
  they are left unwatched. `gone_dirs`: directories deleted or moved away (their
  watches are dropped);
- `meta`: something in the git directories changed other than the index (HEAD, a
  branch, packed-refs, config, info/exclude...); `rules`: a ``.gitignore`` or
  ``.gitattributes`` changed, in the workspace or above it;
- `unknown`: events were lost (the kernel's queue overflowed), the root or a git
  directory went away, a watch was lost unexpectedly or could not be added: nothing can
  be told, the caller looks at everything and opens a new watcher.

Blind spots (inotify's): a write through a shared memory mapping (``mmap``) produces no
event; a file changed through a hard link in another directory (or outside the
workspace) shows in that directory only; changes made by another machine on a network
filesystem (NFS, SMB, some container volumes) produce none. Events from processes still
running in the background land in whichever collect comes next.

Threads: a watcher belongs to one thread at a time (its owner, who passes it on under a
lock: `kward.tools.lookcache`); nothing here is locked. `close` releases every watch.
"""

from __future__ import annotations

import errno
import logging
import os
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

from kward.tools import inotify
from kward.tools.inotify import (
    DIR_EVENTS,
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_EXCL_UNLINK,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
)

log = logging.getLogger(__name__)

MAX_WATCHES = 4096
RULE_FILES = frozenset({".gitignore", ".gitattributes"})
#: Names in a git directory whose changes change no file's status: the index (``git add``
#: and git's own stat refreshes), what a fetch or a commit message leaves.
QUIET_META = frozenset({"index", "index.lock", "FETCH_HEAD", "COMMIT_EDITMSG"})
_MASK = DIR_EVENTS | IN_ONLYDIR | IN_EXCL_UNLINK
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
_TREE, _META, _RULES = "tree", "meta", "rules"


class Unusable(Exception):
    """The watcher cannot tell (see the module doc)."""


@dataclass(slots=True)
class Activity:
    """What changed since the last collect (see the module doc); paths are
    workspace-relative, directories ``""`` (the root) or ``"a/b/"``."""

    dirty: set[str] = field(default_factory=set)
    names: dict[str, set[str]] = field(default_factory=dict)
    new_dirs: set[str] = field(default_factory=set)
    gone_dirs: set[str] = field(default_factory=set)
    meta: bool = False
    rules: bool = False
    unknown: bool = False

    @property
    def quiet(self) -> bool:
        return not (self.dirty or self.new_dirs or self.gone_dirs or self.meta or self.rules or self.unknown)

    def files(self) -> set[str]:
        """The paths of the entries (not directories) with events."""
        return {rel + name for rel, names in self.names.items() for name in names}


def _parent(rel: str) -> str:
    """The directory holding directory `rel` (``"a/b/"`` -> ``"a/"``, ``"a/"`` -> ``""``)."""
    head = rel[:-1].rpartition("/")[0]
    return head + "/" if head else ""


class _Spot(NamedTuple):
    kind: str  # _TREE, _META or _RULES
    where: str  # a tree directory's rel; an absolute path otherwise
    recursive: bool = False


class DirWatcher:
    """Watches of one workspace (see the module doc)."""

    def __init__(self, root: str, *, skip: Callable[[str, str], bool] | None = None, nested_repos: bool = False,
                 meta_dirs: Sequence[tuple[str, bool]] = (), rule_dirs: Sequence[str] = (),
                 max_watches: int | None = None):
        self.root = root
        self.max_watches = MAX_WATCHES if max_watches is None else max_watches
        self._skip = skip or (lambda parent, name: False)
        self._nested = nested_repos
        self._proc = os.path.isdir("/proc/self/fd")
        self._spots: dict[int, _Spot] = {}
        self._tree: dict[str, int] = {}  # tree rel -> wd
        self._meta_tops = {path for path, _ in meta_dirs}
        self.usable = True
        self._ino = inotify.Inotify()
        try:
            for path, recursive in meta_dirs:
                self._watch_meta(path, recursive)
            for path in rule_dirs:
                self._watch_path(path, _Spot(_RULES, path), required=True)
            self._watch_tree("")
        except BaseException:
            self.close()
            raise

    @property
    def watches(self) -> int:
        return len(self._spots)

    def close(self) -> None:
        """Drop every watch (closing the instance). Idempotent."""
        self.usable = False
        self._ino.close()
        self._spots.clear()
        self._tree.clear()

    # --- watching -------------------------------------------------------------------------

    def _note(self, wd: int, spot: _Spot) -> None:
        old = self._spots.get(wd)
        if old is not None and old.kind == _TREE and old.where in self._tree:
            del self._tree[old.where]
        self._spots[wd] = spot
        if spot.kind == _TREE:
            self._tree[spot.where] = wd
        if len(self._spots) > self.max_watches:
            raise Unusable(f"more than {self.max_watches} directories to watch")

    def _add_fd(self, fd: int, path: str) -> int:
        """Watch the directory open as `fd` (at `path`)."""
        try:
            if self._proc:
                return self._ino.add(f"/proc/self/fd/{fd}", _MASK)
            return self._ino.add(path, _MASK | inotify.IN_DONT_FOLLOW)
        except OSError as exc:
            raise Unusable(f"cannot watch {path}: {exc.strerror}") from None

    def _watch_path(self, path: str, spot: _Spot, required: bool) -> None:
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as exc:
            if exc.errno in _GONE and not required:
                return
            raise Unusable(f"cannot open {path}: {exc.strerror}") from None
        try:
            self._note(self._add_fd(fd, path), spot)
        finally:
            os.close(fd)

    def _watch_meta(self, top: str, recursive: bool) -> None:
        stack = [top]
        while stack:
            path = stack.pop()
            self._watch_path(path, _Spot(_META, path, recursive), required=False)
            if recursive:
                try:
                    with os.scandir(path) as it:
                        stack += [e.path for e in it if e.is_dir(follow_symlinks=False)]
                except OSError:
                    continue

    def _watch_tree(self, top: str) -> None:
        """Watch directory `top` and each one below it that the policy allows: a watch is
        added before its directory is listed, so nothing made after escapes both."""
        stack: list[tuple[str, int | None]] = [(top, None)]
        while stack:
            rel, ino = stack.pop()
            path = os.path.join(self.root, rel[:-1]) if rel else self.root
            try:
                fd = os.open(path, _DIR_FLAGS)
            except OSError as exc:
                if exc.errno in _GONE and rel:
                    continue  # gone, or replaced by a file or a symlink: its parent's events tell
                raise Unusable(f"cannot open {path}: {exc.strerror}") from None
            try:
                if ino is not None and os.fstat(fd).st_ino != ino:
                    continue  # replaced since its parent was listed (the parent's events tell)
                wd = self._add_fd(fd, path)
                self._note(wd, _Spot(_TREE, rel))
                try:
                    with os.scandir(fd) as it:
                        entries = [(e.name, e.inode()) for e in it if e.is_dir(follow_symlinks=False)
                                   or (self._nested and e.name == ".git")]
                except OSError as exc:
                    raise Unusable(f"cannot list {path}: {exc.strerror}") from None
            finally:
                os.close(fd)
            if self._nested and rel and any(name == ".git" for name, _ in entries):
                self._drop_tree(rel)  # a nested repository or a submodule: not ours to watch
                continue
            stack += [(f"{rel}{name}/", inode) for name, inode in entries
                      if name != ".git" and not self._skip(rel, name)]

    def _drop_tree(self, top: str) -> None:
        """Forget (and remove) the watches of `top` and below."""
        for rel in [r for r in self._tree if r.startswith(top)]:
            wd = self._tree.pop(rel)
            self._spots.pop(wd, None)
            self._ino.remove(wd)

    # --- events ---------------------------------------------------------------------------

    def collect(self, vet: Callable[[list[str]], set[str]] | None = None) -> Activity:
        """What changed since the last collect (see the module doc); `vet(dirs)`: those of
        the new directories not to watch."""
        act = Activity()
        if not self.usable:
            act.unknown = True
            return act
        try:
            events = self._ino.read()
        except OSError as exc:
            log.info("inotify read failed: %s", exc)
            events = []
            act.unknown = True
        for ev in events:
            if ev.mask & IN_Q_OVERFLOW:
                act.unknown = True
                continue
            spot = self._spots.get(ev.wd)
            if spot is None:
                continue  # a watch dropped since (its last events, its IN_IGNORED)
            if ev.mask & IN_IGNORED:
                act.unknown = True  # lost without a deletion or a move saying so first
                self._spots.pop(ev.wd, None)
                continue
            name = os.fsdecode(ev.name)
            if spot.kind == _TREE:
                self._tree_event(spot.where, ev.mask, name, act)
            elif ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
                if spot.kind == _META and spot.where not in self._meta_tops and not ev.mask & IN_UNMOUNT:
                    self._spots.pop(ev.wd, None)  # a directory of refs/heads (feature/...) went away
                    self._ino.remove(ev.wd)
                    act.meta = True
                else:
                    act.unknown = True  # a git directory, or one above the workspace, went away
            elif spot.kind == _RULES:
                act.rules = act.rules or name in RULE_FILES
            else:
                if spot.recursive and ev.mask & IN_ISDIR and ev.mask & (IN_CREATE | IN_MOVED_TO):
                    self._watch_safely(lambda: self._watch_meta(os.path.join(spot.where, name), True), act)
                act.meta = act.meta or name not in QUIET_META
        self._adopt(act, vet)
        if act.unknown:
            self.usable = False
        return act

    def _tree_event(self, rel: str, mask: int, name: str, act: Activity) -> None:
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
            if not rel or mask & IN_UNMOUNT:
                act.unknown = True  # the workspace itself went away (or a filesystem under it)
            else:  # as its parent's event (which may come first, or after: kernels differ)
                act.dirty.add(_parent(rel))
                self._lose(rel, act)
            return
        if not name:
            return
        if self._nested and name == ".git" and (rel or not mask & IN_ISDIR):
            act.unknown = True  # a repository made (or a worktree linked) inside: look again
            return
        if not mask & IN_ISDIR:
            act.dirty.add(rel)
            act.names.setdefault(rel, set()).add(name)
            act.rules = act.rules or name in RULE_FILES
            return
        child = f"{rel}{name}/"
        if mask & (IN_DELETE | IN_MOVED_FROM):
            act.dirty.add(rel)
            self._lose(child, act)
        if mask & (IN_CREATE | IN_MOVED_TO):
            act.dirty.add(rel)  # (a skipped one too: it is an entry of its parent)
            if name != ".git" and not self._skip(rel, name):
                act.new_dirs.add(child)
        if mask & IN_ATTRIB and child in self._tree:
            act.dirty.add(child)  # its permissions: whether it can still be listed

    def _lose(self, top: str, act: Activity) -> None:
        """Directory `top` went away: its watches (if it had) and what was noted below it."""
        if top in self._tree:
            self._drop_tree(top)
            act.gone_dirs = {g for g in act.gone_dirs if not g.startswith(top)} | {top}
        act.new_dirs = {d for d in act.new_dirs if not d.startswith(top)}
        act.dirty = {d for d in act.dirty if not d.startswith(top)}
        for rel in [r for r in act.names if r.startswith(top)]:
            del act.names[rel]

    def _adopt(self, act: Activity, vet: Callable[[list[str]], set[str]] | None) -> None:
        """Watch the new directories (the top-most of them, with all below)."""
        tops = sorted(act.new_dirs, key=len)
        tops = [d for d in tops if not any(d != t and d.startswith(t) for t in tops)]
        if tops and vet is not None:
            try:
                refused = vet(tops)
            except Exception as exc:  # (git failed: watch them all, as the safe side)
                log.info("could not vet new directories: %s", exc)
                refused = set()
            tops = [d for d in tops if d not in refused]
        act.new_dirs = set(tops)
        for top in tops:
            self._watch_safely(lambda: self._watch_tree(top), act)

    def _watch_safely(self, watch: Callable[[], None], act: Activity) -> None:
        try:
            watch()
        except Unusable as exc:
            log.info("changed files of %s: the watcher gives up: %s", self.root, exc)
            act.unknown = True
