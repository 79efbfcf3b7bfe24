"""Hostile or broken input never kills `kward rpc`, blocks its dispatcher, or puts anything
but valid frames on stdout."""

import json
import signal
import sys
import time

import pytest

from lib.rpc_client import RpcClient, frame, kward_env, spawn_kward
from lib.scripts import text, write_script


def test_deeply_nested_json_is_a_parse_error(isolated_home):
    with RpcClient(isolated_home) as c:
        c.write(frame(b"[" * 5000 + b"]" * 5000))
        c.write(frame(b'{"jsonrpc":"2.0","id":"deep","method":"x","params":' + b'{"a":' * 3000 + b"1" + b"}" * 3001))
        c.write(frame(b'{"jsonrpc":"2.0","id":' + b"[" * 5000 + b"]" * 5000 + b',"method":"x"}'))
        assert c.request("workspace/info")["writable"] is True
        assert c.response("deep")["error"]["code"] == -32602  # answered to its own id
        assert [e["error"]["code"] for e in c.null_id_errors] == [-32700, -32600]
        assert c.close() == 0 and c.stderr == ""


def test_nan_and_infinity_are_refused_and_never_written(isolated_home):
    with RpcClient(isolated_home) as c:
        c.write(frame(b'{"jsonrpc":"2.0","id":NaN,"method":"workspace/info"}'))
        c.write(frame(b'{"jsonrpc":"2.0","id":7,"method":"config/update","params":{"values":{"x":Infinity}}}'))
        assert c.request("workspace/info")["writable"] is True
        assert [e["error"]["data"]["reason"] for e in c.null_id_errors] == ["parse_error", "parse_error"]
        assert not (isolated_home / ".kward" / "config.json").exists()
        assert c.close() == 0 and c.protocol_errors == []


def test_unpaired_surrogates_are_invalid_params(isolated_home):
    with RpcClient(isolated_home) as c:
        for method in ("workspace/validate", "sessions/create", "sessions/resume"):
            key = "path" if method == "sessions/resume" else "workspaceRoot"
            c.write(frame(('{"jsonrpc":"2.0","id":"%s","method":"%s","params":{"%s":"bad\\ud800"}}'
                           % (method, method, key)).encode()))
            err = c.response(method)["error"]
            assert err["code"] == -32602 and key in err["message"], err
        assert c.close() == 0 and c.stderr == ""


def test_a_hand_edited_config_with_bad_settings_is_reported_not_fatal(isolated_home):
    cfg = isolated_home / ".kward"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps({"rpc": {"workers": "8"}, "log_level": "verbose"}))
    with RpcClient(isolated_home) as c:
        init = c.request("initialize")
        messages = " ".join(w["message"] for w in init["warnings"])
        assert "rpc" in messages and "log_level" in messages
        assert {w["reason"] for w in init["warnings"]} == {"invalid_config"}
        assert c.request("sessions/list")["sessions"] == []  # a slow method: the pool works
        assert c.close() == 0 and c.stderr == ""


def test_an_unusable_log_directory_never_kills_the_server(isolated_home):
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "logs").write_text("a file where the log directory should be")
    code = r'''
from kward.rpc import main
from kward.rpc import method_table as registry
def boom(call):
    raise RuntimeError("a bug that gets logged")
table = registry.default_table()
table.register("workspace/info", boom)
main.run([], methods=table)
'''
    with RpcClient(isolated_home, argv=[sys.executable, "-c", code]) as c:
        for _ in range(3):
            assert c.error("workspace/info").code == -32603
        assert c.request("workspace/validate")["root"]
        assert c.close() == 0 and c.stderr == "" and c.protocol_errors == []


@pytest.mark.slow
def test_a_client_that_stops_reading_cannot_block_cancel_or_exit(isolated_home):
    """The outbox fills while nobody reads; turns/cancel and turns/events are still taken
    by the dispatcher at once, and SIGTERM still ends the process within about 2 s."""
    ws = isolated_home / "ws"
    ws.mkdir()
    script = write_script(isolated_home, [[text("y" * 200, repeat=400_000)]])
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    proc = spawn_kward(isolated_home, cwd=ws, env=env)

    def send(i, method, params):
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": i, "method": method, "params": params}))
        proc.stdin.flush()

    def read_response(i):
        while True:
            n = int(proc.stdout.readline().split(b":")[1])
            proc.stdout.readline()
            msg = json.loads(proc.stdout.read(n))
            if msg.get("id") == i:
                return msg

    try:
        send(1, "sessions/create", {"name": "s"})
        sid = read_response(1)["result"]["id"]
        send(2, "turns/start", {"sessionId": sid, "input": "flood"})
        turn_id = read_response(2)["result"]["id"]
        # stop reading; wait until the server is stuck on the full pipe (no CPU used)
        ticks = lambda: sum(map(int, open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()[11:13]))
        deadline = time.monotonic() + 30
        while True:
            before = ticks()
            time.sleep(0.3)
            if ticks() - before <= 1 or time.monotonic() > deadline:
                break
        send(3, "turns/cancel", {"turnId": turn_id})
        send(4, "turns/events", {"turnId": turn_id, "afterSequence": 0})
        send(5, "turns/status", {"turnId": turn_id})
        time.sleep(0.5)  # give the dispatcher time to (not) get stuck; then ask it to stop
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        assert time.monotonic() - t0 < 3.0
        assert proc.returncode == 0
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
