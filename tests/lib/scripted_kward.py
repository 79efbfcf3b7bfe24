"""`Kward`: one `kward rpc` child with the Scripted provider (docs/scripted.md);
`Children`, the one launcher the `kward` fixture (below: the turn tests') and the `start`
fixture (tests/lib/rpc_sessions.py: the session tests') start them with and end them
after the test; and the `kward` fixture.

Kward is the harness client (`RpcClient`, built on kward.client) plus the calls the turn
and session tests make: create or resume a session, start a turn, wait for one of its
events, read the session file. Waiting is always on notifications with a timeout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lib.rpc_client import RpcClient, frame, kward_env, limited_command
from lib.scripts import text, write_script
from lib.session_records import messages_of, read_records
from lib.turn_events import turn_events, wait_event, wait_turn


class Kward(RpcClient):
    """One `kward rpc` child launched in workspace `ws` with `env` (`nofile`: under that
    descriptor limit)."""

    def __init__(self, home: Path, ws: Path, env: dict[str, str], *, nofile: int | None = None):
        self.ws = ws
        self.env = env
        super().__init__(home, cwd=ws, env=env, argv=limited_command(nofile) if nofile else None)

    @property
    def client(self) -> "Kward":
        """Itself (turn tests reach the protocol-level client as `k.client`)."""
        return self

    # --- sessions ---------------------------------------------------------------------

    def session(self, **params: Any) -> dict:
        """sessions/create in this child's workspace."""
        return self.request("sessions/create", {"workspaceRoot": str(self.ws), **params})

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
            with self._lock:
                self._next_id += 1
                ids.append(self._next_id)
            frames.append(frame({"jsonrpc": "2.0", "id": ids[-1], "method": method, "params": params}))
        self.write(b"".join(frames))
        return ids

    # --- turns ------------------------------------------------------------------------

    def start(self, session_id: str, input: str = "go", **params: Any) -> dict:
        return self.request("turns/start", {"sessionId": session_id, "input": input, **params})

    def start_turn(self, session_id: str, text: str, behavior: str | None = None) -> dict:
        params: dict[str, Any] = {} if behavior is None else {"streamingBehavior": behavior}
        return self.start(session_id, text, **params)

    def run(self, session_id: str, input: str = "go", timeout: float = 10.0, **params: Any) -> tuple[dict, list[dict]]:
        """Start a turn and wait for its turnFinished; returns (turns/start result, events)."""
        turn = self.start(session_id, input, **params)
        return turn, self.finish(turn["id"], timeout)

    def run_turn(self, session_id: str, text: str, timeout: float = 20.0) -> list[dict]:
        """Start a turn, wait until it finished `completed`; return its events."""
        turn = self.start_turn(session_id, text)
        status = self.outcome(turn["id"], timeout)
        events = self.events(turn["id"])
        assert status == "completed", events[-3:]
        return events

    # --- events -----------------------------------------------------------------------

    def notified(self, method: str) -> list[dict]:
        """The params of every `method` notification received so far."""
        return [n["params"] for n in list(self.notifications) if n["method"] == method]

    def events(self, turn_id: str | None = None) -> list[dict]:
        """The turn/event params received so far (of one turn), in arrival order."""
        return turn_events(self, turn_id)

    def wait_event(self, turn_id: str, type_: str, timeout: float = 20.0) -> dict:
        return wait_event(self, turn_id, type_, timeout)

    def finish(self, turn_id: str, timeout: float = 10.0) -> list[dict]:
        """Wait for the turn's turnFinished; returns all its events (arrival order)."""
        return wait_turn(self, turn_id, timeout)

    def outcome(self, turn_id: str, timeout: float = 20.0) -> str:
        """Wait for the turn's turnFinished; return its status."""
        return self.wait_event(turn_id, "turnFinished", timeout)["payload"]["status"]

    def question(self, timeout: float = 10.0) -> dict:
        return self.wait_notification(lambda n: n["method"] == "ui/question", timeout, "ui/question")["params"]

    # --- the session file -------------------------------------------------------------

    def records(self, session: dict) -> list[dict]:
        return read_records(session.get("path") or session.get("sessionFile"))

    def messages(self, session: dict) -> list[dict]:
        return messages_of(self.records(session))


class Children:
    """The children one test started. `start` launches one; `end_all` (at teardown) ends
    every one still running with EOF and checks them: no protocol error and an empty
    stderr; with `check_exit`, exit status 0; with `lenient_if_killed`, a child killed by
    a signal on purpose is only reaped."""

    def __init__(self, home: Path):
        self.home = home
        self.started: list[tuple[Kward, bool, bool]] = []

    def start(self, ws: Path, script: Path | None, env: dict[str, str] | None = None, *, nofile: int | None = None,
              check_exit: bool = False, lenient_if_killed: bool = False) -> Kward:
        full_env = kward_env(self.home, KWARD_PROVIDER="scripted", **(env or {}))
        if script is not None:
            full_env["KWARD_SCRIPT"] = str(script)
        k = Kward(self.home, ws, full_env, nofile=nofile)
        self.started.append((k, check_exit, lenient_if_killed))
        return k

    def end_all(self) -> None:
        problems = []
        for k, check_exit, lenient_if_killed in self.started:
            try:
                if k.proc.poll() is None:
                    code = k.close()
                    if check_exit and code != 0:
                        problems.append(f"exit code {code}")
                else:
                    k.wait_exit()  # every byte of its output read
                if lenient_if_killed and k.proc.returncode < 0:
                    continue
                if k.protocol_errors or k.stderr:
                    problems.append(f"stderr={k.stderr!r} protocol={k.protocol_errors!r}")
            finally:
                k.release()
        assert not problems, problems


@pytest.fixture
def kward(isolated_home: Path):
    """`kward(steps, *, raw=None, env=None, files=None, demo=False, **script_fields) -> Kward`.

    Writes the script (or `raw` text as the script file), a workspace holding `files`
    ({relative path: text}), and starts `kward rpc` in it (with no script at all, the
    built-in demo, when `demo`). Every child is closed after the
    test and must not have written to stderr.
    """
    children = Children(isolated_home)
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
        return children.start(ws, None if demo else script, env)

    yield start
    children.end_all()
