"""The shell sandbox (kward.sandbox) with the real bwrap: a command writing outside the
workspace fails and inside succeeds, kward's config directory (and a login file outside
it) is invisible, /tmp is private, the network is refused when off and reachable when on
(a TCP server of the test on 127.0.0.1), changed files are still seen, timeout and cancel
still end every process of a sandboxed command; a missing bwrap or an unusable policy
refuses the command with the reason and runs nothing.

Needs a working bwrap: skipped without one, except on CI (``CI=true`` or ``KWARD_CI=1``,
which .ci/run sets after installing bubblewrap), where a missing sandbox fails instead.

The workspace and the config directory live below /var/tmp (not /tmp), so that what the
sandbox's private /tmp would hide anyway does not make the config-directory test pass."""

import os
import socket
import threading
from pathlib import Path

import pytest

from kward.errors import Canceled
from kward import sandbox
from kward.sandbox import SandboxPolicy
from lib.processes import pid_alive
from lib.sandbox_helpers import WHY_NOT, root, usable  # noqa: F401 (fixtures)
from lib.tools_helpers import call, make_ctx
from lib.waiting import wait_until

needs_bwrap = pytest.mark.usefixtures("usable")


def _setup(root: Path, network: bool = True):
    ws, conf = root / "ws", root / "conf"
    conf.mkdir()
    (conf / "config.json").write_text('{"secret": "s3cret"}')
    auth = root / "elsewhere" / "auth.json"  # KWARD_AUTH_PATH outside the config directory
    auth.parent.mkdir()
    auth.write_text('{"token": "t0ken"}')
    policy = SandboxPolicy(mode="workspace-write", network=network, hidden_dirs=(str(conf),),
                           hidden_files=(str(auth),))
    return make_ctx(ws, sandbox=policy), conf, auth


def sh(ctx, command, **kw):
    return call(ctx, "run_shell_command", command=command, **kw)


@needs_bwrap
def test_writes_outside_the_workspace_fail_inside_succeed(root):
    ctx, _, _ = _setup(root)
    r = sh(ctx, "echo in > inside.txt && cat inside.txt; echo out > ../outside.txt; echo $?")
    assert r.content.startswith("Exit status: 0") and "in\n" in r.content, r.content
    assert "Read-only file system" in r.content
    assert (ctx.workspace_root / "inside.txt").read_text() == "in\n"
    assert not (root / "outside.txt").exists()
    assert r.changed_files == ["inside.txt"]  # the look from outside still sees it


@needs_bwrap
def test_the_config_directory_and_login_file_are_invisible(root):
    ctx, conf, auth = _setup(root)
    r = sh(ctx, f"ls -A {conf}; cat {conf}/config.json; cat {auth}; echo end")
    assert "s3cret" not in r.content and "t0ken" not in r.content and "config.json" not in r.content.split("STDERR")[0]
    assert "No such file" in r.content and "end" in r.content
    r = sh(ctx, f"echo x > {conf}/planted; echo $?")
    assert not (conf / "planted").exists()  # written to a tmpfs that went away with the command


@needs_bwrap
def test_tmp_is_private(root, tmp_path):
    ctx, _, _ = _setup(root)
    (tmp_path / "host-file").write_text("host")
    r = sh(ctx, f"cat {tmp_path}/host-file; ls -A /tmp; echo mine > /tmp/k-mine && cat /tmp/k-mine")
    assert "host" not in r.content.replace("host-file", "") and "mine" in r.content
    assert not Path("/tmp/k-mine").exists()


def _server():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    return srv


@needs_bwrap
@pytest.mark.parametrize("network", [True, False])
def test_network_is_refused_when_off(root, network):
    ctx, _, _ = _setup(root, network=network)
    srv = _server()
    port = srv.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.sendall(b"hello\n")
            conn.close()

    t = threading.Thread(target=accept)
    t.start()
    try:
        py = (f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); "
              "print('got', s.recv(10).decode().strip())")
        r = sh(ctx, f"python3 -c \"{py}\"", timeout_seconds=20)
    finally:
        stop.set()
        t.join(10)
        srv.close()
    if network:
        assert "got hello" in r.content and accepted == [1], r.content
    else:
        assert "got hello" not in r.content and accepted == [] and "Exit status: 1" in r.content, r.content


