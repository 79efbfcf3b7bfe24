"""Start-up mechanics: what `kward rpc` imports to answer `initialize`, the pieces that keep
it small (Record, text paths, deferred logging configuration), and the warm-up that
imports the rest once the client is idle (kward/rpc/warmup.py)."""

from __future__ import annotations

import ast
import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import pytest

from kward.config import path_text, resolve_paths
from kward.records import Record
from kward.rpc.compose import build_server
from kward.rpc.warmup import WarmUp
from lib.inprocess import InProcessServer
from lib.rpc_client import RpcClient, kward_command, kward_env

REPO = Path(__file__).resolve().parents[1]

# What `initialize` may not need (requests and keyring: DESIGN.md; the rest: issue 12).
NOT_BEFORE_INITIALIZE = {"requests", "urllib3", "keyring", "typing", "dataclasses", "inspect", "logging",
                         "traceback", "pathlib", "urllib.parse", "ipaddress", "subprocess", "ctypes", "kward.agent",
                         "kward.sessions", "kward.providers.http", "kward.tools",
                         "signal", "contextlib",  # (kward uses the C module _signal there; fsutil, no contextlib)
                         "importlib", "queue", "heapq",  # (__import__ for the handlers; _queue.SimpleQueue)
                         "kward.telemetry", "kward.confined",
                         "json", "re", "enum",  # (kward.jsoncodec: the C accelerator _json, driven directly)
                         "warnings",  # (diagnostics hooks it when it is first imported)
                         "kward.rpc.warmup"}  # (made when the client is first idle)
# What the way out of `kward rpc` (procs.end_descendants) may not need.
NOT_AT_EXIT = {"kward.confined", "dataclasses", "inspect", "typing", "subprocess", "ctypes"}

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


