"""The processes kward starts and everything they start: tagging, finding, ending, reaping.

Nothing started by a tool outlives the kward process (issue 9, point 7). The rules:

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

import _signal as signal  # the C module: signal.py's enum wrappers cost ~0.6 ms at start-up
import itertools
import os
import sys
import threading
import time

from kward.records import TYPE_CHECKING, Record

if TYPE_CHECKING:  # pragma: no cover
    import subprocess
    from typing import Any, Iterable

TAG_VARIABLE = "KWARD_COMMAND_ID"
EXIT_GRACE_SECONDS = 0.2  # after SIGTERM at exit, before SIGKILL
KILL_ROUNDS_SECONDS = 0.5  # how long to keep killing what a dying tree still forks
_ROUND_PAUSE = 0.005
_DEATH_POLL = 0.0005  # a SIGKILLed process leaves within microseconds to a few ms
_MAX_PIDFDS = 64  # more victims than this are polled: never many descriptors at once
_PR_SET_CHILD_SUBREAPER = 36

_lock = threading.Lock()
_children: set[int] = set()  # spawned and not yet reaped by their owner
_groups: set[int] = set()  # process groups of spawned children (the fallback without /proc)
_owner = False
_subreaper = False
_token = os.urandom(4).hex()
_sequence = itertools.count(1)


class _Proc(Record):
    pid: int
    ppid: int
    pgrp: int
    sid: int
    state: str
    start: int  # clock ticks since boot: with the pid, identifies the process

    @property
    def live(self) -> bool:
        return self.state not in ("Z", "X", "x")


def own_descendants() -> None:
    """Declare that this process owns everything it starts (`kward rpc` at start-up).
    Cheap: the subreaper is installed by the first `spawn`."""
    global _owner
    _owner = True


def new_tag() -> str:
    """A fresh ``KWARD_COMMAND_ID`` value, unique to this process and command."""
    return f"{_token}.{next(_sequence)}"


def spawn(argv: list[str], **popen_kwargs: Any) -> "subprocess.Popen":
    """``subprocess.Popen(argv, **popen_kwargs)``, registered so that `reap_orphans` leaves
    it to its owner, who must reap it with `wait_child`. Raises OSError like Popen."""
    import subprocess

    with _lock:
        if _owner and not _subreaper:
            _install_subreaper()
        proc = subprocess.Popen(argv, **popen_kwargs)
        _children.add(proc.pid)
        if popen_kwargs.get("start_new_session"):
            _groups.add(proc.pid)
    return proc


def wait_child(proc: "subprocess.Popen") -> int:
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
    except (OSError, AttributeError):
        _subreaper = False


# --- /proc -------------------------------------------------------------------------------

def _read(path: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of a /proc file (os.read: a third of the cost of open())."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    from kward.confined import read_fd  # not at import: kward.confined is not needed to start

    try:
        return read_fd(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat(pid: int) -> _Proc | None:
    data = _read(f"/proc/{pid}/stat", 4096)
    if not data:
        return None
    fields = data[data.rfind(b")") + 2:].split()  # comm may hold spaces and parens
    try:
        return _Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode("ascii", "replace"),
                     int(fields[19]))
    except (IndexError, ValueError):
        return None


def _table() -> dict[int, _Proc] | None:
    """Every process now, or None without a /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table = {}
    for entry in entries:
        if entry.isdigit():
            p = _stat(int(entry))
            if p is not None:
                table[p.pid] = p
    return table or None


def _descendants(table: dict[int, _Proc], roots: Iterable[int]) -> set[int]:
    """`roots` and every process below them."""
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found: set[int] = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    return found


def _environ_has(pid: int, needle: bytes) -> bool:
    data = _read(f"/proc/{pid}/environ", 1 << 24)  # gone, a zombie's (empty), another user's
    return bool(data) and needle in b"\0" + data


def _tagged(table: dict[int, _Proc], candidates: Iterable[int], needle: bytes) -> set[int]:
    me = os.getpid()
    return {pid for pid in candidates if pid != me and table[pid].live and _environ_has(pid, needle)}


