"""The processes kward starts and everything they start: tagging, finding, ending, reaping.

Nothing started by a tool outlives the kward process. The rules:

- Every command runs with ``KWARD_COMMAND_ID=<process token>.<n>`` in its environment
  (`new_tag`); its descendants inherit it, including those that leave the command's
  process group and session (``setsid``) or are re-parented (a double fork).
- `CommandProcesses` signals every live process of one command: the descendants of its
  leader and of every process carrying its tag (found in ``/proc/<pid>/environ``), and
  whatever an earlier scan found. The caller also signals the command's process group.
- The process that owns kward's lifetime (`kward rpc`) calls `own_descendants` once at
  start. On Linux the first `spawn` then makes this process a child subreaper
  (``prctl(PR_SET_CHILD_SUBREAPER)`` through `ctypes`, loaded only then), so orphaned
  descendants are re-parented to kward instead of init: `end_descendants` at exit ends
  every descendant (SIGTERM, a short grace, then SIGKILL until none is left) and reaps
  them. Without /proc (macOS) it signals the process groups of the commands instead.
- Reaping: re-parented orphans become kward's children and must be waited for.
  `reap_orphans` (after each command, and at exit) waits only for zombie children that
  are neither a `spawn` child still registered (its owner reaps it through `wait_child`)
  nor in kward's own session, so a child started elsewhere with plain `subprocess` (which
  stays in kward's session) keeps its exit status for its own `wait`. Nothing calls
  ``waitpid(-1)`` or changes SIGCHLD. A child that starts its own session must be started
  with `spawn`.
- Signals go through a pidfd after checking the process start time where the platform
  has them, so a pid that died and was reused between the /proc scan and the signal is
  never hit.

Locking: `_lock` guards the registry of spawned children, the group list and the
subreaper flag; it is held around ``Popen`` (so a child is registered before any reaper
can see it) and around each reap. Any thread may call every function; `end_descendants`
is meant for the main thread at exit.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from kward.processes import table as proctable

if TYPE_CHECKING:  # pragma: no cover
    import subprocess

TAG_VARIABLE = "KWARD_COMMAND_ID"
EXIT_GRACE_SECONDS = 0.2  # after SIGTERM at exit, before SIGKILL
KILL_ROUNDS_SECONDS = 0.5  # how long to keep killing what a dying tree still forks
_ROUND_PAUSE = 0.005
_PR_SET_CHILD_SUBREAPER = 36

_lock = threading.Lock()
_children: set[int] = set()  # spawned and not yet reaped by their owner
_groups: set[int] = set()  # process groups of spawned children (the fallback without /proc)
_owner = False
_subreaper = False
_spawned = False  # `spawn` started a child (a command's tagged processes may exist)
_token = os.urandom(4).hex()
_sequence = itertools.count(1)


def own_descendants() -> None:
    """Declare that this process owns everything it starts (`kward rpc` at start-up).
    Cheap: the subreaper is installed by the first `spawn`."""
    global _owner
    _owner = True


def new_tag() -> str:
    """A fresh ``KWARD_COMMAND_ID`` value, unique to this process and command."""
    return f"{_token}.{next(_sequence)}"


def spawn(argv: list[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **popen_kwargs)``, registered so that `reap_orphans` leaves
    it to its owner, who must reap it with `wait_child`. Raises OSError like Popen."""
    import subprocess  # (when a tool first starts a process: `kward rpc` starts and lists sessions without it)

    global _spawned
    with _lock:
        _spawned = True
        if _owner and not _subreaper:
            _install_subreaper()
        proc = subprocess.Popen(argv, **popen_kwargs)
        _children.add(proc.pid)
        if popen_kwargs.get("start_new_session"):
            _groups.add(proc.pid)
    return proc


def wait_child(proc: subprocess.Popen[bytes]) -> int:
    """Reap a `spawn` child that has exited (``proc.wait()``) and forget it; returns its
    returncode."""
    with _lock:
        code = proc.wait()
        _children.discard(proc.pid)
    return code


def _install_subreaper() -> None:
    """Under `_lock`. Linux only; a failure leaves the process group fallback."""
    global _subreaper
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):  # (ctypes is optional; the subreaper is best effort)
        _subreaper = False
_spawned = False  # `spawn` started a child (a command's tagged processes may exist)


# --- one command -----------------------------------------------------------------------

