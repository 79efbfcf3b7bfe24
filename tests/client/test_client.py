"""kward.client over both transports: the same scripted turn gives the same events, typed
errors (also for a result that is not an object), timeouts, a server that dies,
server-to-client requests, callbacks, and the docs/client.md example run as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kward.client import Client, ClientClosed, RpcError
from lib.paths import REPO
from lib.rpc_client import kward_env
from lib.scripts import reasoning, text, tool, write_script



@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    return ws


def scripted_env(home: Path, tmp_path: Path) -> dict[str, str]:
    script = write_script(tmp_path / "scripts", [
        [reasoning("Looking."), text("Reading "), text("notes."), tool("read_file", {"path": "notes.txt"}, id="c1")],
        [text("It says alpha and beta.")],
    ])
    return kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))


def comparable(events: list[dict]) -> list[tuple]:
    """What must agree between transports: order, types and payloads without ids/times."""
    out = []
    for e in events:
        payload = json.loads(json.dumps(e["payload"]))
        if e["type"] == "assistantMessage":
            payload["message"].pop("timestamp", None)
        out.append((e["sequence"], e["type"], json.dumps(payload, sort_keys=True)))
    return out


def run_turn(client: Client, workspace: Path) -> list[dict]:
    client.initialize(name="test")
    session = client.request("sessions/create", {"workspaceRoot": str(workspace)})
    events = list(client.turn(session["id"], "what is in notes?", timeout=30))
    assert events[-1]["type"] == "turnFinished" and events[-1]["payload"]["status"] == "completed"
    assert {e["sessionId"] for e in events} == {session["id"]}
    return events


@pytest.mark.slow
def test_the_same_scripted_turn_gives_the_same_events_over_both_transports(isolated_home, tmp_path, workspace,
                                                                          monkeypatch, capfd):
    env = scripted_env(isolated_home, tmp_path)
    with Client.spawn(env=env, cwd=workspace) as k:
        spawned = run_turn(k, workspace)
    assert k.exit_status == 0
    for key in ("KWARD_PROVIDER", "KWARD_SCRIPT"):
        monkeypatch.setenv(key, env[key])
    capfd.readouterr()
    with Client.in_process(cwd=workspace) as k:
        inproc = run_turn(k, workspace)
    assert k.exit_status == 0
    assert capfd.readouterr().out == ""  # the in-process server never writes the caller's stdout
    assert comparable(spawned) == comparable(inproc)
    types = [e["type"] for e in inproc]
    assert types[:2] == ["turnQueued", "turnStarted"] and "toolResult" in types and "answer" in types


@pytest.mark.parametrize("transport", ["spawn", "in_process"])
def test_errors_are_typed_with_code_and_reason(isolated_home, transport):
    make = Client.spawn if transport == "spawn" else Client.in_process
    with make(env=kward_env(isolated_home)) if transport == "spawn" else make() as k:
        k.initialize()
        with pytest.raises(RpcError) as info:
            k.request("sessions/rename", {"sessionId": "nope", "name": "x"})
        assert info.value.code == -32602 and info.value.reason == "session_not_found"
        assert info.value.message == "Unknown session: nope"
        with pytest.raises(RpcError) as info:
            k.request("no/such/method")
        assert info.value.code == -32601


@pytest.mark.slow
def test_a_request_times_out_and_a_dead_server_is_reported(tmp_path):
    silent = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    with Client.spawn(silent) as k:
        with pytest.raises(TimeoutError):
            k.request("initialize", timeout=0.2)
    assert k.exit_status == 0
    dies = [sys.executable, "-c", "import sys; sys.stdin.buffer.read(1); sys.exit(3)"]
    with Client.spawn(dies) as k:
        with pytest.raises(ClientClosed):
            k.request("initialize", timeout=30)
        with pytest.raises(ClientClosed):
            list(k.turn("s", "hi"))
    assert k.exit_status == 3


FAKE_SERVER = r'''
import json, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
def send(obj):
    body = json.dumps(obj).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body); out.flush()
def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        if line in (b"\r\n", b"\n"):
            break
        length = int(line.split(b":")[1])
    return json.loads(inp.read(length))
msg = read()  # the client's first request: ask the client two things, then answer
send({"jsonrpc": "2.0", "id": "q1", "method": "tool/requestApproval", "params": {"tool": "write"}})
send({"jsonrpc": "2.0", "id": "q2", "method": "unknown/thing"})
replies = [read(), read()]
send({"jsonrpc": "2.0", "method": "note", "params": {"replies": replies}})
send({"jsonrpc": "2.0", "id": msg["id"], "result": {"ok": True}})
read()
'''


def test_server_requests_are_answered_and_callbacks_run_in_order(tmp_path):
    server = tmp_path / "fake.py"
    server.write_text(FAKE_SERVER)
    seen = []
    done = threading.Event()
    with Client.spawn([sys.executable, str(server)]) as k:
        k.on_request("tool/requestApproval", lambda params: {"decision": "accept", "asked": params})
        k.on_notification(lambda m: (seen.append(m), done.set()), method="note")
        assert k.request("initialize") == {"ok": True}
        assert done.wait(10)
    replies = {r["id"]: r for r in seen[0]["params"]["replies"]}
    assert replies["q1"]["result"] == {"decision": "accept", "asked": {"tool": "write"}}
    assert replies["q2"]["error"]["code"] == -32601


@pytest.mark.slow
def test_the_client_md_example_runs_as_written(isolated_home, tmp_path, workspace):
    doc = (REPO / "docs" / "client.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert len(example.strip().splitlines()) <= 25
    program = tmp_path / "tiny_agent.py"
    program.write_text(example)
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted")
    proc = subprocess.run([sys.executable, str(program), "What", "is", "here?"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "[list_directory]" in proc.stdout and "notes.txt" in proc.stdout
    assert proc.stdout.rstrip().endswith("(completed)")


def test_a_result_that_is_not_an_object_is_an_error(tmp_path):
    server = tmp_path / "fake.py"
    frames = FAKE_SERVER.split("msg = read()", 1)[0]  # its send() and read()
    server.write_text(frames + 'for result in (None, [1], {"ok": True}):\n'
                               '    send({"jsonrpc": "2.0", "id": read()["id"], "result": result})\n')
    with Client.spawn([sys.executable, str(server)]) as k:
        for shown in ("None", "[1]"):
            with pytest.raises(RpcError) as info:
                k.request("odd/method")
            assert (info.value.code, info.value.reason) == (-32603, "internal_error")
            assert info.value.message == f"odd/method: the result is not an object: {shown}"
        assert k.request("odd/method") == {"ok": True}
