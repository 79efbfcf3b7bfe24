"""Start-up mechanics: what `kward rpc` imports to answer `initialize` (the services stay
lazy), logging configured once, and the warm-up that imports the rest once the client is
idle (kward/rpc/warmup.py)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading

from lib.inprocess import InProcessServer
from lib.rpc_client import RpcClient, imported_modules, kward_command, kward_env

from kward.rpc.compose import build_server
from kward.rpc.warmup import WarmUp


# What `initialize` may not need: the services, made when first used (DESIGN.md item 12).
NOT_BEFORE_INITIALIZE = {"requests", "urllib3", "keyring", "kward.agent", "kward.sessions", "kward.providers.http",
                         "kward.providers.base", "kward.tools", "kward.telemetry", "kward.memory", "kward.resources",
                         "kward.compaction", "kward.auth", "kward.rpc.warmup"}

# The standard library modules `kward rpc` may have loaded when it writes the response to
# `initialize` (under `python3 -S`, as found with Python 3.11; another version may load a
# module of its own start-up: add it then, but never one kward's code brings in). Private
# modules (a part starting with `_`: C parts, a package's internals) are not compared. A
# module more fails: dataclasses alone pulls in inspect, ast, dis, opcode and copy (some
# 20 ms for every `kward rpc` a UI starts); import such a module after `initialize`, or lazily.
STDLIB_BEFORE_INITIALIZE = frozenset("""
    abc atexit builtins codecs collections collections.abc contextlib copyreg encodings encodings.aliases
    encodings.utf_8 enum errno fcntl fnmatch functools gc genericpath heapq importlib importlib.machinery io
    ipaddress itertools json json.decoder json.encoder json.scanner keyword linecache logging marshal ntpath
    operator os os.path pathlib posix posixpath queue re reprlib select signal stat string sys textwrap
    threading time token tokenize traceback types typing typing.io typing.re urllib urllib.parse warnings weakref zipimport