class CommandProcesses:
    """The live processes of one command: the descendants of its leader and of every
    process carrying its tag. Each scan adds to what earlier scans found, so a process
    seen once (say, a tag-less child of the shell) is still signalled after the shell died
    and it was re-parented away. Used by the command's own thread; not thread-safe."""

    def __init__(self, leader: int, tag: str):
        self.leader = leader
        self._needle = f"\0{TAG_VARIABLE}={tag}\0".encode()
        self._known: dict[int, proctable.Proc] = {}

    def signal(self, *sigs: int) -> list[int]:
        """Scan, then send each of `sigs` in turn to every live process of the command;
        returns their pids (none also without /proc)."""

        table = proctable.table()
        if table is None:
            return []
        # with the subreaper every process of ours is below us; otherwise look everywhere
        candidates = proctable.descendants(table, [os.getpid()]) if _subreaper else set(table)
        roots = proctable.tagged(table, candidates, self._needle)
        roots.add(self.leader)
        roots.update(pid for pid, p in self._known.items() if pid in table and table[pid].start == p.start)
        members = proctable.descendants(table, roots)
        self._known.update((pid, table[pid]) for pid in members)
        signalled: list[int] = []
        for sig in sigs:
            signalled = proctable.signal_live(table, members, sig)
        return signalled

    def kill(self, also: Callable[[], object] | None = None, frozen_group: int | None = None) -> None:
        """SIGKILL them (and call `also()` after each round, e.g. to kill the process group)
        until none is alive or `KILL_ROUNDS_SECONDS` passed. Each round waits for the
        killed ones to die, then looks again unless none of them could have forked since
        the scan: each was stopped, or in `frozen_group`, a process group the caller sent
        SIGSTOP before calling (a member cannot fork past a pending SIGSTOP)."""
        deadline = time.monotonic() + KILL_ROUNDS_SECONDS
        while True:
            # before `also()`: a frozen group is still intact, its children not re-parented yet
            killed = [self._known[pid] for pid in self.signal(signal.SIGKILL)]
            if also is not None:
                also()
            if not killed or not proctable.wait_dead(killed, deadline):
                return
            if all(p.pgrp == frozen_group or p.state in ("T", "t") for p in killed):
                return

    def pids(self) -> list[int]:
        """Every pid a scan found (for `reap_orphans`)."""
        return list(self._known)


# --- reaping and exit ----------------------------------------------------------------

def reap_orphans(hints: Iterable[int] = (), everything: bool = False) -> int:
    """Reap exited orphans re-parented to this process (see the module doc for which);
    `hints` are pids to try first (a command's processes) before scanning all of /proc;
    `everything` (at exit) also reaps unregistered children of kward's own session.
    Returns how many were reaped. Costs one ``waitid`` when there is nothing to reap."""
    with _lock:
        if _pending() is None:
            return 0
        me, own_session = os.getpid(), os.getsid(0)

        def reap(p: proctable.Proc | None) -> int:
            if p is None or p.ppid != me or p.live or p.pid in _children \
                    or (p.sid == own_session and not everything):
                return 0
            try:
                return int(os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG) is not None)
            except ChildProcessError:
                return 0

        reaped = sum(reap(proctable.stat(pid)) for pid in hints)
        if reaped and _pending() is None:
            return reaped
        table = proctable.table()
        return reaped + sum(reap(p) for p in (table or {}).values())


def _pending() -> object | None:
    """Some child that can be waited for, without reaping it (None: there is none, or no
    ``waitid`` on this platform: macOS before Python 3.13, where nothing is re-parented
    to us anyway)."""
    if not hasattr(os, "waitid"):
        return None
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None


def _live_descendants(table: dict[int, proctable.Proc], prefix: bytes) -> set[int]:
    me = os.getpid()
    pids = proctable.descendants(table, [me]) - {me}
    if not _subreaper:  # orphans went to init: find them by our tag prefix
        pids |= proctable.tagged(table, table, prefix)
    return {pid for pid in pids if table[pid].live}


def end_descendants(grace: float = EXIT_GRACE_SECONDS) -> None:
    """At exit: SIGTERM every descendant, wait up to `grace` seconds, SIGKILL whatever
    is left (in rounds, as `CommandProcesses.kill`), then reap. For the process that
    called `own_descendants`, on its way out."""
    if (_subreaper or not _spawned) and proctable.has_children() is False:
        # no child, and no tagged orphan elsewhere (a subreaper's orphans are its children;
        # without a subreaper only a spawned command could have left one): no descendant
        return
    prefix = f"\0{TAG_VARIABLE}={_token}.".encode()
    table = proctable.table()
    if table is None:
        _end_groups(grace)
        return
    victims = _live_descendants(table, prefix)
    if victims:
        proctable.signal_live(table, victims, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while victims and time.monotonic() < deadline:
            time.sleep(_ROUND_PAUSE)
            table = proctable.table() or {}
            victims = _live_descendants(table, prefix)
        deadline = time.monotonic() + KILL_ROUNDS_SECONDS
        while victims and time.monotonic() < deadline:
            proctable.signal_live(table, victims, signal.SIGKILL)
            time.sleep(_ROUND_PAUSE)
            table = proctable.table() or {}
            victims = _live_descendants(table, prefix)
    reap_orphans(everything=True)


def _end_groups(grace: float) -> None:
    """Without /proc: signal every process group a spawned child led (TERM, then KILL)."""
    with _lock:
        groups = list(_groups)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
                alive.append(pgid)
            except OSError:
                pass
        if not alive:
            return
        groups = alive
        if sig == signal.SIGTERM:
            time.sleep(grace)
