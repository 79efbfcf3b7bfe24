"""`kward rpc --connect unix://PATH` and `kward rpc --attach [unix://PATH]`: stdio clients of a
listening server, and a part of the RPC suite driven through `--attach`.

The bridge relays frames unchanged; `--attach` starts the server when none listens and
the next bridge reuses it; a UI that goes away leaves the server and its turn running for
the next bridge to attach to; a bridge that loses its server exits 1 with one line; one
with no server to connect to likewise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from lib.daemon_helpers import Daemon
from lib.paths import REPO
from lib.rpc_client import VIA_ATTACH, RpcClient, kward_command, kward_env
from lib.scripts import text, wait_for_steer, write_script
from lib.waiting import wait_until

#: the part of the suite run through `--attach`: sessions, turns, tools, questions, approvals,
#: capabilities and MCP, less what is about a stdio process's own lifetime (the end of its
#: input cancelling its turns, its exit, its own pid)
SUBSET = ["tests/turns/test_rpc_turns_runtime.py", "tests/turns/test_rpc_approval.py",
          "tests/turns/test_rpc_turns_control.py", "tests/rpc/test_capabilities.py", "tests/mcp/test_rpc_mcp.py"]
STDIO_LIFETIME = ["client_gone_while_waiting", "shutdown_while_waiting", "end_of_input_cancels",
                  "sessions_and_a_changed_tool_list"]


def bridge(home, ws, *args, env=None) -> RpcClient:
    return RpcClient(home, cwd=ws, env=env or kward_env(home, KWARD_PROVIDER="scripted"),
                     argv=kward_command(None, *args))


def test_connect_relays_to_a_listening_server_and_the_turn_outlives_the_ui(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    d = Daemon(isolated_home, ws, [[text("working ", repeat=10), wait_for_steer(30)], [text("done")]])
    try:
        ui = bridge(isolated_home, ws, "--connect", f"unix://{d.path}", env=d.env)
        assert ui.request("$/ping")["pid"] == d.proc.pid  # (the server's, not the bridge's)
        session = ui.request("sessions/create", {"workspaceRoot": str(ws)})
        turn = ui.request("turns/start", {"sessionId": session["id"], "input": "go"})
        ui.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["type"] == "assistantDelta", 20,
                             "the turn streaming")
        assert ui.close() == 0 and ui.stderr == ""  # the UI's window closed: its stdin ended
        later = bridge(isolated_home, ws, "--connect", f"unix://{d.path}", env=d.env)
        attached = later.request("sessions/attach", {"sessionId": session["id"]})
        assert [t["status"] for t in attached["turns"]] == ["running"]
        later.request("turns/start", {"sessionId": session["id"], "input": "finish", "streamingBehavior": "steer"})
        later.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["type"] == "turnFinished"
                                and n["params"]["turnId"] == turn["id"], 20, "the turn's end")
        assert later.protocol_errors == []
        later.close()
    finally:
        assert d.stop() == 0 and d.stderr == ""


def test_attach_starts_a_server_and_the_next_bridge_reuses_it(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    script = write_script(isolated_home / "scripts", [[text("ok")]])
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    first = bridge(isolated_home, ws, "--attach", "--idle-exit", "30", env=env)
    pid = first.request("$/ping")["pid"]
    assert pid != first.proc.pid
    second = bridge(isolated_home, ws, "--attach", env=env)
    assert second.request("$/ping")["pid"] == pid
    socket_path = isolated_home / ".kward" / "run" / "kward.sock"
    assert socket_path.is_socket()
    assert first.close() == 0 and first.stderr == ""
    # the server's shutdown through a bridge: the bridge exits 0 (it asked)
    assert second.request("shutdown") == {"ok": True}
    assert second.wait_exit(20) == 0 and second.stderr == ""
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read().split()[2],
               20, "the started server gone")
    second.release()


def test_a_bridge_that_loses_its_server_exits_1_with_one_line(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    d = Daemon(isolated_home, ws)
    ui = bridge(isolated_home, ws, "--connect", f"unix://{d.path}", env=d.env)
    assert ui.request("$/ping")["pong"] is True
    d.proc.kill()
    d.wait_exit(20)
    assert ui.wait_exit(20) == 1
    assert ui.stderr == f"kward rpc: the kward server at {d.path} went away\n"
    ui.release()


def test_connect_without_a_server_is_one_line_and_status_1(isolated_home):
    proc = subprocess.run(kward_command(None, "--connect", f"unix://{isolated_home}/none.sock"), capture_output=True,
                          text=True, env=kward_env(isolated_home), timeout=30)
    assert proc.returncode == 1
    assert proc.stderr == f"kward rpc: no kward server listens on {isolated_home}/none.sock " \
                          f"(start one with kward rpc --listen)\n"


def test_a_killed_bridge_leaves_the_server_running(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    d = Daemon(isolated_home, ws)
    try:
        ui = bridge(isolated_home, ws, "--connect", f"unix://{d.path}", env=d.env)
        ui.request("$/ping")
        os.kill(ui.proc.pid, signal.SIGTERM)  # (how Tauren ends the `kward rpc` it started)
        assert ui.wait_exit(20) == 0
        ui.release()
        again = d.connect()
        assert again.request("$/ping")["pid"] == d.proc.pid
    finally:
        assert d.stop() == 0 and d.stderr == ""


def test_a_part_of_the_rpc_suite_passes_through_attach(tmp_path):
    env = {**os.environ, VIA_ATTACH: "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET,
                           "-k", " and ".join(f"not {name}" for name in STDIO_LIFETIME)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_status_and_doctor_show_a_listening_server(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted")
    none = subprocess.run(kward_command(None, "--status"), capture_output=True, text=True, env=env, timeout=30)
    sock = isolated_home / ".kward" / "run" / "kward.sock"
    assert none.returncode == 1 and none.stderr.startswith(f"kward rpc: no kward server listens on {sock}")
    d = Daemon(isolated_home, ws, path=sock)
    try:
        client = d.connect()
        client.request("$/ping")
        shown = subprocess.run(kward_command(None, "--status"), capture_output=True, text=True, env=env, timeout=30)
        assert shown.returncode == 0
        # (the status probe is a connection of its own while it asks)
        assert shown.stdout in (f"listening on {sock}: pid {d.proc.pid}, 2 connections, 0 active turns\n",)
        doctor = subprocess.run([sys.executable, "-m", "kward", "doctor"], capture_output=True, text=True, env=env,
                                cwd=ws, timeout=60)
        line = next(line for line in doctor.stdout.splitlines() if line.split()[1:2] == ["server"])
        assert line.split(None, 2)[0] == "ok" and f"pid {d.proc.pid}" in line
    finally:
        assert d.stop() == 0 and d.stderr == ""