""".split())
HEAVY = {"dataclasses", "inspect", "ast", "dis", "opcode", "copy"}


def stdlib_loaded(modules: set[str]) -> set[str]:
    """The public standard library modules among `modules` (not kward, not `__main__`)."""
    return {m for m in modules if m.split(".")[0] != "kward" and m != "__main__"
            and not any(part.startswith("_") for part in m.split("."))}


# Runs the real entry point (`kward rpc`, as the console script does) over pipes on fds 0
# and 1; a thread plays the client and prints the modules loaded when the response to
# `initialize` has arrived (as a Python literal: this script imports nothing that it checks).
SNAPSHOT = r'''
import os, sys, _thread
r0, w0 = os.pipe(); r1, w1 = os.pipe()
os.dup2(r0, 0); os.dup2(w1, 1)
def client():
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}'
    os.write(w0, b"Content-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while b"\r\n\r\n" not in data:
        data += os.read(r1, 65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(head.split(b":")[1])
    while len(rest) < length:
        rest += os.read(r1, 65536)
    modules = sorted(sys.modules)
    os.write(2, repr({"response": rest[:length], "modules": modules}).encode() + b"\n")
    os.close(w0)
_thread.start_new_thread(client, ())
sys.argv = ["kward", "rpc"]
from kward.cli import main
main(["rpc"])  # (with an argv, main returns instead of ending the process)
os.write(2, repr({"exit": sorted(sys.modules)}).encode() + b"\n")
'''


def test_initialize_is_answered_without_the_services(isolated_home):
    env = kward_env(isolated_home, KWARD_NO_WARMUP="1")  # nothing may import in the background
    # -S: no site-packages, whose .pth hooks (an editable install's finder) import typing and pathlib
    proc = subprocess.run([sys.executable, "-S", "-c", SNAPSHOT], capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = ast.literal_eval(proc.stderr.decode().splitlines()[-2])
    assert json.loads(found["response"])["result"]["serverName"] == "kward"
    modules = set(found["modules"])
    assert {"kward.rpc.server", "kward.rpc.methods.lifecycle", "kward.config.settings"} <= modules
    loaded = {m for m in modules if m in NOT_BEFORE_INITIALIZE or m.split(".")[0] in NOT_BEFORE_INITIALIZE
              or any(m.startswith(p + ".") for p in NOT_BEFORE_INITIALIZE)}
    assert loaded == set()
    stdlib = stdlib_loaded(modules)
    assert stdlib & HEAVY == set()
    assert stdlib - STDLIB_BEFORE_INITIALIZE == set()



def test_initialize_masks_secret_looking_values_in_what_it_takes_from_outside_kward(isolated_home):
    # the strings that do not come from kward's code, the config dir's path in the logs
    # directory and in the warning of an unreadable config.json, are masked
    planted = "sk-planted0123456789abcdef"
    config = isolated_home / planted / "config.json"
    config.parent.mkdir()
    config.write_text("{broken")
    with RpcClient(isolated_home, env=kward_env(isolated_home, KWARD_CONFIG_PATH=str(config))) as k:
        result = k.request("initialize")
    from kward.redact import redact

    assert planted not in json.dumps(result)
    assert "[REDACTED]" in result["capabilities"]["logging"]["directory"]
    assert [w["reason"] for w in result["warnings"]] == ["invalid_config"] and "[REDACTED]" in result["warnings"][0]["message"]
    assert redact(result) == result  # what the full redaction would have sent


def test_the_full_redaction_leaves_the_constants_of_initialize_as_they_are():
    from kward.redact import redact
    from kward.rpc import capabilities
    from kward.rpc import method_table as registry
    from kward.rpc.methods.lifecycle import _result

    facts = capabilities.RuntimeFacts(steering="native", tokens_stats=True, cost_stats=True, max_input_chars=5,
                                      logging_categories=("tokens", "performance", "tools", "errors"))
    for table in (registry.METHODS, {}):
        result = _result(facts, [{"reason": "invalid_config", "message": "config.json: ignoring x"}], table, "/cfg")
        assert redact(result) == result

# --- logging ------------------------------------------------------------------------

LOGGING = r'''
import logging, os, sys, warnings
from kward import diagnostics
logs = sys.argv[1]
diagnostics.configure(logs, None, rpc_mode=True)
log = logging.getLogger("kward.test")
log.info("dropped")  # below the level
assert not os.path.exists(logs)  # nothing logged yet: no file
warnings.warn("a warning, captured")
logging.getLogger("kward.other").warning("Bearer abcdefghijkl")
log.error("an error")
'''


def test_logging_goes_redacted_to_a_private_file_and_never_to_stderr_in_rpc_mode(tmp_path):
    logs = tmp_path / "logs"
    proc = subprocess.run([sys.executable, "-c", LOGGING, str(logs)], capture_output=True, text=True, timeout=60,
                          env=kward_env(tmp_path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # rpc mode: nothing on stderr
    text = (logs / "kward.log").read_text()
    assert "a warning, captured" in text and "an error" in text
    assert "Bearer [REDACTED]" in text and "abcdefghijkl" not in text and "dropped" not in text
    assert (logs / "kward.log").stat().st_mode & 0o777 == 0o600


# --- the warm-up ----------------------------------------------------------------------

def test_warm_up_steps_run_in_order_past_failures_pause_and_stop_between_steps():
    ran, gate, inside = [], threading.Event(), threading.Event()

    def blocking():
        inside.set()
        gate.wait(10)
        ran.append("blocking")

    warm = WarmUp(lambda: [lambda: ran.append(1), lambda: 1 / 0, lambda: ran.append(2), blocking,
                           lambda: ran.append(3), lambda: ran.append("after stop")])
    assert warm.waiting and warm.join(0)
    warm.start()
    assert not warm.waiting and inside.wait(10)
    warm.pause()  # the step running ends; the next waits
    assert warm.waiting
    gate.set()
    assert not warm.join(0.05) and ran == [1, 2, "blocking"]  # (paused: the thread waits, nothing runs)
    warm.stop()
    assert warm.join(10) and ran == [1, 2, "blocking"] and not warm.waiting
    stopped = WarmUp(lambda: [lambda: ran.append("never")])
    stopped.stop()
    stopped.start()
    assert not stopped.waiting and stopped.join(0) and "never" not in ran


def test_a_paused_warm_up_resumes_where_it_stopped():
    ran, inside, gate = [], threading.Event(), threading.Event()
    warm = WarmUp(lambda: [lambda: (inside.set(), gate.wait(10)), lambda: ran.append("next")])
    warm.start()
    assert inside.wait(10)
    warm.pause()
    gate.set()
    warm.start()  # resume
    assert warm.join(10) and ran == ["next"] and not warm.waiting


def test_kward_no_warmup_turns_the_warm_up_off(tmp_path):
    def warm_up(env):
        r, w = os.pipe()
        with open(r, "rb") as stdin, open(w, "wb") as stdout:  # never served: the streams close here
            server = build_server(stdin, stdout, env=env, launch_cwd=tmp_path)
            assert server.warm_up is None  # made once the client, given a session, is idle
            return server.make_warm_up and server.make_warm_up()

    assert isinstance(warm_up({"HOME": str(tmp_path)}), WarmUp)
    assert warm_up({"HOME": str(tmp_path), "KWARD_NO_WARMUP": "1"}) is None


def test_the_warm_up_starts_once_the_client_was_given_a_session(isolated_home):
    seen, started = [], threading.Event()
    s = InProcessServer(isolated_home)

    def first_step():
        seen.append(s.server.conn.opt_out)  # what initialize stored
        started.set()

    s.server.warm_up = WarmUp(lambda: [first_step])
    s.request("initialize", {"capabilities": {"optOutNotificationMethods": ["turn/event"]}})
    assert s.request("sessions/list")["sessions"] == [] and s.request("workspace/info")["root"]
    assert s.server.warm_up.waiting and not started.is_set()  # a list refresh: no warm-up
    s.request("sessions/create")
    assert started.wait(10) and seen == [frozenset({"turn/event"})]
    s.close_input()
    assert s.join(10) and s.exit_code == 0 and s.server.warm_up.join(0)


def test_a_list_refresh_process_never_warms_up(isolated_home):
    with RpcClient(isolated_home, argv=kward_command(python_flags=("-X", "importtime"))) as k:
        k.request("initialize")
        assert k.request("sessions/list", {"limit": 5})["sessions"] == []
        k.request("workspace/info")  # (the client idles between requests: nothing starts)
        assert k.close() == 0
    imported = imported_modules(k.stderr)
    assert {"kward.rpc.server", "kward.sessions.listing"} <= imported  # (import_module is not shown)
    assert not imported & {"requests", "kward.agent.engine", "kward.rpc.warmup", "keyring"}


def test_an_idle_kward_rpc_imports_the_http_stack_and_still_serves(isolated_home):
    env = kward_env(isolated_home, KWARD_PROVIDER="openrouter", KWARD_OPENROUTER_BASE_URL="http://127.0.0.1:9/v1")
    with RpcClient(isolated_home, env=env, argv=kward_command(python_flags=("-X", "importtime"))) as k:
        k.request("initialize")
        k.request("sessions/create")
        k.wait(lambda: {"requests", "kward.agent.engine", "kward.providers.openrouter"} <= imported_modules(k.stderr),
               timeout=60, what="the warm-up importing requests, the agent and the provider", poll=0.05)
        assert len(k.request("sessions/list", {"limit": 5})["sessions"]) <= 1
        assert k.close() == 0
    assert not [line for line in k.stderr.splitlines() if not line.startswith("import time:")]
