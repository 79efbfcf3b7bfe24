"""The real `kward rpc` subprocess: framing faults, JSON-RPC errors, lifecycle, stdio hygiene."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from lib.rpc_client import RpcClient, frame, kward_command, kward_env, modules_after_initialize


@pytest.fixture
def client(isolated_home):
    with RpcClient(isolated_home) as c:
        yield c


def test_handshake_and_shutdown(client):
    r = client.request("initialize", {"clientInfo": {"name": "test", "version": "1"}})
    assert r["protocolVersion"] == 1 and r["serverName"] == "kward" and r["experimental"] is True
    from kward import __version__

    assert r["serverVersion"] == __version__
    client.send("initialized", id=None)
    assert client.request("shutdown") == {"ok": True}
    assert client.wait_exit(5) == 0
    assert client.stderr == "" and client.protocol_errors == []


def test_every_framing_fault_then_a_valid_request(isolated_home):
    env = kward_env(isolated_home, KWARD_MAX_FRAME_BYTES="4096")
    with RpcClient(isolated_home, env=env) as c:
        body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "workspace/info"}).encode()
        faults = [
            (b"Content-Type: application/json\r\n\r\n", "missing_content_length"),
            (b"Content-Length: twelve\r\n\r\n", "invalid_content_length"),
            (b"Content-Length: -4\r\n\r\n", "invalid_content_length"),
            (b"X-Big: " + b"h" * 9000 + b"\r\nContent-Length: 2\r\n\r\n{}", "header_too_long"),
            (b"Content-Length: 100000\r\n\r\n" + b"z" * 100000, "frame_too_large"),
            (b"this line is no header\r\nnor this one\r\n\r\n", "invalid_header"),
            (frame(b'{"jsonrpc": "2.0", "id": 1, "method"'), "parse_error"),
            (frame(b'{"s": "\xc3\x28"}'), "invalid_utf8"),
        ]
        for i, (bad, reason) in enumerate(faults):
            c.write(bad)
            c.write(frame(dict(json.loads(body), id=i)))
            assert c.response(i)["result"]["root"], reason
            assert c.null_id_errors[-1]["error"]["data"]["reason"] == reason
        assert [e["error"]["data"]["reason"] for e in c.null_id_errors] == [r for _, r in faults]
        assert all(e["error"]["code"] in (-32700, -32600) for e in c.null_id_errors)
        assert c.close() == 0 and c.stderr == ""


def test_default_max_frame_body_is_skipped_without_buffering(client):
    size = 64 * 1024 * 1024 + 10
    client.write(b"Content-Length: %d\r\n\r\n" % size)
    chunk = b"a" * (1 << 20)
    for _ in range(64):
        client.write(chunk)
    client.write(b"a" * 10)
    assert client.request("workspace/info")["writable"] is True
    assert client.null_id_errors[0]["error"]["data"]["reason"] == "frame_too_large"
    with open(f"/proc/{client.proc.pid}/status") as f:
        rss_kb = int(next(line for line in f if line.startswith("VmHWM")).split()[1])
    assert rss_kb < 60 * 1024, f"peak RSS {rss_kb} kB: the body was buffered"


def test_json_rpc_errors(client):
    client.write(frame(b"[]"))
    client.write(frame(b'[{"jsonrpc":"2.0","id":1,"method":"initialize"}]'))
    client.write(frame(b'"hello"'))
    client.request("workspace/info")
    assert [e["error"]["data"]["reason"] for e in client.null_id_errors] == \
        ["batch_not_supported", "batch_not_supported", "invalid_request"]
    assert all(e["error"]["code"] == -32600 for e in client.null_id_errors)
    r = client.response(client.send("x", id=5, jsonrpc="1.0"))
    assert r["id"] == 5 and r["error"]["code"] == -32600
    err = client.error("no/such/method")
    assert err.code == -32601 and "no/such/method" in err.error["message"]
    err = client.error("workspace/info", {"workspaceRoot": 12})
    assert err.code == -32602 and "workspaceRoot" in err.error["message"]
    r = client.response(client.send("workspace/info", [1, 2]))
    assert r["error"]["code"] == -32602 and "params" in r["error"]["message"]
    err = client.error("config/update", {})
    assert err.code == -32602 and "values" in err.error["message"]
    err = client.error("config/update", {"values": "x"})
    assert err.code == -32602 and "values" in err.error["message"]


def test_ids_echoed_and_notifications_never_answered(client):
    for rid in ["abc", 0, 17, 2.5, "é-id"]:
        r = client.response(client.send("workspace/info", id=rid))
        assert r["id"] == rid and r["jsonrpc"] == "2.0" and "result" in r
    client.send("workspace/info", id=None)  # a notification
    client.send("no/such/method", id=None)
    client.send("workspace/info", {"workspaceRoot": 5}, id=None)
    client.request("initialize", {"futureParam": {"x": 1}, "resumeLast": True})  # unknown params ignored
    assert client.close() == 0
    assert client.null_id_errors == [] and client.notifications == []


def test_non_ascii_round_trips(client, isolated_home):
    name = "prøjekt-✓-🙂"
    (isolated_home / name).mkdir()
    r = client.request("workspace/info", {"workspaceRoot": name})
    assert r["basename"] == name
    value = {"note": "ünïcødé ✓ 🙂 \u2028"}
    client.request("config/update", {"values": value})
    assert client.request("config/read")["config"] == value


def test_workspace_methods(client, isolated_home):
    (isolated_home / "proj").mkdir()
    (isolated_home / "file.txt").write_text("x")
    os.symlink(isolated_home / "proj", isolated_home / "link")
    assert client.request("workspace/validate") == {"root": str(isolated_home.resolve())}
    assert client.request("workspace/validate", {"workspaceRoot": "link"}) == {"root": str((isolated_home / "proj").resolve())}
    info = client.request("workspace/info", {"workspaceRoot": str(isolated_home / "proj")})
    assert info == {"root": str((isolated_home / "proj").resolve()), "basename": "proj", "writable": True}
    for bad, reason in [("missing", "workspace_not_found"), ("file.txt", "not_a_directory")]:
        for method in ("workspace/validate", "workspace/info"):
            err = client.error(method, {"workspaceRoot": bad})
            assert err.code == -32602 and err.reason == reason and bad in err.error["message"]


@pytest.mark.slow
def test_config_methods_and_invalid_config(isolated_home):
    cfg = isolated_home / ".kward" / "config.json"
    with RpcClient(isolated_home) as c:
        r = c.request("config/update", {"values": {"openrouter_api_key": "sk-or-v1-abcdefghijkl", "model": "m"}})
        assert r == {"path": str(cfg), "config": {"openrouter_api_key": "[REDACTED]", "model": "m"}}
        assert json.loads(cfg.read_text())["openrouter_api_key"] == "sk-or-v1-abcdefghijkl"
        assert (cfg.stat().st_mode & 0o777) == 0o600 and (cfg.parent.stat().st_mode & 0o777) == 0o700
        assert c.request("config/read")["config"]["openrouter_api_key"] == "[REDACTED]"
        assert c.request("config/read", {"redacted": False})["config"]["openrouter_api_key"] == "sk-or-v1-abcdefghijkl"
        err = c.error("config/update", {"values": {"rpc": {"workers": "lots"}}})
        assert err.code == -32602 and err.reason == "invalid_config" and "rpc" in err.error["message"]
        cfg.write_text("{broken")
        init = c.request("initialize")
        assert init["warnings"][0]["reason"] == "invalid_config" and str(cfg) in init["warnings"][0]["message"]
        err = c.error("config/read")
        assert err.reason == "invalid_config" and str(cfg) in err.error["message"]
        err = c.error("config/update", {"values": {"model": "x"}})
        assert err.reason == "invalid_config"
        assert cfg.read_text() == "{broken"  # never overwritten
        assert c.close() == 0 and c.stderr == ""
    with RpcClient(isolated_home) as c:  # a broken config does not stop start-up
        assert c.request("initialize")["serverName"] == "kward"


def test_tauren_style_exit_eof_then_sigterm(client):
    client.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))  # no params at all
    assert client.response(1)["result"]["protocolVersion"] == 1
    client.close_stdin()
    try:
        client.proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    assert client.wait_exit(5) == 0 and client.stderr == ""


def test_sigterm_exits_cleanly_and_fast(client):
    client.request("initialize")
    t0 = time.monotonic()
    client.proc.send_signal(signal.SIGTERM)
    assert client.wait_exit(5) == 0
    assert time.monotonic() - t0 < 2.0 and client.stderr == ""


def test_eof_mid_body_exits_zero(client):
    client.write(b"Content-Length: 100\r\n\r\n{\"jsonrpc\"")
    client.close_stdin()
    assert client.wait_exit(5) == 0 and client.stderr == ""


def test_pipelined_requests_all_answered_before_exit(isolated_home):
    msgs = b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "workspace/info"}) for i in range(500))
    p = subprocess.run(kward_command(), input=msgs, capture_output=True,
                       env=kward_env(isolated_home), cwd=isolated_home, timeout=30)
    assert p.returncode == 0 and p.stderr == b""
    assert p.stdout.count(b"Content-Length: ") == 500


def test_stdout_holds_frames_only_even_when_handlers_print(isolated_home):
    # The real rpc entry point, with a handler that prints, writes to fd 1 and runs a child
    # process that writes to its inherited stdout.
    code = r'''
import os, subprocess, sys
from kward.rpc import main
from kward.rpc import method_table as registry
table = registry.default_table()
orig = table.handler("workspace/info")
def noisy(call):
    print("hello from print")
    sys.stdout.write("partial")
    os.write(1, b"raw fd write\n")
    subprocess.run(["echo", "child output"])
    return orig(call)
table.register("workspace/info", noisy)
main.run([], methods=table)
'''
    with RpcClient(isolated_home, argv=[sys.executable, "-c", code]) as c:
        assert c.request("workspace/info")["basename"]
        assert c.request("shutdown") == {"ok": True}
        assert c.wait_exit(5) == 0
        assert c.protocol_errors == [] and c.stderr == ""
    log = (isolated_home / ".kward" / "logs" / "kward.log").read_text()
    assert "hello from print" in log


@pytest.mark.slow
def test_log_level_raised_sends_diagnostics_to_stderr(isolated_home):
    env = kward_env(isolated_home, KWARD_LOG_LEVEL="DEBUG")
    with RpcClient(isolated_home, env=env) as c:
        c.request("initialize")
        c.request("shutdown")
        assert c.wait_exit(5) == 0
        assert "stopped in" in c.stderr
    assert (isolated_home / ".kward" / "logs" / "kward.log").stat().st_mode & 0o777 == 0o600


def test_quiet_session_leaves_no_log_file(client, isolated_home):
    client.request("initialize")
    client.request("workspace/info")
    assert client.close() == 0 and client.stderr == ""
    assert not (isolated_home / ".kward").exists()


def test_bad_env_setting_is_a_clear_startup_error(isolated_home):
    p = subprocess.run(kward_command(), input=b"", capture_output=True,
                       env=kward_env(isolated_home, KWARD_RPC_WORKERS="zero"), timeout=30)
    assert p.returncode == 2 and b"KWARD_RPC_WORKERS" in p.stderr and p.stdout == b""


def test_initialize_does_not_import_requests_or_keyring(isolated_home):
    # nothing in the whole process may import them (the warm-up starts only once a session
    # was opened); tests/packaging/test_startup.py checks what is loaded when the initialize
    # response arrives
    modules = modules_after_initialize(isolated_home)
    assert "kward.rpc.server" in modules
    assert not {m for m in modules if m.split(".")[0] in ("requests", "urllib3", "keyring")}
