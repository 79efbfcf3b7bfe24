"""Run one child process (a shell command, or an argv such as the search worker) as its
own process group with bounded capture, a timeout and cancellation; always reap.

`run_command` is called on the turn's worker thread and blocks until the command ended,
timed out or was cancelled. It reads stdout and stderr itself through a selector (no
reader threads): each stream keeps at most `cap` bytes and the rest is read and
discarded, so the child never blocks on a full pipe and memory stays bounded.

- stdin is /dev/null (or a descriptor the caller gives); the child runs ``/bin/sh -c <command>`` (or the argv list given
  instead of a command string) with ``start_new_session=True``, so the child and
  everything it starts share one process group whose id is the child's pid, and with a
  fresh ``KWARD_COMMAND_ID`` in its environment that marks every process the command
  starts, even one that leaves the group (``setsid``) or is re-parented (`kward.processes.children`).
- Timeout: SIGTERM to the group and every process of the command (collected while the
  group is stopped), up to 0.2 s grace for the shell, then SIGKILL to all of them
  (`procs.CommandProcesses`).
- Cancellation: `cancel.on_cancel` SIGSTOPs the group at once from the cancelling thread
  (so it can neither fork nor exit and re-parent its children) and wakes the selector
  through a self-pipe; `run_command` then SIGKILLs every process of the command, reaps
  and raises `kward.errors.Canceled`.
- Live output (`live`, a `kward.tools.live.LiveOutput`): every chunk read is fed to it as
  well (whatever the capture cap), and the selector's wait is bounded by its next due
  flush, so its updates go out on time from this same thread. The caller closes it.
  Publishing an update waits while the client is behind reading (the face's `make_room`),
  but never past the command's deadline or the cancel: the pump runs inside
  `kward.pacing.bounded`, so a client that stopped reading cannot keep the command from
  being timed out or cancelled.
- When the shell exits but a background child still holds the pipes, reading stops
  after a short linger (`LINGER_SECONDS`). Background processes of a command that
  returned are not killed: they run while kward runs and are ended when it exits
  (`procs.end_descendants`). After every command exited orphans are reaped
  (`procs.reap_orphans`).

Environment: `child_environment` is ``os.environ`` without kward's own credentials
(`kward.credential_env.is_credential_variable`: its `CREDENTIAL_VARIABLES` and any ``KWARD_*``
variable named like a secret), so that a command the model runs (``env``, ``printenv``)
cannot read them into the conversation.

Locking: `_Group._lock` guards "is the leader reaped" and the self-pipe's lifetime.
Signals go to the group only while the leader is unreaped (a zombie leader keeps the
group id reserved, so a signal can never hit a recycled id), and the cancel callback
never writes to a closed (possibly reused) descriptor. `_Group.interrupted` is set by the
cancelling thread before it stops the group and only read by the command's thread.
"""

from __future__ import annotations

import logging
import os
import select
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from kward import pacing
from kward.cancel import CancelToken
from kward.credential_env import is_credential_variable
from kward.errors import Canceled
from kward.processes import children as procs

if TYPE_CHECKING:  # pragma: no cover
    from kward.tools.live import LiveOutput

log = logging.getLogger(__name__)

MAX_STREAM_BYTES = 128 * 1024
TERM_GRACE_SECONDS = 0.2
LINGER_SECONDS = 0.2
_POLL_SECONDS = 0.02  # leader-exit polling when pidfd is unavailable
_READ_SIZE = 64 * 1024

