"""Helpers for the turn tests over the real `kward rpc` subprocess with the Scripted provider.

`kward` (a pytest fixture) starts `kward rpc` children playing a script written to a temp
file and a fresh workspace; `Kward` wraps one child with the calls the turn tests make
(create a session, start a turn, wait for one of its events, read the session file).
Waiting is always on notifications (or, for the file system and /proc, on a polled
condition) with a timeout, never a bare sleep.

Script steps are plain dicts as docs/scripted.md documents them; `text`, `reasoning`,
`tool`, `delay`, ... build the common ones.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from lib.rpc_client import RpcClient, RpcError, kward_env
from lib.tools_helpers import pid_alive  # noqa: F401 (re-exported for the turn tests)

TERMINAL = ("completed", "failed", "canceled")
EVENT_TYPES = ("turnQueued", "turnSteered", "turnStarted", "reasoningDelta", "assistantDelta", "assistantMessage",
               "modelRetry", "toolCall", "toolResult", "answer", "turnCancelRequested", "error", "turnFinished")


# --- script events -----------------------------------------------------------------------

def text(t: str, repeat: int = 1) -> dict:
    return {"type": "text", "text": t, "repeat": repeat}


def reasoning(t: str, repeat: int = 1) -> dict:
    return {"type": "reasoning", "text": t, "repeat": repeat}


def tool(name: str, arguments: Any = None, id: str | None = None, **kw: Any) -> dict:
    event = {"type": "toolCall", "name": name, "arguments": kw if arguments is None else arguments}
    if id is not None:
        event["id"] = id
    return event


def delay(seconds: float) -> dict:
    return {"type": "delay", "seconds": seconds}


def wait_for_steer(timeout: float = 30) -> dict:
    return {"type": "waitForSteer", "timeout": timeout}


def write_script(directory: Path, steps: list, **extra: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"script-{len(list(directory.glob('script-*.json')))}.json"
    path.write_text(json.dumps({"steps": steps, **extra}), encoding="utf-8")
    return path


# --- waiting -----------------------------------------------------------------------------

def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition",
               interval: float = 0.01) -> Any:
    """Poll a condition outside the protocol (a file, /proc) until it holds or `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)


def proc_status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


# --- checks ------------------------------------------------------------------------------

def check_turn_events(events: list[dict], status: str | None = None) -> dict:
    """Assert the invariants every turn's event stream keeps; returns the turnFinished payload.

    sequence 1..N without a gap, one session and turn id, turnQueued first, turnStarted
    second (unless a queued turn was canceled), exactly one turnFinished and it is last,
    `answer` right before a completed turnFinished, `error` before a failed one (only a
    turnCancelRequested that came too late may stand between them).
    """
    assert events, "no events"
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert len({(e["sessionId"], e["turnId"]) for e in events}) == 1
    for e in events:
        assert set(e) == {"sequence", "timestamp", "sessionId", "turnId", "type", "payload"}, e
        assert e["type"] in EVENT_TYPES, e
        assert isinstance(e["payload"], dict)
        assert e["timestamp"].endswith("Z") and "T" in e["timestamp"]
    types = [e["type"] for e in events]
    assert types[0] == "turnQueued" and events[0]["payload"] == {"status": "queued"}
    assert types.count("turnFinished") == 1 and types[-1] == "turnFinished", types[-5:]
    finished = events[-1]["payload"]
    assert finished["status"] in TERMINAL
    if "turnStarted" in types:
        i = types.index("turnStarted")
        assert types.count("turnStarted") == 1 and events[i]["payload"] == {"status": "running"}
        assert set(types[1:i]) <= {"turnCancelRequested"}, types[:i + 1]
    else:  # only a turn canceled while queued never starts
        assert finished["status"] == "canceled"
        assert set(types[1:-1]) <= {"turnCancelRequested"}, types
    # the last events before turnFinished, leaving out a cancel request that came too late
    last = [e for e in events[:-1] if e["type"] != "turnCancelRequested"][-1]
    if finished["status"] == "completed":
        assert last["type"] == "answer" and types.count("answer") == 1, types[-4:]
        assert "error" not in finished
    elif finished["status"] == "failed":
        assert last["type"] == "error" and types.count("error") == 1 and "answer" not in types, types[-4:]
        assert finished["error"] == last["payload"]
        assert set(finished["error"]) >= {"message", "code", "fatal"} and finished["error"]["fatal"] is False
    else:
        assert "answer" not in types and "error" not in finished
    if status is not None:
        assert finished["status"] == status, (finished, types[-6:])
    return finished


# --- the child ---------------------------------------------------------------------------

class Kward:
    """One `kward rpc` child with the Scripted provider, its workspace and its script."""

    def __init__(self, home: Path, ws: Path, env: dict[str, str]):
        self.home = home
        self.ws = ws
        self.env = env
        self.client = RpcClient(home, cwd=ws, env=env)

    # requests
    def request(self, method: str, params: Any = None, timeout: float = 10.0) -> Any:
        return self.client.request(method, params, timeout)

    def error(self, method: str, params: Any = None) -> RpcError:
        return self.client.error(method, params)

    def session(self, **params: Any) -> dict:
        return self.request("sessions/create", {"workspaceRoot": str(self.ws), **params})

    def start(self, session_id: str, input: str = "go", **params: Any) -> dict:
        return self.request("turns/start", {"sessionId": session_id, "input": input, **params})

    def run(self, session_id: str, input: str = "go", timeout: float = 10.0, **params: Any) -> tuple[dict, list[dict]]:
        """Start a turn and wait for its turnFinished; returns (turns/start result, events)."""
        turn = self.start(session_id, input, **params)
        return turn, self.finish(turn["id"], timeout)

    # events
    def notifications(self, method: str) -> list[dict]:
        return [n["params"] for n in list(self.client.notifications) if n["method"] == method]

    def events(self, turn_id: str | None = None) -> list[dict]:
        return [p for p in self.notifications("turn/event") if turn_id is None or p["turnId"] == turn_id]

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 10.0, what: str = "notification") -> dict:
        """The first notification (whole message) matching `predicate`; scans each one once."""
        notes = self.client.notifications
        pos = 0

        def find():
            nonlocal pos
            while pos < len(notes):
                n = notes[pos]
                pos += 1
                if predicate(n):
                    return n
            return None

        return self.client.wait(find, timeout, what)

    def wait_event(self, turn_id: str, type_: str, timeout: float = 10.0) -> dict:
        return self.wait_for(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn_id
                             and n["params"]["type"] == type_, timeout, f"{type_} of turn {turn_id}")["params"]

    def finish(self, turn_id: str, timeout: float = 10.0) -> list[dict]:
        """Wait for the turn's turnFinished; returns all its events (arrival order)."""
        self.wait_event(turn_id, "turnFinished", timeout)
        return self.events(turn_id)

    def question(self, timeout: float = 10.0) -> dict:
        return self.wait_for(lambda n: n["method"] == "ui/question", timeout, "ui/question")["params"]

    # the session file
    def records(self, session: dict) -> list[dict]:
        path = session.get("path") or session.get("sessionFile")
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def messages(self, session: dict) -> list[dict]:
        return [r["message"] for r in self.records(session) if r.get("type") == "message"]

    def close(self) -> int:
        with self.client:
            code = self.client.close()
        return code


@pytest.fixture
def kward(isolated_home: Path):
    """`kward(steps, *, raw=None, env=None, files=None, demo=False, **script_fields) -> Kward`.

    Writes the script (or `raw` text as the script file), a workspace holding `files`
    ({relative path: text}), and starts `kward rpc` in it (with no script at all, the
    built-in demo, when `demo`). Every child is closed after the
    test and must not have written to stderr.
    """
    started: list[Kward] = []
    count = 0

    def start(steps: list | None = None, *, raw: str | None = None, env: dict[str, str] | None = None,
              files: dict[str, str] | None = None, demo: bool = False, **script_fields: Any) -> Kward:
        nonlocal count
        count += 1
        ws = isolated_home / f"ws{count}"
        ws.mkdir()
        for rel, content in (files or {}).items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(content, encoding="utf-8")
        scripts = isolated_home / "scripts"
        if raw is not None:
            scripts.mkdir(exist_ok=True)
            script = scripts / f"raw-{count}.json"
            script.write_text(raw, encoding="utf-8")
        else:
            script = write_script(scripts, steps if steps is not None else [[text("ok")]], **script_fields)
        full_env = kward_env(isolated_home, KWARD_PROVIDER="scripted", **(env or {}))
        if not demo:
            full_env["KWARD_SCRIPT"] = str(script)
        k = Kward(isolated_home, ws, full_env)
        started.append(k)
        return k

    yield start
    for k in started:
        k.close()
        assert k.client.protocol_errors == []
        assert k.client.stderr == "", k.client.stderr
