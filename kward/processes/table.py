"""The process table as /proc shows it: reading a process's stat and environment, the
descendants of a set of processes, and signalling and waiting for processes safely (a pid
that died and was reused since the scan is never signalled nor waited for). What
`kward.processes.children` finds and ends the processes of commands with.

Linux /proc; every function answers "nothing" where there is none (`table` is None).
Pure functions over the OS: any thread, no state.
"""

from __future__ import annotations

import os
import select
import signal
import time
from typing import Iterable, NamedTuple

from kward.fsutil import read_fd

DEATH_POLL = 0.0005  # a SIGKILLed process leaves within microseconds to a few ms
MAX_PIDFDS = 64  # more victims than this are polled: never many descriptors at once


class Proc(NamedTuple):
    pid: int
    ppid: int
    pgrp: int
    sid: int
    state: str
    start: int  # clock ticks since boot: with the pid, identifies the process

    @property
    def live(self) -> bool:
        return self.state not in ("Z", "X", "x")


def read_proc(path: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of a /proc file (os.read: a third of the cost of open())."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return read_fd(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def stat(pid: int) -> Proc | None:
    data = read_proc(f"/proc/{pid}/stat", 4096)
    if not data:
        return None
    fields = data[data.rfind(b")") + 2:].split()  # comm may hold spaces and parens
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode("ascii", "replace"),
                     int(fields[19]))
    except (IndexError, ValueError):
        return None


def table() -> dict[int, Proc] | None:
    """Every process now, or None without a /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table = {}
    for entry in entries:
        if entry.isdigit():
            p = stat(int(entry))
            if p is not None:
                table[p.pid] = p
    return table or None


def descendants(table: dict[int, Proc], roots: Iterable[int]) -> set[int]:
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


def has_children() -> bool | None:
    """Whether this process has a child now (any of its threads' ``children`` lists in
    /proc); None where the kernel does not keep those lists. A few small reads."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tasks:
        data = read_proc(f"/proc/self/task/{tid}/children", 1 << 16)
        if data is None:
            if os.path.exists(f"/proc/self/task/{tid}"):
                return None  # (no children list: the kernel was built without it)
            continue  # the thread ended meanwhile
        if data.strip():
            return True
    return False


def environ_has(pid: int, needle: bytes) -> bool:
    data = read_proc(f"/proc/{pid}/environ", 1 << 24)  # gone, a zombie's (empty), another user's
    return data is not None and needle in b"\0" + data


def tagged(table: dict[int, Proc], candidates: Iterable[int], needle: bytes) -> set[int]:
    me = os.getpid()
    return {pid for pid in candidates if pid != me and table[pid].live and environ_has(pid, needle)}


def send(p: Proc, sig: int) -> None:
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
        now = stat(p.pid)
        if now is not None and now.start == p.start:
            sender(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


def signal_live(table: dict[int, Proc], pids: Iterable[int], sig: int) -> list[int]:
    me = os.getpid()
    victims = [table[pid] for pid in pids if pid != me and pid in table and table[pid].live]
    for p in victims:
        send(p, sig)
    return [p.pid for p in victims]


def alive(p: Proc) -> bool:
    now = stat(p.pid)
    return now is not None and now.start == p.start and now.live


def wait_dead(victims: list[Proc], deadline: float) -> bool:
    """Wait until none of `victims` is alive (zombies count as dead); False at `deadline`.
    Sleeps on pidfds (readable once the process exited) where the platform has them."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None or len(victims) > MAX_PIDFDS:
        while any(alive(p) for p in victims):
            if time.monotonic() >= deadline:
                return False
            time.sleep(DEATH_POLL)
        return True
    poller = select.poll()
    fds: list[int] = []
    try:
        for p in victims:
            try:
                fds.append(opener(p.pid))
            except OSError:
                continue  # already reaped
            if alive(p):  # a pid reused since the scan is not waited for
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
