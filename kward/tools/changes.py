"""What a shell command changed in the workspace: `ChangeWatch` looks before and after.

    watch = ChangeWatch(ctx.workspace_root, env, ctx.cancel)
    before = watch.begin()        # just before the command is spawned
    try:
        ...                       # the command runs
        changes = watch.end(before)                  # after it exited or timed out
        changes = watch.end(before, deadline=t)      # after it was cancelled: bounded by t
    finally:
        watch.release(before)     # what `end` did not hand back (an error path)
    changes.files                 # tuple[FileChange, ...], sorted by path
    changes.complete              # False: the list may miss files (see below)

How it looks (chosen by `begin`):

- **git**, when the workspace (or an ancestor) is a git work tree and ``git`` is on
  kward's PATH (`kward.tools.gitlook`, `kward.tools.gitstatus`): ``git status`` and an
  ``lstat`` of each path it lists. What git ignores is not reported. A change of the index
  alone (``git add``) is no change of the file.
- **snapshot** otherwise, or when git fails (`kward.tools.plainlook`,
  `kward.tools.snapshot`: what it skips and its cap are stated there). A work tree whose
  ``git status`` timed out is looked at by snapshot for `SLOW_GIT_SECONDS` (so each
  command does not wait for git again).

Between commands (`kward.tools.lookcache`, `kward.tools.fswatch`): the look after a
command is kept, with a `DirWatcher` over the workspace's directories (in git mode those
git does not ignore, and the git directory: HEAD, branches, config). The next command's
look before is that kept look, brought up to date with only what the watcher saw change
in between (so a change between two commands is reported by neither, and is the
baseline of the next); the look after re-looks only what the watcher saw change while
the command ran (``git status -- <those paths>``; in a snapshot, those directories).
Anything the watcher cannot place (lost events, HEAD or a branch moved, a ``.gitignore``
changed, a directory it could not watch) makes that look a full one. Where there is no
watcher (not Linux, inotify's limits reached, more than `fswatch.MAX_WATCHES`
directories; not tried again for `WATCHER_RETRY_SECONDS`), when another command holds the
workspace's kept look, or with ``KWARD_NO_FSWATCH`` set and not empty, both looks are
full ones. The watcher's blind spots (``mmap`` writes, hard links changed elsewhere,
network filesystems) are stated in `kward.tools.fswatch`.

"modified" means the file's content, type or permission bits changed; see the look
modules for how each compares and what each keeps as baselines (`FileChange.before`).

`complete` is False when the look hit its cap (then `files` is empty), when a directory
could not be read (then `files` holds what was seen), when the look failed (logged;
`files` empty) or, after a cancelled command, did not finish by its deadline. A failure
never fails the command. `kward.errors.Canceled` passes through `begin` (the command does
not run).

Threads: a watch is used by one thread (the turn's worker); `begin` and `end` block it
while git runs or the tree is walked. The kept looks are checked out of the registry by
one command at a time (`lookcache` states the lock); `BaselineCache` is shared by every
watch of the process and guarded by its lock.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Union

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.model import FileChange
from kward.tools import gitlook, inotify, plainlook, snapshot
from kward.tools.baselines import CACHE as _CACHE
from kward.tools.baselines import BaselineCache, read_file  # noqa: F401  (the names callers use)
from kward.tools.fswatch import Activity, DirWatcher, Unusable
from kward.tools.gitlook import Compared, GitLook
from kward.tools.gitstatus import Git, GitUnavailable, git_dirs
from kward.tools.lookcache import REGISTRY, Slot
from kward.tools.plainlook import PlainLook
from kward.tools.snapshot import SKIP_DIRS, TimeUp

log = logging.getLogger(__name__)

NO_FSWATCH_VARIABLE = "KWARD_NO_FSWATCH"
SLOW_GIT_SECONDS = 600.0
WATCHER_RETRY_SECONDS = 600.0

_slow_lock = threading.Lock()
_slow_git: dict[str, float] = {}  # workspace -> monotonic time until which git is not asked


class Changes(NamedTuple):
    files: tuple[FileChange, ...]
    complete: bool
    method: str  # "git", "snapshot" or "none" (the look failed)

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


def fswatch_enabled() -> bool:
    """False when ``KWARD_NO_FSWATCH`` is set and not empty (read on every command)."""
    return not os.environ.get(NO_FSWATCH_VARIABLE)


@dataclass(slots=True)
class _GitFacts:
    """What git mode learned when the watcher was opened: the ignored directories (left
    unwatched; new ones vetted with ``git check-ignore``) and the filter drivers."""

    ignored: set[str]
    drivers: frozenset[str]


@dataclass(slots=True)
class _Held:
    """The registry's slot a before-look came from (None: no kept look), until handed back."""

    slot: Slot | None = None


@dataclass(slots=True)
class _GitBefore:
    git: Git
    look: GitLook
    held: _Held = field(default_factory=_Held)


@dataclass(slots=True)
class _SnapshotBefore:
    look: PlainLook
    held: _Held = field(default_factory=_Held)


