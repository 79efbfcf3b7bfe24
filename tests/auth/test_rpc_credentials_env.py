"""kward's credential variables out of reach of the processes its tools start, over the
real `kward rpc`: neither its /proc/<pid>/environ nor a child's environment holds them (not
even in a form the output scrub does not know, such as base64), and they still authorise
the provider requests."""

from __future__ import annotations

import base64
import json
import re

import pytest

from lib import fake_openrouter as fo
from lib.fake_codex import make_jwt
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.turn_events import finished

TOKEN = make_jwt("acct_env_hidden")
KEY = "sk-or-v1-HIDDENKEY0123456789abcdef01"
EXTRA = "plain-extra-secret-31415926"  # a KWARD_*_TOKEN variable: a credential by its name
VALUES = {"OPENAI_ACCESS_TOKEN": TOKEN, "OPENROUTER_API_KEY": KEY, "KWARD_EXTRA_TOKEN": EXTRA}

# The shell's parent is kward; the walk up also covers a shell started through another one.
READ_PARENT = ("pid=$PPID; while [ \"$pid\" -gt 1 ]; do "
               "if tr '\\0' '\\n' < /proc/$pid/cmdline | grep -qx rpc; then break; fi; "
               "pid=$(awk '{print $4}' /proc/$pid/stat); done; "
               "echo \"kward=$pid\"; tr '\\0' '\\n' < /proc/$pid/environ")


def _call(command: str, call_id: str):
    return fo.tool_call("run_shell_command", json.dumps({"command": command}), call_id=call_id)


def _encodings(value: str) -> list[str]:
    raw = value.encode()
    forms = [value]
    for shift in range(3):  # base64 of the value at every alignment inside a longer text
        encoded = base64.b64encode(b"x" * shift + raw).decode()
        forms.append(encoded[4 if shift else 0:-4])
    return forms


@pytest.mark.slow
def test_tools_cannot_read_kwards_credentials_and_they_still_work(isolated_home):
    with FakeOpenRouter() as router:
        router.script("chat",
                      _call(READ_PARENT, "parent"),
                      _call("env", "env"),
                      _call("cat /proc/$PPID/environ | base64 -w0", "b64"),
                      fo.text(["done"]))
        client = start_kward(isolated_home, KWARD_PROVIDER="openrouter", KWARD_OPENROUTER_BASE_URL=router.base_url,
                             **VALUES)
        with client:
            sid = create_session(client, isolated_home)["id"]
            events = run_turn(client, sid, "look around")
            assert finished(events)["status"] == "completed"
            pid = client.proc.pid
        results = {e["payload"]["toolCallId"]: e["payload"]["content"] for e in events if e["type"] == "toolResult"}
        chats = router.requests("chat")

    assert f"kward={pid}" in results["parent"]  # the walk found kward's own environ
    parent = results["parent"].splitlines()
    assert "KWARD_PROVIDER=openrouter" in parent  # the rest of its environment is still there
    environment = results["env"].splitlines()
    assert "KWARD_PROVIDER=openrouter" in environment
    encoded = max(re.findall(r"[A-Za-z0-9+/=]+", results["b64"]), key=len)
    decoded = base64.b64decode(encoded).decode("utf-8", "replace")
    assert "KWARD_PROVIDER=openrouter" in decoded
    for output in (results["parent"], results["env"], results["b64"], decoded):
        for name, value in VALUES.items():
            assert not any(line.startswith(name + "=") for line in output.split("\n")), name
            for form in _encodings(value):
                assert form not in output, (name, form[:12])
    # the key from the environment still authorised every model request
    assert len(chats) == 4 and {r.bearer for r in chats} == {KEY}


def test_a_credentials_fd_naming_stdin_leaves_the_client_input_alone(isolated_home):
    from lib.rpc_client import RpcClient, kward_env

    with RpcClient(isolated_home, env=kward_env(isolated_home, KWARD_CREDENTIALS_FD="0")) as client:
        assert client.request("initialize")["serverName"] == "kward"
        assert client.request("config/read")["config"] == {}
        client.close_stdin()
        assert client.wait_exit(5) == 0 and client.stderr == ""
