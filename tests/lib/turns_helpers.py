"""Helpers for the turn tests over the real `kward rpc` subprocess with the Scripted provider.

`kward` (a pytest fixture) starts `kward rpc` children playing a script written to a temp
file and a fresh workspace, as `Kward`s (tests/lib/scripted_kward.py: the harness client
with the calls the turn tests make). Waiting is always on notifications (or, for the file
system and /proc, on a polled condition: lib/waiting.py's `wait_until`) with a timeout,
never a bare sleep. Scripts are built with lib/scripts.py. `check_turn_events` asserts
what every turn's event stream keeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lib.scripted_kward import Children, Kward
from lib.scripts import text, write_script

TERMINAL = ("completed", "failed", "canceled")
EVENT_TYPES = ("turnQueued", "turnSteered", "turnStarted", "reasoningDelta", "assistantDelta", "assistantMessage",
               "modelRetry", "toolCall", "toolResult", "answer", "turnCancelRequested", "error", "turnFinished")


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
