"""The shell sandbox over the real `kward rpc` (Scripted provider, real bwrap): with
`security.sandbox: "workspace-write"` in config.json the `security.sandbox` capability says
it is in force, a command writes inside the workspace but not outside, cannot see the
config directory, and with `sandboxNetwork: false` has no network; without bwrap on the
PATH the capability says why and the command is refused with that reason (the turn goes on);
config/update refuses a bad value and changes nothing."""

import json
import socket

import pytest

from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events
from lib.sandbox_helpers import root, usable  # noqa: F401 (fixtures)


def _config(home, **security):
    conf = home / ".kward"
    conf.mkdir(exist_ok=True, mode=0o700)
    (conf / "config.json").write_text(json.dumps({"security": security}))
    (conf / "config.json").chmod(0o600)
    return conf


def _turn(kward, commands, env=None):
    k = kward([[tool("run_shell_command", {"command": c}, id=f"c{i}") for i, c in enumerate(commands)],
               [text("done")]], env=env)
    caps = k.request("initialize")["capabilities"]["security"]
    s = k.create(workspaceRoot=str(k.ws))
    _, events = k.run(s["id"], timeout=30)
    check_turn_events(events, "completed")
    return k, caps, {e["payload"]["toolCallId"]: e["payload"]["result"] for e in events if e["type"] == "toolResult"}


@pytest.mark.usefixtures("usable")
def test_commands_run_sandboxed(kward, isolated_home, root):
    conf = _config(isolated_home, sandbox="workspace-write", sandboxNetwork=False)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        k, caps, r = _turn(kward, [
            f"echo in > inside.txt; echo out > {root}/outside.txt",
            f"cat {conf}/config.json; ls -A {conf} | wc -l",
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\"",
        ])
    finally:
        srv.close()
    assert caps["sandbox"] == {"mode": "workspace-write", "available": True, "inForce": True, "network": False}
    assert (k.ws / "inside.txt").exists() and not (root / "outside.txt").exists()
    assert "Read-only file system" in r["c0"]["content"] and r["c0"]["changedFiles"] == ["inside.txt"]
    assert "No such file" in r["c1"]["content"] and "security" not in r["c1"]["content"]
    assert r["c2"]["content"].startswith("Exit status: 1")  # no network: not even the host's loopback


def test_refused_without_bwrap(kward, isolated_home, tmp_path):
    _config(isolated_home, sandbox="workspace-write")
    k, caps, r = _turn(kward, ["echo ran > ran.txt"], env={"PATH": str(tmp_path)})
    reason = "bwrap (bubblewrap) is not installed (not found on PATH)"
    assert caps["sandbox"] == {"mode": "workspace-write", "available": False, "inForce": False, "network": True,
                               "reason": f"commands are refused: {reason}"}
    assert r["c0"]["isError"] is True and r["c0"]["content"] == (
        f"Error: sandbox workspace-write is configured but unavailable, command not run: {reason}")
    assert not (k.ws / "ran.txt").exists()


def test_a_bad_value_in_config_json_refuses_commands(kward, isolated_home):
    _config(isolated_home, sandbox="on")
    k = kward([[tool("run_shell_command", {"command": "echo ran > ran.txt"}, id="c0")], [text("done")]])
    init = k.request("initialize")
    problem = "Invalid config value for security.sandbox: must be one of off, workspace-write, not 'on'"
    assert {"reason": "invalid_config", "message": problem} in init["warnings"]
    assert init["capabilities"]["security"]["sandbox"]["mode"] == "invalid"
    assert init["capabilities"]["security"]["sandbox"]["inForce"] is False
    s = k.create(workspaceRoot=str(k.ws))
    _, events = k.run(s["id"], timeout=30)
    check_turn_events(events, "completed")
    result = next(e["payload"]["result"] for e in events if e["type"] == "toolResult")
    assert result["isError"] is True and result["content"] == (
        f"Error: security.sandbox is configured but unavailable, command not run: {problem}")
    assert not (k.ws / "ran.txt").exists()


def test_off_by_default_and_a_bad_value_is_refused(kward, isolated_home):
    k = kward([[text("ok")]])
    sandbox = k.request("initialize")["capabilities"]["security"]["sandbox"]
    assert sandbox["mode"] == "off" and sandbox["inForce"] is False and sandbox["available"] is None  # not probed
    error = k.error("config/update", {"values": {"security": {"sandbox": "on"}}})
    assert error.code == -32602 and "sandbox must be one of off, workspace-write" in error.message
    assert k.request("config/read")["config"].get("security") is None
    k.request("config/update", {"values": {"security": {"sandbox": "workspace-write", "sandboxNetwork": False}}})
    note = k.wait_notification(lambda n: n.get("method") == "runtime/capabilitiesChanged")
    changed = note["params"]["capabilities"]["security"]["sandbox"]
    assert (changed["mode"], changed["network"]) == ("workspace-write", False)
    assert changed["inForce"] is changed["available"]  # (in force wherever bwrap works)
