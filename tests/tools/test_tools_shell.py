"""run_shell_command: output format, bounded capture, timeout and cancellation killing the
whole process group and every process the command started (``setsid``, double forks, a
scrubbed environment), closed stdin, no zombies, and the reaping rules of kward.processes.children."""

import os
import select
import subprocess
import threading
import time

import pytest

from kward.processes import children as procs
from kward.errors import Canceled
from kward.tools import process
from lib.processes import live_group_members, pid_alive
from lib.tools_helpers import call, ctx  # noqa: F401 (fixtures)
from lib.waiting import wait_until

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


@pytest.fixture(params=["pidfd", "poll"], autouse=True)
def exit_watch(request, monkeypatch):
    """Run every test with pidfd exit notification and with the polling fallback."""
    if request.param == "poll":
        monkeypatch.setattr(process, "_pidfd", lambda pid: None)
    return request.param


def sh(ctx, command, **kw):
    return call(ctx, "run_shell_command", command=command, **kw)


def test_exit_status_stdout_stderr(ctx):
    r = sh(ctx, "echo out; echo err >&2; exit 3")
    assert (r.content, r.is_error) == ("Exit status: 3\n\nSTDOUT:\nout\n\nSTDERR:\nerr\n", False)


def test_empty_streams_are_omitted(ctx):
    assert sh(ctx, "true").content == "Exit status: 0\n"
    assert sh(ctx, "echo e >&2; false").content == "Exit status: 1\n\nSTDERR:\ne\n"


def test_runs_in_workspace_root_with_env_overrides(ctx):
    ctx.env["KWARD_TOOL_TEST"] = "hello"
    r = sh(ctx, 'pwd; echo "$KWARD_TOOL_TEST"')
    assert r.content == f"Exit status: 0\n\nSTDOUT:\n{ctx.workspace_root}\nhello\n"


def test_kward_credentials_are_not_passed_to_commands(ctx, monkeypatch):
    for name in ("OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY", "KWARD_SOME_API_KEY", "KWARD_X_TOKEN"):
        monkeypatch.setenv(name, "secret-value-" + name)
    monkeypatch.setenv("KWARD_TOOL_VISIBLE", "visible")
    r = sh(ctx, "env")
    assert "secret-value-" not in r.content
    assert "KWARD_TOOL_VISIBLE=visible" in r.content


def test_stdin_is_closed(ctx):
    # with an open stdin `cat` would wait for the timeout
    r = sh(ctx, "cat; echo done", timeout_seconds=20)
    assert r.content == "Exit status: 0\n\nSTDOUT:\ndone\n"


def test_killed_by_signal_reports_128_plus_n(ctx):
    assert sh(ctx, "kill -9 $$").content == "Exit status: 137\n"


def test_empty_command(ctx):
    r = sh(ctx, "   ")
    assert (r.content, r.is_error) == ("Error: command is required", True)


def test_large_output_is_truncated_per_stream(ctx):
    r = sh(ctx, "head -c 3000000 /dev/zero | tr '\\0' e >&2 & head -c 5000000 /dev/zero | tr '\\0' a; wait")
    head, rest = r.content.split("\n\nSTDOUT:\n")
    assert head == "Exit status: 0"
    stdout, stderr = rest.split("\nSTDERR:\n")
    assert stdout == "a" * 131072 + "\n... truncated to 131072 bytes"
    assert stderr == "e" * 131072 + "\n... truncated to 131072 bytes"


def test_no_zombie_after_normal_run(ctx):
    r = sh(ctx, "echo $$")
    pid = int(r.content.split("STDOUT:\n")[1])
    assert not os.path.exists(f"/proc/{pid}")  # reaped, not a zombie


def test_background_child_holding_pipes_does_not_block(ctx):
    started = time.monotonic()
    r = sh(ctx, "sleep 30 & echo $!", timeout_seconds=20)
    elapsed = time.monotonic() - started
    pid = int(r.content.split("STDOUT:\n")[1])
    try:
        assert r.content.startswith("Exit status: 0\n")
        assert elapsed < 10  # returned after the shell, not after the sleep or the timeout
        assert pid_alive(pid)  # a command's background processes outlive it (until kward exits)
    finally:
        os.kill(pid, 9)


def test_every_command_is_tagged_with_its_own_id(ctx):
    first, second = (sh(ctx, f"echo ${procs.TAG_VARIABLE}").content for _ in range(2))
    assert first.startswith("Exit status: 0\n\nSTDOUT:\n") and second.startswith("Exit status: 0\n\nSTDOUT:\n")
    assert first != second and procs.TAG_VARIABLE not in os.environ


# Processes that leave the command's process group: a setsid child of the shell, a
# double-forked daemon re-parented away from the shell at once, and a setsid child that
# dropped its environment (and with it the command's tag).
ESCAPEES = ('setsid sleep 100 & echo $! > sid.pid; (setsid sleep 100 & echo $! > dbl.pid); '
            'env -i "$(command -v setsid)" "$(command -v sleep)" 100 & echo $! > bare.pid; ')


