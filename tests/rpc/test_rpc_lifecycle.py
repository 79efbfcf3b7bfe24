"""Process lifecycle with work in flight: SIGTERM, EOF and shutdown during a running turn."""

import json
import signal
import time

import pytest

from lib.processes import pid_alive
from lib.rpc_client import RpcClient, kward_env
from lib.scripts import tool, write_script


@pytest.fixture
def sleeper(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    script = write_script(isolated_home, [[tool("run_shell_command", command="echo $$ > pid.txt; exec sleep 100",
                                                timeout_seconds=200)]], loop=True)
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    c = RpcClient(isolated_home, cwd=ws, env=env)
    c.request("initialize")
    session = c.request("sessions/create", {"name": "busy"})
    turn = c.request("turns/start", {"sessionId": session["id"], "input": "sleep"})
    c.wait(lambda: (ws / "pid.txt").exists() and (ws / "pid.txt").read_text().strip(), what="the shell child", poll=0.01)
    pid = int((ws / "pid.txt").read_text())
    assert pid_alive(pid)
    yield c, pid, turn, session
    c.__exit__(None, None, None)


@pytest.mark.parametrize("how", ["sigterm", "eof", "shutdown"])
@pytest.mark.slow
def test_stop_with_a_running_shell_command(sleeper, how):
    c, pid, turn, session = sleeper
    t0 = time.monotonic()
    if how == "sigterm":
        c.proc.send_signal(signal.SIGTERM)
    elif how == "eof":
        c.close_stdin()
    else:
        assert c.request("shutdown") == {"ok": True}
    assert c.wait_exit(5) == 0
    assert time.monotonic() - t0 < 2.5
    assert not pid_alive(pid), "the shell child outlived kward"
    assert c.stderr == "" and c.protocol_errors == []
    finished = [n["params"] for n in c.notifications if n["method"] == "turn/event"
                and n["params"]["turnId"] == turn["id"] and n["params"]["type"] == "turnFinished"]
    assert [f["payload"]["status"] for f in finished] == ["canceled"]
    lines = open(session["path"]).read().splitlines()
    assert all(json.loads(line) for line in lines)  # the file is whole
