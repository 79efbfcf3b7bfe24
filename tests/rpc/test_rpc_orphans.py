"""Nothing a tool started outlives `kward rpc`, over the real process.

The rule tested: a command's background processes (``&``, ``setsid``, a double fork, a
scrubbed environment) keep running after the command returned, while kward runs; they
are ended when kward exits, however it exits (EOF, SIGTERM, ``shutdown``). Cancelling or
timing out a command ends every process it started, those that left its process group
included. kward is a child subreaper, so orphans become its children, and it reaps them.
Every wait is a poll with a deadline: no test waits for a `sleep 100`.
"""

import os
import signal
import sys

import pytest

from lib.processes import pid_alive
from lib.rpc_client import modules_after_initialize
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events
from lib.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and a subreaper")

# Each writes its pid to a file: a plain background child, a setsid child of the shell, a
# double-forked setsid daemon (re-parented at once), and a setsid child without any
# environment (so without the command's KWARD_COMMAND_ID).
BACKGROUND = {
    "bg.pid": "sleep 100 & echo $! > bg.pid",
    "sid.pid": "setsid sleep 100 & echo $! > sid.pid",
    "dbl.pid": "(setsid sleep 100 & echo $! > dbl.pid)",
    "bare.pid": 'env -i "$(command -v setsid)" "$(command -v sleep)" 100 & echo $! > bare.pid',
}
SPAWN_ALL = "; ".join(BACKGROUND.values())


def shell(command: str, timeout: int = 60, id: str = "sh") -> list:
    return [tool("run_shell_command", {"command": command, "timeout_seconds": timeout}, id=id)]


def stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of `pid`, or None when it is gone from the process table."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def read_pids(k, names=tuple(BACKGROUND)) -> dict[str, int]:
    def ready():
        texts = [(k.ws / n).read_text().strip() if (k.ws / n).exists() else "" for n in names]
        return all(texts) and texts
    return {n: int(t) for n, t in zip(names, wait_until(ready, 10, "the pid files"))}


def wait_gone(pids: dict[str, int], reaped: bool = False, timeout: float = 5.0) -> None:
    """Wait until no process of `pids` is alive (with `reaped`, not even a zombie)."""
    def left():
        return [n for n, pid in pids.items() if (stat(pid) is not None if reaped else pid_alive(pid))]
    try:
        wait_until(lambda: not left(), timeout, "the processes to end")
    except TimeoutError:
        raise AssertionError(f"still there: {left()}") from None


@pytest.fixture
def kill_leftovers():
    """Whatever a failing test left running is killed afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def start_background(kward, kill_leftovers, extra_steps=()):
    """A kward whose first turn starts every kind of background process and returns."""
    k = kward([shell(SPAWN_ALL), [text("started")], *extra_steps])
    s = k.session()
    _, events = k.run(s["id"], "start them")
    check_turn_events(events, "completed")
    (result,) = [e["payload"] for e in events if e["type"] == "toolResult"]
    assert result["result"]["content"] == "Exit status: 0\n"
    pids = read_pids(k)
    kill_leftovers.extend(pids.values())
    return k, s, pids


@pytest.mark.slow
def test_background_processes_run_on_while_kward_runs(kward, kill_leftovers):
    k, s, pids = start_background(kward, kill_leftovers, [shell("echo second"), [text("still there")]])
    kpid = k.client.proc.pid
    assert {n: pid_alive(pid) for n, pid in pids.items()} == {n: True for n in pids}
    # the subreaper: the orphans (the shell has exited) are kward's children now
    assert {n: stat(pid)[1] for n, pid in pids.items()} == {n: kpid for n in pids}
    _, events = k.run(s["id"], "another command")
    check_turn_events(events, "completed")
    assert all(pid_alive(pid) for pid in pids.values())  # a later command ends nothing


@pytest.mark.slow
def test_an_exited_orphan_is_reaped_after_the_next_command(kward, kill_leftovers):
    k, s, pids = start_background(kward, kill_leftovers, [shell("true"), [text("reaped")]])
    kpid = k.client.proc.pid
    os.kill(pids["sid.pid"], signal.SIGKILL)
    wait_until(lambda: stat(pids["sid.pid"]) == ("Z", kpid), 5, "a zombie child of kward")
    _, events = k.run(s["id"], "run something")
    check_turn_events(events, "completed")
    assert stat(pids["sid.pid"]) is None  # reaped once the command ended
    assert all(pid_alive(pids[n]) for n in ("bg.pid", "dbl.pid", "bare.pid"))


@pytest.mark.parametrize("how", ["eof", "sigterm", "shutdown"])
@pytest.mark.slow
def test_every_background_process_ends_when_kward_exits(kward, kill_leftovers, how):
    k, s, pids = start_background(kward, kill_leftovers)
    assert all(pid_alive(pid) for pid in pids.values())
    c = k.client
    if how == "eof":
        c.close_stdin()
    elif how == "sigterm":
        c.proc.send_signal(signal.SIGTERM)
    else:
        assert c.request("shutdown") == {"ok": True}
    assert c.wait_exit(10) == 0
    wait_gone(pids)  # ended before kward's exit; their zombies went to init with kward
    assert c.stderr == "" and c.protocol_errors == []


def test_a_running_command_and_its_escaped_children_end_when_kward_exits(kward, kill_leftovers):
    k = kward([shell(SPAWN_ALL + "; echo $$ > sh.pid; sleep 100", timeout=300), [text("unreached")]])
    s = k.session()
    k.start(s["id"], "run it")
    pids = read_pids(k, (*BACKGROUND, "sh.pid"))
    kill_leftovers.extend(pids.values())
    k.client.proc.send_signal(signal.SIGTERM)
    assert k.client.wait_exit(10) == 0
    wait_gone(pids)


def test_cancel_ends_every_process_the_command_started(kward, kill_leftovers):
    k = kward([shell(SPAWN_ALL + "; echo $$ > sh.pid; sleep 100", timeout=300), [text("unreached")]])
    s = k.session()
    turn = k.start(s["id"], "run it")
    pids = read_pids(k, (*BACKGROUND, "sh.pid"))
    kill_leftovers.extend(pids.values())
    assert all(pid_alive(pid) for pid in pids.values())
    k.request("turns/cancel", {"turnId": turn["id"]})
    check_turn_events(k.finish(turn["id"], timeout=10), "canceled")
    wait_gone(pids, reaped=True)  # killed, and reaped by kward: not even a zombie is left
    assert k.client.proc.poll() is None  # while kward runs on


@pytest.mark.slow
def test_timeout_ends_every_process_the_command_started(kward, kill_leftovers):
    k = kward([shell(SPAWN_ALL + "; echo $$ > sh.pid; sleep 100", timeout=1), [text("timed out")]])
    s = k.session()
    _, events = k.run(s["id"], "run it", timeout=15)
    check_turn_events(events, "completed")
    (result,) = [e["payload"] for e in events if e["type"] == "toolResult"]
    assert result["result"]["content"] == "Error: command timed out after 1 seconds"
    pids = read_pids(k, (*BACKGROUND, "sh.pid"))
    kill_leftovers.extend(pids.values())
    wait_gone(pids, reaped=True)
    assert k.client.proc.poll() is None


def test_initialize_does_not_load_ctypes(isolated_home):
    # the subreaper is installed by the first command, not at start-up
    modules = modules_after_initialize(isolated_home)
    assert "kward.processes.children" in modules and "ctypes" not in modules