def host_pids(*tags: str) -> dict[str, int]:
    """The host pids of the processes whose command line is ``sleep <tag>`` (the command
    runs in a PID namespace of its own: its ``$!`` is not a pid kward's side sees)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            for tag in tags:
                if argv[:2] == [b"sleep", tag.encode()]:
                    found[tag] = int(entry)
    return found


@needs_bwrap
def test_a_timeout_ends_every_process_of_a_sandboxed_command(root):
    ctx, _, _ = _setup(root)
    seen: dict[str, int] = {}

    def watch():  # the two background sleeps, seen from outside while the command runs
        wait_until(lambda: len(seen.update(host_pids("4711", "4712")) or seen) == 2, 15, "the sleeps")

    t = threading.Thread(target=watch)
    t.start()
    try:
        r = sh(ctx, "trap '' TERM; sleep 4711 & setsid sleep 4712 & sleep 100", timeout_seconds=2)
    finally:
        t.join(20)
    assert (r.content, r.is_error) == ("Error: command timed out after 2 seconds", True)
    assert sorted(seen) == ["4711", "4712"]
    assert wait_until(lambda: not any(pid_alive(p) for p in seen.values())), seen


@needs_bwrap
def test_a_cancel_ends_every_process_of_a_sandboxed_command(root):
    ctx, _, _ = _setup(root)
    seen: dict[str, int] = {}

    def cancel_when_started():
        wait_until(lambda: len(seen.update(host_pids("4721", "4722")) or seen) == 2, 15, "the sleeps")
        ctx.cancel.cancel()

    t = threading.Thread(target=cancel_when_started)
    t.start()
    try:
        with pytest.raises(Canceled):
            sh(ctx, "sleep 4721 & setsid sleep 4722 & sleep 100", timeout_seconds=60)
    finally:
        t.join(20)
    assert sorted(seen) == ["4721", "4722"]
    assert wait_until(lambda: not any(pid_alive(p) for p in seen.values())), seen


@needs_bwrap
def test_the_command_sees_only_its_own_processes_and_cannot_write_through_proc(root):
    ctx, conf, _ = _setup(root)
    outside = root / "outside"
    outside.mkdir()
    sh(ctx, f"ls /proc | grep -c '^[0-9]' > n.txt; echo x > /proc/{os.getpid()}/root{outside}/via-proc.txt; "
            f"cat /proc/{os.getpid()}/root{conf}/config.json > leak.txt")
    assert int((ctx.workspace_root / "n.txt").read_text()) <= 5  # sh, ls, grep and bwrap's own
    assert not (outside / "via-proc.txt").exists()
    assert "s3cret" not in (ctx.workspace_root / "leak.txt").read_text()


@needs_bwrap
def test_the_workspace_git_directory_is_read_only_inside(root):
    ctx, _, _ = _setup(root)
    git = ctx.workspace_root / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    r = sh(ctx, "echo '[core] fsmonitor = touch planted' >> .git/config; echo ok > fine.txt")
    assert (git / "config").read_text() == "[core]\n" and (ctx.workspace_root / "fine.txt").exists(), r.content


def test_a_missing_bwrap_refuses_with_the_reason(root, monkeypatch):
    monkeypatch.setenv("PATH", str(root))  # no bwrap there (/bin/sh is run by its full path)
    ctx, _, _ = _setup(root)
    r = sh(ctx, "echo ran > ran.txt")
    assert r.is_error and r.content == ("Error: sandbox workspace-write is configured but unavailable, command not run: "
                                        "bwrap (bubblewrap) is not installed (not found on PATH)")
    assert not (ctx.workspace_root / "ran.txt").exists()
    st = sandbox.status(ctx.sandbox, os.environ)
    assert (st.available, st.in_force) == (False, False) and "not installed" in (st.reason or "")


def test_a_bwrap_that_cannot_make_namespaces_refuses(root, monkeypatch):
    fake = root / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    ctx, _, _ = _setup(root)
    r = sh(ctx, "echo ran > ran.txt")
    assert r.is_error and r.content.endswith("bwrap cannot create its namespaces here: "
                                             "bwrap: No permissions to creating new namespace"), r.content
    assert not (ctx.workspace_root / "ran.txt").exists()


def test_an_unusable_policy_refuses(root):
    ctx = make_ctx(root / "ws", sandbox=SandboxPolicy(problem="Invalid config value for security.sandbox: must be "
                                                              "one of off, workspace-write, not 'on'"))
    r = sh(ctx, "echo ran > ran.txt")
    assert r.is_error and "security.sandbox: must be one of off, workspace-write" in r.content
    assert not (ctx.workspace_root / "ran.txt").exists()


def test_off_is_unwrapped_and_mounts_go_deeper_last(root):
    argv = ["/bin/sh", "-c", "true"]
    assert sandbox.wrap(argv, cwd=str(root), env=os.environ, policy=None) == argv
    assert sandbox.wrap(argv, cwd=str(root), env=os.environ, policy=SandboxPolicy()) == argv
    if WHY_NOT is None:
        conf = root / "ws" / ".kward"
        conf.mkdir(parents=True)
        wrapped = sandbox.wrap(argv, cwd=str(root / "ws"), env=os.environ,
                               policy=SandboxPolicy(mode="workspace-write", network=False, hidden_dirs=(str(conf),)))
        assert "--unshare-net" in wrapped and "--new-session" not in wrapped and wrapped[-4:] == ["--", *argv]
        assert wrapped.index("--bind") < wrapped.index(str(conf))  # the config dir inside the workspace: hidden
