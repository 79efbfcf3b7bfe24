"""The shell sandbox: `security.sandbox: "workspace-write"` runs every shell command under
bubblewrap (``bwrap``, from the OS packages).

`wrap(argv, cwd=, env=, policy=)` turns the argv of a command (``/bin/sh -c <command>``;
later a hook's) into the argv that runs it sandboxed, or returns it unchanged when the
sandbox is off. The sandboxed command sees:

- the whole file system read-only (``--ro-bind / /``), the workspace read-write
  (``--bind <ws> <ws>``), a fresh ``/dev`` and ``/proc``, a private empty ``/tmp``
  (``--tmpfs /tmp``: nothing of the host's /tmp is seen, nothing written there outlives
  the command);
- kward's config directory (config.json, auth.json, sessions, logs, memory) as an empty
  directory (``--tmpfs <dir>``), and a login file kept elsewhere (``KWARD_AUTH_PATH``) as
  an empty file (``--ro-bind /dev/null <file>``); these are mounted after the workspace,
  deeper paths last, so the config directory is hidden even inside the workspace and a
  workspace inside it stays usable;
- with `security.sandboxNetwork: false`, no network (``--unshare-net``: only a loopback
  interface of its own, so even 127.0.0.1 of the host is out of reach);
- ``--die-with-parent``: the command is killed when bwrap dies.

No ``--new-session``: kward already starts the command in a session of its own
(`kward.tools.process`: no controlling terminal, so nothing to inject into), and bwrap's
child must stay in that process group so that a timeout or a cancel ends it with the rest.
A PID namespace of its own (``--unshare-pid``): the command sees only its own processes
in ``/proc``, so no ``/proc/<pid>/root`` of a process outside leads back to the host's
writable file system; kward still kills the group from outside (and every process left
in the namespace dies with its first process).
The workspace's ``.git`` directory is bound read-only: a command cannot plant git config
(``core.fsmonitor``, filter drivers) or hooks that kward's own ``git status`` after the
command, which runs outside the sandbox, would run.

Where the sandbox is configured but bwrap is missing, cannot create its namespaces (the
probe: ``bwrap <the same mounts> true``, once per bwrap path and network choice, cached for
the process), or the config value cannot be used, `wrap` raises `SandboxUnavailable` (the
shell tool answers it as ``Error: sandbox ...: <why>``): a command is never run
unsandboxed instead.

`status(policy, env)` says what `kward doctor` and the `security` capability report.

Only standard library modules `initialize` may load (`os`, `select`, `threading`, `typing`:
start-up reports the sandbox, `kward.runtime.startup`; tests/packaging/test_startup.py);
a leaf, so that hooks can run through `wrap` as the shell tool does.

Any thread. `_lock` guards the probe cache; a probe (one short child process, at most
`PROBE_TIMEOUT` seconds) runs with it held, so concurrent first calls wait for one probe.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from kward.config.settings import Settings
    from kward.config.store import Paths

OFF = "off"
WORKSPACE_WRITE = "workspace-write"
MODES = (OFF, WORKSPACE_WRITE)
INVALID = "invalid"  # the reported mode of a value that cannot be used
PROBE_TIMEOUT = 10.0

_lock = threading.Lock()
_probes: dict[tuple[str, bool], str | None] = {}  # (bwrap, network) -> why not (None: it works)


class SandboxUnavailable(Exception):
    """The sandbox is configured but cannot be used; the command is not run. `message`:
    what the caller shows (no ``Error:`` prefix)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class SandboxPolicy(NamedTuple):
    """How shell commands run. `mode`: "off" or "workspace-write"; `network`: allowed;
    `hidden_dirs` / `hidden_files`: absolute paths shown empty inside (kward's config
    directory, a login file outside it); `problem`: why the configured value cannot be
    used (then every command is refused)."""

    mode: str = OFF
    network: bool = True
    hidden_dirs: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def configured(self) -> bool:
        return self.mode != OFF or self.problem is not None


class SandboxStatus(NamedTuple):
    """What is reported: the mode, whether bwrap works here (`available`; None when the
    sandbox is off: not probed), whether commands run sandboxed now (`in_force`), the
    network choice, and why not (`reason`)."""

    mode: str
    available: bool | None
    in_force: bool
    network: bool
    reason: str | None = None

    def wire(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"mode": self.mode, "available": self.available, "inForce": self.in_force,
                                   "network": self.network}
        if self.reason:
            payload["reason"] = self.reason
        return payload


def policy(settings: Settings, paths: Paths) -> SandboxPolicy:
    """The policy of these settings; kward's config directory (and a login file outside it) hidden."""
    problem = settings.problems.get("security.sandbox") or settings.problems.get("security.sandboxNetwork")
    config_dir = os.path.realpath(paths.config_dir)
    auth_file = os.path.realpath(paths.auth_file)
    files = () if auth_file.startswith(config_dir + os.sep) else (auth_file,)
    return SandboxPolicy(mode=settings.security.sandbox, network=settings.security.sandbox_network,
                         hidden_dirs=(config_dir,), hidden_files=files,
                         problem=problem.message if problem is not None else None)