@dataclass(slots=True)
class _Nothing:
    """The look could not be taken (or is capped): `end` reports nothing, incomplete."""

    method: str
    held: _Held = field(default_factory=_Held)


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

    # --- the two looks --------------------------------------------------------------------

    def begin(self) -> Before:
        slot = REGISTRY.checkout(self.root) if fswatch_enabled() else None
        try:
            before = self._begin(slot)
        except Canceled:
            self._hand_back(slot, None)
            raise
        except Exception:  # never fail the command for this
            log.exception("changed-file detection failed before the command in %s", self.root)
            self._hand_back(slot, None)
            return _Nothing("none")
        before.held.slot = slot
        return before

    def end(self, before: Before, *, deadline: float | None = None) -> Changes:
        """What the command changed; hands the look back. `deadline` (a monotonic time;
        after a cancelled command): a fresh cancellation for git, and no look past it."""
        slot, before.held.slot = before.held.slot, None
        after: object = None
        try:
            if deadline is not None and isinstance(before, _GitBefore):
                before.git.cancel, before.git.deadline = CancelToken(), deadline
            if isinstance(before, _GitBefore):
                try:
                    changes, after = self._git_end(before, slot, deadline)
                except GitUnavailable as exc:
                    log.info("changed files of %s unknown: %s", self.root, exc)
                    self._note_slow(exc)
                    changes = Changes((), False, "git")
            elif isinstance(before, _SnapshotBefore):
                changes, after = self._snapshot_end(before, slot, deadline)
            else:
                changes = Changes((), False, before.method)
        except TimeUp:
            log.info("changed files of %s: no time left to look", self.root)
            changes = Changes((), False, "git" if isinstance(before, _GitBefore) else "snapshot")
        except Canceled:
            self._hand_back(slot, None)
            raise
        except Exception:
            log.exception("changed-file detection failed after the command in %s", self.root)
            changes = Changes((), False, "none")
        self._hand_back(slot, after)
        return changes

    def release(self, before: Before) -> None:
        """Hand back a before-look `end` was not given: kept, as the next command's (what
        changed since is in the watcher's queue). Idempotent."""
        slot, before.held.slot = before.held.slot, None
        look = before.look if isinstance(before, (_GitBefore, _SnapshotBefore)) else None
        self._hand_back(slot, look)

    def _hand_back(self, slot: Slot | None, look: object) -> None:
        if slot is None:
            return
        if look is None or slot.watcher is None:
            slot.look = None
        else:
            slot.look = look
        REGISTRY.checkin(slot)

    def _begin(self, slot: Slot | None) -> Before:
        git = None if self._git_is_slow() else Git.find(self.root, self.env, self.cancel)
        if git is not None:
            try:
                return self._git_begin(git, slot)
            except GitUnavailable as exc:
                log.info("changed files of %s by snapshot: %s", self.root, exc)
                self._note_slow(exc)
                if slot is not None:
                    slot.reset()
        return self._snapshot_begin(slot)

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

    def _git_begin(self, git: Git, slot: Slot | None) -> Before:
        look = None
        if slot is not None:
            if slot.key != ("git", git.key):
                slot.reset()
                slot.key = ("git", git.key)
            look = self._git_reuse(git, slot)
        if look is None:
            look = gitlook.take(git, self.root)
        if look is None:
            log.info("changed files of %s not reported: more than %d paths", self.root, gitlook.MAX_ENTRIES)
            return _Nothing("git")
        gitlook.prepare(look, self.root, self.cache)
        return _GitBefore(git, look)

    def _git_reuse(self, git: Git, slot: Slot) -> GitLook | None:
        """The kept look brought up to date, or None (a full look is due: the watcher, if
        any, is ready for it)."""
        kept, slot.look = slot.look, None
        if slot.watcher is not None:
            act = slot.watcher.collect(self._vet(git, slot))
            if act.unknown or act.rules:
                self._close_watcher(slot)
            elif act.meta:
                self._facts(slot).drivers = git.filter_drivers()
            elif isinstance(kept, GitLook) and (act.quiet or gitlook.refresh(git, self.root, kept, act)):
                return kept
        if slot.watcher is None:
            self._open_git_watcher(git, slot)
        return None

    def _git_end(self, b: _GitBefore, slot: Slot | None, deadline: float | None) -> tuple[Changes, object]:
        git = b.git
        result: Compared | None = None
        if slot is not None and slot.watcher is not None:
            act = slot.watcher.collect(self._vet(git, slot))
            if act.unknown or act.rules:
                self._close_watcher(slot)
                if deadline is None:
                    self._open_git_watcher(git, slot)  # before the look after, which it follows
            elif act.quiet:
                result = Compared((), True, b.look)
            elif not act.meta:
                result = gitlook.compare_watched(git, self.root, b.look, act, self._drivers(slot))
        if result is None:
            result = gitlook.compare_full(git, self.root, b.look, self._drivers(slot))
        return Changes(result.files, result.complete, "git"), result.after

    def _open_git_watcher(self, git: Git, slot: Slot) -> None:
        if time.monotonic() < slot.retry_at:
            return
        dirs = git_dirs(git.toplevel)
        try:
            if dirs is None:
                raise Unusable("no git directory found")
            gitdir, common = dirs
            facts = _GitFacts(git.ignored_dirs(), git.filter_drivers())
            meta = [(gitdir, False), (common, False), (os.path.join(common, "refs", "heads"), True),
                    (os.path.join(common, "info"), False)]
            slot.watcher = DirWatcher(self.root, skip=lambda parent, name: f"{parent}{name}/" in facts.ignored,
                                      nested_repos=True, meta_dirs=meta if common != gitdir else meta[1:],
                                      rule_dirs=_ancestors(self.root, git.toplevel))
            slot.facts = facts
        except (inotify.Unavailable, Unusable, OSError) as exc:
            self._watcher_failed(slot, exc)

    def _vet(self, git: Git, slot: Slot) -> Callable[[list[str]], set[str]]:
        facts = slot.facts

        def vet(dirs: list[str]) -> set[str]:
            refused = git.ignored(dirs)
            if isinstance(facts, _GitFacts):
                facts.ignored |= refused
            return refused

        return vet

    def _facts(self, slot: Slot) -> _GitFacts:
        if not isinstance(slot.facts, _GitFacts):
            slot.facts = _GitFacts(set(), frozenset())
        return slot.facts

    def _drivers(self, slot: Slot | None) -> frozenset[str] | None:
        return slot.facts.drivers if slot is not None and isinstance(slot.facts, _GitFacts) else None

    # --- snapshot -------------------------------------------------------------------------

    def _snapshot_begin(self, slot: Slot | None) -> Before:
        look = None
        if slot is not None:
            if slot.key != ("snapshot",):
                slot.reset()
                slot.key = ("snapshot",)
            look = self._snapshot_reuse(slot)
        if look is None:
            look = plainlook.take(self.root)
        if look is None:
            log.info("changed files of %s not reported: more than %d entries", self.root, snapshot.MAX_ENTRIES)
            if slot is not None:  # no use watching what cannot be told
                self._watcher_failed(slot, "the snapshot is capped")
            return _Nothing("snapshot")
        plainlook.prepare(look, self.root)
        return _SnapshotBefore(look)

    def _snapshot_reuse(self, slot: Slot) -> PlainLook | None:
        kept, slot.look = slot.look, None
        if slot.watcher is not None:
            act = slot.watcher.collect()
            if act.unknown:
                self._close_watcher(slot)
            elif isinstance(kept, PlainLook) and (act.quiet or plainlook.refresh(self.root, kept, act)):
                return kept
        if slot.watcher is None:
            self._open_plain_watcher(slot)
        return None

    def _snapshot_end(self, b: _SnapshotBefore, slot: Slot | None,
                      deadline: float | None) -> tuple[Changes, object]:
        if slot is not None and slot.watcher is not None:
            act = slot.watcher.collect()
            if not act.unknown:
                return self._snapshot_advance(b.look, act, deadline), b.look
            self._close_watcher(slot)
            if deadline is None:
                self._open_plain_watcher(slot)  # before the look after, which it follows
        after = plainlook.take(self.root, deadline)
        if after is None:
            return Changes((), False, "snapshot"), None
        files, complete = plainlook.compare_full(self.root, b.look, after)
        return Changes(files, complete, "snapshot"), after

    def _snapshot_advance(self, look: PlainLook, act: Activity, deadline: float | None) -> Changes:
        if act.quiet:
            return Changes((), look.snap.complete, "snapshot")
        found = plainlook.advance(self.root, look, act, deadline)
        if found is None:
            return Changes((), False, "snapshot")
        return Changes(found[0], found[1], "snapshot")

    def _open_plain_watcher(self, slot: Slot) -> None:
        if time.monotonic() < slot.retry_at:
            return
        try:
            slot.watcher = DirWatcher(self.root, skip=lambda parent, name: name in SKIP_DIRS)
        except (inotify.Unavailable, Unusable, OSError) as exc:
            self._watcher_failed(slot, exc)

    # --- the watcher ----------------------------------------------------------------------

    def _close_watcher(self, slot: Slot) -> None:
        if slot.watcher is not None:
            slot.watcher.close()
        slot.watcher = None
        slot.facts = None

    def _watcher_failed(self, slot: Slot, why: object) -> None:
        log.info("changed files of %s: no watcher (%s); each command looks at the whole workspace", self.root, why)
        self._close_watcher(slot)
        slot.retry_at = time.monotonic() + WATCHER_RETRY_SECONDS


def _ancestors(workspace: str, toplevel: str) -> list[str]:
    """The directories above `workspace` up to `toplevel` (whose .gitignore apply to it)."""
    found = []
    path = os.path.dirname(workspace)
    while len(path) >= len(toplevel) and (path + os.sep).startswith(toplevel.rstrip(os.sep) + os.sep) \
            and path != workspace:
        found.append(path)
        if path == toplevel:
            break
        path = os.path.dirname(path)
    return found
