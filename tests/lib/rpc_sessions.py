"""Helpers for the RPC-level sessions tests (tests/test_rpc_sessions*.py).

They drive the real `kward rpc` subprocess with the Scripted provider (docs/scripted.md)
and read session files the way a reviewer would: strictly (every line whole JSON) or
leniently (skipping a torn line a SIGKILL may leave). Waiting is always on frames with a
timeout, never on a sleep.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable

import pytest

from lib.rpc_client import RpcClient, frame, kward_env

NOTES = "hello from the notes\n"
#: One turn: reasoning, text and a read_file call, then the answer (two model calls).
TOOL_TURN = [
    [{"type": "reasoning", "text": "Thinking about the notes."},
     {"type": "text", "text": "Reading them."},
     {"type": "toolCall", "name": "read_file", "arguments": {"path": "notes.txt"}}],
    [{"type": "text", "text": "The notes say hello."}],
]
TEXT_ONLY = [[{"type": "text", "text": "Done."}]]


def write_script(path: Path, steps: list[Any], *, loop: bool = True) -> Path:
    path.write_text(json.dumps({"model": "scripted-test", "loop": loop, "steps": steps}), encoding="utf-8")
    return path


def limited_argv(nofile: int) -> list[str]:
    """``kward rpc`` started with a soft and hard RLIMIT_NOFILE of `nofile` (like
    ``ulimit -n``), set in the child before it execs the interpreter."""
    code = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (%d, %d)); "
            "os.execv(sys.executable, [sys.executable, '-m', 'kward', 'rpc'])" % (nofile, nofile))
    return [sys.executable, "-c", code]


class Kward(RpcClient):
    """One `kward rpc` child (Scripted provider) launched in `workspace`; `nofile` limits
    its descriptors."""

    def __init__(self, home: Path, workspace: Path, script: Path | None = None, *, nofile: int | None = None,
                 **env: str):
        extra = {"KWARD_PROVIDER": "scripted", **env}
        if script is not None:
            extra["KWARD_SCRIPT"] = str(script)
        super().__init__(home, cwd=workspace, env=kward_env(home, **extra),
                         argv=limited_argv(nofile) if nofile else None)

    # --- sessions ---------------------------------------------------------------------

    def create(self, **params: Any) -> dict:
        return self.request("sessions/create", params)

    def resume(self, path: str, **params: Any) -> dict:
        return self.request("sessions/resume", {"path": path, **params})

    def listing(self, **params: Any) -> list[dict]:
        return self.request("sessions/list", params)["sessions"]

    def transcript(self, session_id: str) -> dict:
        return self.request("sessions/transcript", {"sessionId": session_id})

    def send_many(self, calls: list[tuple[str, dict]]) -> list[int]:
        """Send several requests in one write (they reach the server together); their ids."""
        ids, frames = [], []
        for method, params in calls:
            self._next_id += 1
            ids.append(self._next_id)
            frames.append(frame({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}))
        self.write(b"".join(frames))
        return ids

    # --- turns ------------------------------------------------------------------------

    def start_turn(self, session_id: str, text: str, behavior: str | None = None) -> dict:
        params: dict[str, Any] = {"sessionId": session_id, "input": text}
        if behavior is not None:
            params["streamingBehavior"] = behavior
        return self.request("turns/start", params)

    def events(self, turn_id: str) -> list[dict]:
        """The turn/event params received so far for one turn, in arrival order."""
        with self._cond:
            return [n["params"] for n in self.notifications
                    if n["method"] == "turn/event" and n["params"].get("turnId") == turn_id]

    def wait_event(self, turn_id: str, kind: str, timeout: float = 20.0) -> dict:
        return self.wait_notification(
            lambda n: n["method"] == "turn/event" and n["params"].get("turnId") == turn_id
            and n["params"].get("type") == kind, timeout)["params"]

    def finish(self, turn_id: str, timeout: float = 20.0) -> str:
        """Wait for the turn's turnFinished; return its status."""
        return self.wait_event(turn_id, "turnFinished", timeout)["payload"]["status"]

    def run_turn(self, session_id: str, text: str, timeout: float = 20.0) -> list[dict]:
        """Start a turn, wait until it finished `completed`; return its events."""
        turn = self.start_turn(session_id, text)
        status = self.finish(turn["id"], timeout)
        events = self.events(turn["id"])
        assert status == "completed", events[-3:]
        return events


# --- files -------------------------------------------------------------------------------


def strict_records(path: str | Path) -> list[dict]:
    """Every line of the file as JSON; fails on a torn, blank or undecodable line."""
    data = Path(path).read_bytes()
    assert data.endswith(b"\n"), f"{path} does not end with a newline"
    out = []
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            record = json.loads(line)
        except ValueError as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"{path}:{number} is not one JSON record ({exc}): {line[:200]!r}") from None
        assert isinstance(record, dict), f"{path}:{number} is not an object"
        out.append(record)
    return out


def lenient_records(path: str | Path) -> tuple[list[dict], list[bytes]]:
    """(decodable records, undecodable lines): what a crash may leave behind."""
    good, bad = [], []
    for line in Path(path).read_bytes().split(b"\n"):
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        (good if isinstance(record, dict) else bad).append(record if isinstance(record, dict) else line)
    return good, bad


def messages_of(records: Iterable[dict]) -> list[dict]:
    return [r["message"] for r in records if r.get("type") == "message"]


def names_of(records: Iterable[dict]) -> list[Any]:
    return [r.get("name") for r in records if r.get("type") == "session_info"]


def session_files(home: Path) -> list[Path]:
    return sorted((home / ".kward" / "sessions").glob("*/*.jsonl"))


# --- fixtures (import them into a test module to use them) ------------------------------


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(NOTES)
    return ws.resolve()


@pytest.fixture
def start(isolated_home, workspace, tmp_path):
    """`start(steps=TOOL_TURN, loop=True, cwd=workspace, nofile=None, **env)` launches a
    `kward rpc` (with `nofile`: under that descriptor limit).

    At teardown every process still running is ended with EOF and must exit 0 with an
    empty stderr and nothing but frames on stdout (a killed one is only reaped)."""
    started: list[Kward] = []

    def launch(steps: list[Any] = TOOL_TURN, *, loop: bool = True, cwd: Path | None = None,
               nofile: int | None = None, **env: str) -> Kward:
        script = write_script(tmp_path / f"script{len(started)}.json", steps, loop=loop)
        client = Kward(isolated_home, cwd or workspace, script, nofile=nofile, **env)
        started.append(client)
        return client

    yield launch
    problems = []
    for client in started:
        if client.proc.poll() is None:
            code = client.close()
            if code != 0:
                problems.append(f"exit code {code}")
        if client.proc.returncode >= 0 and (client.stderr or client.protocol_errors):  # < 0: killed on purpose
            problems.append(f"stderr={client.stderr!r} protocol={client.protocol_errors!r}")
        for stream in (client.proc.stdout, client.proc.stderr):
            stream.close()
    assert not problems, problems