def test_initialize_is_answered_without_typing_logging_pathlib_dataclasses_or_requests(isolated_home):
    env = kward_env(isolated_home, KWARD_NO_WARMUP="1")  # nothing may import in the background
    # -S: no site-packages, whose .pth hooks (an editable install's finder) import typing and pathlib
    proc = subprocess.run([sys.executable, "-S", "-c", SNAPSHOT], capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = ast.literal_eval(proc.stderr.decode().splitlines()[-2])
    assert json.loads(found["response"])["result"]["serverName"] == "kward"
    modules = set(found["modules"])
    assert {"kward.rpc.server", "kward.rpc.methods.lifecycle", "kward.settings"} <= modules
    loaded = {m for m in modules if m in NOT_BEFORE_INITIALIZE or m.split(".")[0] in NOT_BEFORE_INITIALIZE
              or any(m.startswith(p + ".") for p in NOT_BEFORE_INITIALIZE)}
    assert loaded == set()
    at_exit = set(ast.literal_eval(proc.stderr.decode().splitlines()[-1])["exit"])
    assert {"kward.procs", "kward.proctable"} <= at_exit and at_exit & NOT_AT_EXIT == set()



def test_initialize_masks_secret_looking_values_in_what_it_takes_from_outside_kward(isolated_home):
    # initialize's result is not walked by the full redaction (kward.rpc.redaction.SHAPED):
    # the handler masks the strings that do not come from kward's code, the config dir's path
    # in the logs directory and in the warning of an unreadable config.json
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


def test_the_constants_of_initialize_are_what_the_full_redaction_would_send():
    from kward.redact import redact
    from kward.rpc import capabilities, registry
    from kward.rpc.methods.lifecycle import _result

    facts = capabilities.RuntimeFacts(steering="native", tokens_stats=True, cost_stats=True, max_input_chars=5,
                                      logging_categories=("tokens", "performance", "tools", "errors"))
    for table in (registry.METHODS, {}):
        result = _result(facts, [{"reason": "invalid_config", "message": "config.json: ignoring x"}], table)
        assert redact(result) == result

# --- Record ---------------------------------------------------------------------------

class TypedPoint(NamedTuple):
    """A point."""

    x: int
    y: int = 2
    tags: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return self.x + self.y

    def moved(self, dx: int) -> "TypedPoint":
        return self._replace(x=self.x + dx)


class Point(Record):
    """A point."""

    x: int
    y: int = 2
    tags: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return self.x + self.y

    def moved(self, dx: int) -> "Point":
        return self._replace(x=self.x + dx)


def test_a_record_is_what_typing_namedtuple_would_build():
    p, t = Point(1), TypedPoint(1)
    assert isinstance(p, tuple) and Point.__bases__ == (tuple,)
    assert (p._fields, p._field_defaults, tuple(p)) == (t._fields, t._field_defaults, tuple(t)) == (
        ("x", "y", "tags"), {"y": 2, "tags": ()}, (1, 2, ()))
    assert repr(Point(3, y=4)) == "Point(x=3, y=4, tags=())" and Point.__doc__ == "A point."
    assert p.total == 3 and p.moved(5) == Point(6) and p.moved(5).total == 8
    assert Point.__module__ == __name__ and Point.__qualname__ == "Point"
    assert list(Point.__annotations__) == ["x", "y", "tags"]
    assert pickle.loads(pickle.dumps(Point(7, 8))) == Point(7, 8)
    assert Point._make([1, 2, ()]) == t._make([1, 2, ()]) and p._asdict() == t._asdict() == {"x": 1, "y": 2, "tags": ()}
    assert Point.__match_args__ == TypedPoint.__match_args__ and Point(1, 2) == (1, 2, ()) and hash(p) == hash(t)
    assert Point.x.__doc__ == TypedPoint.x.__doc__ == "Alias for field number 0"
    assert Point.__new__.__doc__ == "Create new instance of Point(x, y, tags)"
    assert Point.__new__.__defaults__ == TypedPoint.__new__.__defaults__ == (2, ())
    match Point(4, 5):
        case Point(a, b):
            assert (a, b) == (4, 5)

    def error(make, cls):
        try:
            make(cls)
        except (TypeError, ValueError) as exc:
            return type(exc), str(exc).replace(cls.__name__, "P")
        return None

    for make in (lambda cls: cls(1, z=2), lambda cls: cls(1, 2, (), 4), lambda cls: cls(y=1),
                 lambda cls: cls._make([1]), lambda cls: cls(1)._replace(z=1)):
        assert error(make, Point) == error(make, TypedPoint) is not None
    with pytest.raises(AttributeError):
        p.x = 5
    with pytest.raises(TypeError):
        Point()


def test_a_record_refuses_what_typing_namedtuple_refuses():
    with pytest.raises(TypeError):
        class Gap(Record):  # noqa: F841
            a: int = 1
            b: int
    with pytest.raises(AttributeError):
        class Own(Record):  # noqa: F841
            a: int

            def _asdict(self):
                return {}


# --- paths as text --------------------------------------------------------------------

@pytest.mark.parametrize("text", ["/a//b/", "//srv/x", "///x", "/x/./y/.", "rel/../x", "", ".", "./x", "/"])
def test_path_text_prints_a_path_as_pathlib_does(text):
    assert path_text(text) == str(PurePosixPath(text))


def test_paths_are_text_with_pathlib_paths_beside_them(tmp_path):
    odd_home = str(tmp_path) + "//h/./"
    p = resolve_paths({"HOME": odd_home})
    assert p.config_dir == Path(odd_home) / ".kward" and p.config_dir_text == str(p.config_dir)
    assert (p.config_file_text, p.auth_file_text) == (str(p.config_file), str(p.auth_file))
    assert p.logs_dir_text == str(p.logs_dir) == str(Path(odd_home) / ".kward" / "logs")
    assert isinstance(p.sessions_dir, Path) and p.config_dir is p.config_dir  # made once
    custom = resolve_paths({"HOME": "/nowhere", "KWARD_CONFIG_PATH": str(tmp_path) + "/c//my.json",
                            "KWARD_AUTH_PATH": str(tmp_path / "a.json")})
    assert custom.config_dir_text == str(tmp_path / "c") and custom.auth_file == tmp_path / "a.json"


# --- logging configured when first imported ------------------------------------------

LOGGING = r'''
import os, sys
from kward import diagnostics
logs = sys.argv[1]
diagnostics.configure(logs, None, rpc_mode=True)
log = diagnostics.get_logger("kward.test")
log.info("dropped")  # below the level: logging is not imported for it
assert "logging" not in sys.modules and not os.path.exists(logs)
import warnings
warnings.warn("a warning before logging was imported")
assert "logging" in sys.modules
import logging
logging.getLogger("kward.other").warning("plain logger, Bearer abcdefghijkl")
log.error("lazy logger")
'''


@pytest.mark.parametrize("warnings_first", [False, True])  # warnings imported after configure (hooked then), before
def test_logging_is_configured_by_whoever_imports_it_first(tmp_path, warnings_first):
    logs = tmp_path / "logs"
    script = ("import warnings\n" if warnings_first else "") + LOGGING
    proc = subprocess.run([sys.executable, "-c", script, str(logs)], capture_output=True, text=True, timeout=60,
                          env=kward_env(tmp_path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # rpc mode: nothing on stderr
    text = (logs / "kward.log").read_text()
    assert "a warning before logging was imported" in text and "lazy logger" in text
    assert "plain logger, Bearer [REDACTED]" in text and "dropped" not in text
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
            assert server.warm_up is None  # made when the client is first idle
            return server.make_warm_up and server.make_warm_up()

    assert isinstance(warm_up({"HOME": str(tmp_path)}), WarmUp)
    assert warm_up({"HOME": str(tmp_path), "KWARD_NO_WARMUP": "1"}) is None


def test_the_warm_up_starts_after_the_first_message_is_answered(isolated_home):
    seen, started = [], threading.Event()
    s = InProcessServer(isolated_home)

    def first_step():
        seen.append(s.server.conn.client.opt_out)  # what initialize stored
        started.set()

    s.server.warm_up = WarmUp(lambda: [first_step])
    s.request("initialize", {"capabilities": {"optOutNotificationMethods": ["turn/event"]}})
    assert started.wait(10) and seen == [frozenset({"turn/event"})]
    assert s.request("workspace/info")["root"]
    s.close_input()
    assert s.join(10) and s.exit_code == 0 and s.server.warm_up.join(0)


def test_an_idle_kward_rpc_imports_the_http_stack_and_still_serves(isolated_home):
    env = kward_env(isolated_home, KWARD_PROVIDER="openrouter", KWARD_OPENROUTER_BASE_URL="http://127.0.0.1:9/v1")
    with RpcClient(isolated_home, env=env, argv=kward_command(python_flags=("-X", "importtime"))) as k:
        k.request("initialize")
        imported = lambda: {line.rsplit("|", 1)[-1].strip() for line in k.stderr.splitlines()}  # noqa: E731
        k.wait(lambda: {"requests", "kward.agent.engine", "kward.sessions.manager"} <= imported(), timeout=60,
               what="the warm-up importing requests, the agent and the session store", poll=0.05)
        assert k.request("sessions/list", {"limit": 5})["sessions"] == []
        assert k.close() == 0
    assert not [line for line in k.stderr.splitlines() if not line.startswith("import time:")]