def _pids(ws, names=("sid.pid", "dbl.pid", "bare.pid")):
    return [int((ws / name).read_text()) for name in names]


def _gone(pids):
    return [pid for pid in pids if pid_alive(pid)] == []


@pytest.mark.slow
def test_timeout_ends_processes_that_left_the_group(ctx):
    ws = ctx.workspace_root
    r = sh(ctx, ESCAPEES + "sleep 100", timeout_seconds=1)
    assert (r.content, r.is_error) == ("Error: command timed out after 1 seconds", True)
    pids = _pids(ws)
    assert wait_until(lambda: _gone(pids)), [p for p in pids if pid_alive(p)]


def test_cancel_ends_processes_that_left_the_group(ctx):
    ws = ctx.workspace_root
    fifo = ws / "ready.fifo"
    os.mkfifo(fifo)
    fired = []
    canceller = threading.Thread(target=_cancel_when_ready, args=(str(fifo), ctx, fired))
    canceller.start()
    try:
        with pytest.raises(Canceled):
            sh(ctx, ESCAPEES + "echo ready > ready.fifo; sleep 100")
    finally:
        canceller.join(15)
    pids = _pids(ws)
    assert wait_until(lambda: _gone(pids)), [p for p in pids if pid_alive(p)]


def test_reaping_leaves_children_of_kwards_session_and_registered_ones_alone():
    # a plain child in our session, and a registered one in a session of its own, both exited
    plain = subprocess.Popen(["/bin/sh", "-c", "exit 7"])
    spawned = procs.spawn(["/bin/sh", "-c", "exit 5"], start_new_session=True)
    for p in (plain, spawned):
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    procs.reap_orphans()
    assert plain.wait(5) == 7 and procs.wait_child(spawned) == 5  # their statuses were kept


def test_reaping_waits_for_unregistered_children_of_other_sessions():
    # stands for a re-parented orphan: not spawned by us, in a session that is not ours
    orphan = subprocess.Popen(["/bin/sh", "-c", "exit 3"], start_new_session=True)
    os.waitid(os.P_PID, orphan.pid, os.WEXITED | os.WNOWAIT)
    assert procs.reap_orphans() == 1
    assert not os.path.exists(f"/proc/{orphan.pid}")
    assert orphan.wait(5) == 0  # its status went to the reaper, as documented


@pytest.mark.slow
def test_timeout_kills_the_group_with_grandchildren(ctx):
    ws = ctx.workspace_root
    r = sh(ctx, "trap '' TERM; echo $$ > sh.pid; sleep 100 & echo $! > bg.pid; sleep 100", timeout_seconds=1)
    assert (r.content, r.is_error) == ("Error: command timed out after 1 seconds", True)
    shell_pid = int((ws / "sh.pid").read_text())
    bg_pid = int((ws / "bg.pid").read_text())
    assert not os.path.exists(f"/proc/{shell_pid}")  # TERM was ignored: KILLed, then reaped
    assert wait_until(lambda: not pid_alive(bg_pid))
    assert wait_until(lambda: not live_group_members(shell_pid))


def _cancel_when_ready(fifo_path, ctx, fired):
    """Wait for the command to write to the FIFO, then cancel from this thread."""
    fd = os.open(fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        readable, _, _ = select.select([fd], [], [], 10)
        if readable:
            os.read(fd, 64)
    finally:
        os.close(fd)
    fired.append(time.monotonic())
    ctx.cancel.cancel()


def test_cancel_from_another_thread_kills_the_group(ctx):
    ws = ctx.workspace_root
    fifo = ws / "ready.fifo"
    os.mkfifo(fifo)
    fired = []
    canceller = threading.Thread(target=_cancel_when_ready, args=(str(fifo), ctx, fired))
    canceller.start()
    try:
        with pytest.raises(Canceled):
            sh(ctx, "echo $$ > sh.pid; sleep 100 & echo $! > bg.pid; echo ready > ready.fifo; sleep 100")
        returned = time.monotonic()
    finally:
        canceller.join(15)
    assert fired and returned - fired[0] < 5  # promptly, not after 100 s
    shell_pid = int((ws / "sh.pid").read_text())
    bg_pid = int((ws / "bg.pid").read_text())
    assert not os.path.exists(f"/proc/{shell_pid}")  # killed and reaped
    assert wait_until(lambda: not pid_alive(bg_pid))
    assert wait_until(lambda: not live_group_members(shell_pid))


def test_already_cancelled_starts_nothing(ctx):
    ctx.cancel.cancel()
    with pytest.raises(Canceled):
        sh(ctx, "touch started")
    assert not (ctx.workspace_root / "started").exists()


def test_missing_workspace_cannot_start(ctx, tmp_path):
    os.rmdir(ctx.workspace_root)
    r = sh(ctx, "true")
    assert r.is_error and r.content.startswith("Error: could not start command:")