def _send(p: _Proc, sig: int) -> None:
    """Signal `p` unless its pid now names another process."""
    opener = getattr(os, "pidfd_open", None)
    sender = getattr(signal, "pidfd_send_signal", None)
    if opener is None or sender is None:
        try:
            os.kill(p.pid, sig)
        except OSError:
            pass
        return
    try:
        fd = opener(p.pid)
    except OSError:
        return
    try:
        now = _stat(p.pid)
        if now is not None and now.start == p.start:
            sender(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


def _signal_live(table: dict[int, _Proc], pids: Iterable[int], sig: int) -> list[int]:
    me = os.getpid()
    victims = [table[pid] for pid in pids if pid != me and pid in table and table[pid].live]
    for p in victims:
        _send(p, sig)
    return [p.pid for p in victims]


# --- one command -----------------------------------------------------------------------

class CommandProcesses:
    """The live processes of one command: the descendants of its leader and of every
    process carrying its tag. Each scan adds to what earlier scans found, so a process
    seen once (say, a tag-less child of the shell) is still signalled after the shell died
    and it was re-parented away. Used by the command's own thread; not thread-safe."""

    def __init__(self, leader: int, tag: str):
        self.leader = leader
        self._needle = f"\0{TAG_VARIABLE}={tag}\0".encode()
        self._known: dict[int, _Proc] = {}

    def signal(self, *sigs: int) -> list[int]:
        """Scan, then send each of `sigs` in turn to every live process of the command;
        returns their pids (none also without /proc)."""
        table = _table()
        if table is None:
            return []
        # with the subreaper every process of ours is below us; otherwise look everywhere
        candidates = _descendants(table, [os.getpid()]) if _subreaper else set(table)
        roots = _tagged(table, candidates, self._needle)
        roots.add(self.leader)
        roots.update(pid for pid, p in self._known.items() if pid in table and table[pid].start == p.start)
        members = _descendants(table, roots)
        self._known.update((pid, table[pid]) for pid in members)
        signalled: list[int] = []
        for sig in sigs:
            signalled = _signal_live(table, members, sig)
        return signalled

    def kill(self, also: Any = None, frozen_group: int | None = None) -> None:
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
            if not killed or not _wait_dead(killed, deadline):
                return
            if all(p.pgrp == frozen_group or p.state in ("T", "t") for p in killed):
                return

    def pids(self) -> list[int]:
        """Every pid a scan found (for `reap_orphans`)."""
        return list(self._known)


def _alive(p: _Proc) -> bool:
    now = _stat(p.pid)
    return now is not None and now.start == p.start and now.live


def _wait_dead(victims: list[_Proc], deadline: float) -> bool:
    """Wait until none of `victims` is alive (zombies count as dead); False at `deadline`.
    Sleeps on pidfds (readable once the process exited) where the platform has them."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None or len(victims) > _MAX_PIDFDS:
        while any(_alive(p) for p in victims):
            if time.monotonic() >= deadline:
                return False
            time.sleep(_DEATH_POLL)
        return True
    import select

    poller = select.poll()
    fds: list[int] = []
    try:
        for p in victims:
            try:
                fds.append(opener(p.pid))
            except OSError:
                continue  # already reaped
            if _alive(p):  # a pid reused since the scan is not waited for
                poller.register(fds[-1], select.POLLIN)
            else:
                os.close(fds.pop())
        pending = set(fds)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for fd, _ in poller.poll(remaining * 1000):
                poller.unregister(fd)
                pending.discard(fd)
        return True
    finally:
        for fd in fds:
            os.close(fd)


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

        def reap(p: _Proc | None) -> int:
            if p is None or p.ppid != me or p.live or p.pid in _children \
                    or (p.sid == own_session and not everything):
                return 0
            try:
                return int(os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG) is not None)
            except ChildProcessError:
                return 0

        reaped = sum(reap(_stat(pid)) for pid in hints)
        if reaped and _pending() is None:
            return reaped
        table = _table()
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


def _live_descendants(table: dict[int, _Proc], prefix: bytes) -> set[int]:
    me = os.getpid()
    pids = _descendants(table, [me]) - {me}
    if not _subreaper:  # orphans went to init: find them by our tag prefix
        pids |= _tagged(table, table, prefix)
    return {pid for pid in pids if table[pid].live}


def end_descendants(grace: float = EXIT_GRACE_SECONDS) -> None:
    """At exit: SIGTERM every descendant, wait up to `grace` seconds, SIGKILL whatever
    is left (in rounds, as `CommandProcesses.kill`), then reap. For the process that
    called `own_descendants`, on its way out."""
    prefix = f"\0{TAG_VARIABLE}={_token}.".encode()
    table = _table()
    if table is None:
        _end_groups(grace)
        return
    victims = _live_descendants(table, prefix)
    if victims:
        _signal_live(table, victims, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while victims and time.monotonic() < deadline:
            time.sleep(_ROUND_PAUSE)
            table = _table() or {}
            victims = _live_descendants(table, prefix)
        deadline = time.monotonic() + KILL_ROUNDS_SECONDS
        while victims and time.monotonic() < deadline:
            _signal_live(table, victims, signal.SIGKILL)
            time.sleep(_ROUND_PAUSE)
            table = _table() or {}
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