def find_bwrap(env: Mapping[str, str]) -> str | None:
    """bwrap on the PATH of `env` (an executable regular file), or None."""
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", "bwrap")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def _base(bwrap: str, network: bool) -> list[str]:
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--tmpfs", "/tmp",
            "--die-with-parent"]
    if not network:
        argv.append("--unshare-net")
    return argv


def probe(bwrap: str, network: bool = True) -> str | None:
    """None when `bwrap` can run a command with these mounts here, else why not. Cached."""
    key = (bwrap, network)
    with _lock:
        if key not in _probes:
            try:
                _probes[key] = _run_probe([*_base(bwrap, network), "true"])
            except _ProbeFailed as exc:  # asked again next time
                return str(exc)
        return _probes[key]


class _ProbeFailed(Exception):
    """The probe could not even start (no descriptor for its pipe): no answer to keep."""


def _run_probe(argv: list[str]) -> str | None:
    """Run `argv` (stdin and stdout /dev/null, stderr read), at most PROBE_TIMEOUT seconds;
    None when it exited 0, else why not. posix_spawn, select and waitpid rather than
    subprocess, which `initialize` (that reports the sandbox) does not import."""
    try:
        r, w = os.pipe()
    except OSError as exc:  # (out of descriptors: not cached as an answer, see probe)
        raise _ProbeFailed(f"bwrap cannot be probed: {exc.strerror or exc}") from exc
    try:
        pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, w, 2)])
    except OSError as exc:
        os.close(r)
        return f"bwrap cannot be started: {exc.strerror or exc}"
    finally:
        os.close(w)
    err = bytearray()
    deadline = time.monotonic() + PROBE_TIMEOUT
    try:
        while len(err) < 64 * 1024:
            ready, _, _ = select.select([r], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return f"bwrap did not answer within {PROBE_TIMEOUT:g} seconds"
            chunk = os.read(r, 4096)
            if not chunk:
                break
            err += chunk
    finally:
        os.close(r)
    try:
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except ChildProcessError:  # (reaped by kward's exit: kward.processes.children)
        return "the bwrap probe ended unseen"
    if status == 0:
        return None
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return "bwrap cannot create its namespaces here: " + (lines[-1] if lines else f"exit status {status}")


def _unavailable(policy: SandboxPolicy, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(bwrap, None) when usable, else (None, why not)."""
    if policy.problem is not None:
        return None, policy.problem
    bwrap = find_bwrap(env)
    if bwrap is None:
        return None, "bwrap (bubblewrap) is not installed (not found on PATH)"
    why = probe(bwrap, policy.network)
    return (None, why) if why else (bwrap, None)


def status(policy: SandboxPolicy, env: Mapping[str, str]) -> SandboxStatus:
    """What is reported about `policy` here (probing bwrap once, only when a sandbox is
    configured: with it off, `available` is None, not looked at, so that `initialize`
    spawns nothing)."""
    if policy.problem is None and not policy.configured:
        return SandboxStatus(OFF, None, False, policy.network, "security.sandbox is off")
    bwrap, why = _unavailable(policy if policy.problem is None else SandboxPolicy(network=policy.network), env)
    available = bwrap is not None
    if policy.problem is not None:  # the mode is not known: "invalid"
        return SandboxStatus(INVALID, available, False, policy.network, f"commands are refused: {policy.problem}")
    return SandboxStatus(policy.mode, available, available, policy.network,
                         None if available else f"commands are refused: {why}")


def wrap(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], policy: SandboxPolicy | None) -> list[str]:
    """The argv that runs `argv` in `cwd` (the workspace, made writable) under `policy`;
    `argv` itself when the sandbox is off. Raises `SandboxUnavailable` when it is
    configured and cannot be used."""
    if policy is None or not policy.configured:
        return list(argv)
    bwrap, why = _unavailable(policy, env)
    if bwrap is None:
        what = "security.sandbox" if policy.problem is not None else f"sandbox {policy.mode}"
        raise SandboxUnavailable(f"{what} is configured but unavailable, command not run: {why}")
    workspace = os.path.realpath(cwd)
    mounts = [(workspace, ["--bind", workspace, workspace])]
    git_dir = os.path.join(workspace, ".git")
    if os.path.isdir(git_dir) and not os.path.islink(git_dir):  # (a .git file points outside: read-only already)
        mounts.append((git_dir, ["--ro-bind", git_dir, git_dir]))
    mounts += [(d, ["--tmpfs", d]) for d in policy.hidden_dirs if Path(d).is_dir()]  # (none: nothing to hide)
    mounts += [(f, ["--ro-bind", "/dev/null", f]) for f in policy.hidden_files if Path(f).exists()]
    mounts.sort(key=lambda m: len(Path(m[0]).parts))  # deeper last: it covers what is above it
    return [*_base(bwrap, policy.network), *(a for _, m in mounts for a in m), "--chdir", workspace, "--", *argv]