def child_environment(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` without kward's credentials, then `overrides` (given explicitly by
    the caller, so applied as they are). Any thread."""
    env = {k: v for k, v in os.environ.items() if not is_credential_variable(k)}
    env.update(overrides or {})
    return env


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What a finished command left: exit status (128+N when killed by signal N, None on
    timeout), the kept bytes of each stream and whether each was cut."""

    exit_status: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    pid: int


class _Capture:
    """Keeps the first `cap` bytes of the stream `name` and counts the rest."""

    def __init__(self, name: str, cap: int):
        self.name = name
        self.cap = cap
        self.buf = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.buf)


class _Group:
    """The child process, its process group (id == leader pid) and every process carrying
    its tag."""

    def __init__(self, proc: subprocess.Popen[bytes], tag: str):
        self.proc = proc
        self.pid = proc.pid
        self.members = procs.CommandProcesses(proc.pid, tag)
        self.interrupted = False
        self._lock = threading.Lock()
        self._reaped = False
        self._wake_r, self._wake_w = os.pipe()
        self._wake_open = True

    @property
    def wake_fd(self) -> int:
        return self._wake_r

    def signal(self, sig: int) -> None:
        """Send `sig` to the whole group unless the leader was already reaped."""
        with self._lock:
            if self._reaped:
                return
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def terminate(self) -> None:
        """SIGTERM the group and every other process of the command. The group is frozen
        while they are collected, so the shell cannot exit and re-parent its children."""
        self.signal(signal.SIGSTOP)
        self.members.signal(signal.SIGTERM, signal.SIGCONT)
        self.signal(signal.SIGTERM)
        self.signal(signal.SIGCONT)

    def kill(self, frozen: bool = False) -> None:
        """SIGKILL the group and every other process of the command, until none is left.
        `frozen`: first SIGSTOP the group (again, if `interrupt` did), so that it neither
        forks nor re-parents its children while they are collected."""
        if frozen:
            self.signal(signal.SIGSTOP)
        self.members.kill(also=lambda: self.signal(signal.SIGKILL), frozen_group=self.pid if frozen else None)

    def interrupt(self) -> None:
        """The cancel callback: freeze the group at once (`kill` follows on the command's
        thread, with the process tree still intact) and wake the pump loop."""
        self.interrupted = True
        self.signal(signal.SIGSTOP)
        with self._lock:
            if self._wake_open:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:
                    pass

    def leader_exited(self) -> bool:
        """True once the leader has exited (it is not reaped by this check)."""
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def wait_leader(self, timeout: float, pidfd: int | None) -> None:
        """Wait up to `timeout` seconds for the leader to exit, without reaping it."""
        if pidfd is not None:
            select.select([pidfd], [], [], timeout)
            return
        deadline = time.monotonic() + timeout
        while not self.leader_exited() and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)

    def reap(self) -> int:
        """Block until the leader exits, reap it and return its exit status."""
        try:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)  # exit without reaping
        except ChildProcessError:
            pass
        with self._lock:
            code = procs.wait_child(self.proc)  # immediate: the leader has exited
            self._reaped = True
        return 128 - code if code < 0 else code

    def close(self) -> None:
        with self._lock:
            self._wake_open = False
            os.close(self._wake_r)
            os.close(self._wake_w)


def _pidfd(pid: int) -> int | None:
    """A pidfd of the child (readable once it exited), or None where the OS has none."""
    if not hasattr(os, "pidfd_open"):  # Linux only
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def run_command(command: str | Sequence[str], *, cwd: str, timeout: float, cancel: CancelToken,
                env: Mapping[str, str] | None = None, cap: int = MAX_STREAM_BYTES,
                live: LiveOutput | None = None, stdin: int | None = None,
                end_group: bool = False) -> CommandOutcome:
    """Run `command` through ``/bin/sh -c`` (a string) or as an argv (a sequence) in `cwd`;
    see the module doc for the rules. `stdin`: a readable descriptor (a file the caller
    wrote and rewound) the child reads instead of /dev/null. `end_group`: once the command
    exited, every process it started that is still running is killed too (a hook's
    background children do not outlive it).

    Raises `Canceled` when `cancel` fired before or during the run (the group is killed
    and the child reaped first), `OSError` when the child cannot be started.
    """
    cancel.raise_if_cancelled()
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    tag = procs.new_tag()
    child_env = child_environment() if env is None else dict(env)
    child_env[procs.TAG_VARIABLE] = tag
    proc = procs.spawn(
        argv, cwd=cwd, env=child_env,
        stdin=subprocess.DEVNULL if stdin is None else stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, close_fds=True,
    )
    group = _Group(proc, tag)
    pidfd = _pidfd(proc.pid)
    out, err = _Capture("stdout", cap), _Capture("stderr", cap)
    unregister = cancel.on_cancel(group.interrupt)
    outcome = "error"
    deadline = time.monotonic() + timeout
    try:
        with pacing.bounded(deadline, cancel):  # publishing live output never waits past these
            outcome = _pump(group, proc, pidfd, out, err, deadline, cancel, live)
        if outcome == "timeout":
            group.terminate()
            group.wait_leader(TERM_GRACE_SECONDS, pidfd)
            group.kill()  # the shell's children, even when the shell left
    finally:
        unregister()
        if group.interrupted and outcome == "exit":  # cancelled as the command returned
            outcome = "cancel"
        if outcome not in ("exit", "timeout") or (end_group and outcome == "exit"):
            group.kill(frozen=True)  # cancelled, an unexpected failure, or what it left running
        status = group.reap()
        group.close()
        if pidfd is not None:
            os.close(pidfd)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        procs.reap_orphans(group.members.pids())
    log.debug("command pid=%d ended: %s, status %s", proc.pid, outcome, status)
    if outcome == "cancel":
        raise Canceled("Canceled.")
    return CommandOutcome(
        exit_status=None if outcome == "timeout" else status,
        stdout=bytes(out.buf), stderr=bytes(err.buf),
        stdout_truncated=out.truncated, stderr_truncated=err.truncated,
        timed_out=outcome == "timeout", pid=proc.pid,
    )


def _pump(group: _Group, proc: subprocess.Popen[bytes], pidfd: int | None, out: _Capture, err: _Capture,
          deadline: float, cancel: CancelToken, live: LiveOutput | None) -> str:
    """Read both pipes until the command is over (feeding `live`, if any); returns "exit",
    "timeout" or "cancel"."""
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        for stream, capture in ((proc.stdout, out), (proc.stderr, err)):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, capture)
        sel.register(group.wake_fd, selectors.EVENT_READ, "wake")
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        open_streams = 2
        exited_at: float | None = None
        while True:
            if cancel.cancelled:
                return "cancel"
            now = time.monotonic()
            if exited_at is None and pidfd is None and group.leader_exited():
                exited_at = now
            if exited_at is not None and (open_streams == 0 or now - exited_at >= LINGER_SECONDS):
                return "exit"
            if now >= deadline:
                return "timeout"
            wait = deadline - now
            if exited_at is not None:
                wait = min(wait, exited_at + LINGER_SECONDS - now)
            elif pidfd is None:
                wait = min(wait, _POLL_SECONDS)
            if live is not None:
                due = live.poll()  # publishes what is due; the wait until the next flush
                if due is not None:
                    wait = min(wait, due)
            for key, _ in sel.select(max(wait, 0.0)):
                if key.data == "wake":
                    os.read(group.wake_fd, 64)
                elif key.data == "exit":
                    sel.unregister(key.fd)
                    exited_at = time.monotonic()
                elif isinstance(key.data, _Capture):
                    try:
                        chunk = os.read(key.fd, _READ_SIZE)
                    except BlockingIOError:
                        continue
                    if chunk:
                        key.data.feed(chunk)
                        if live is not None:
                            live.feed(key.data.name, chunk)
                    else:
                        sel.unregister(key.fd)
                        open_streams -= 1
