"""Helpers for the RPC-level sessions tests (tests/sessions/test_rpc_sessions*.py).

They drive the real `kward rpc` subprocess with the Scripted provider (docs/scripted.md)
and read session files the way a reviewer would: strictly (every line whole JSON) or
leniently (skipping a torn line a SIGKILL may leave). Waiting is always on frames with a
timeout, never on a sleep.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import pytest

from lib.scripted_kward import Children, Kward
from lib.turns_helpers import write_script

NOTES = "hello from the notes\n"
#: One turn: reasoning, text and a read_file call, then the answer (two model calls).
TOOL_TURN = [
    [{"type": "reasoning", "text": "Thinking about the notes."},
     {"type": "text", "text": "Reading them."},
     {"type": "toolCall", "name": "read_file", "arguments": {"path": "notes.txt"}}],
    [{"type": "text", "text": "The notes say hello."}],
]
TEXT_ONLY = [[{"type": "text", "text": "Done."}]]


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
    children = Children(isolated_home)

    def launch(steps: list[Any] = TOOL_TURN, *, loop: bool = True, cwd: Path | None = None,
               nofile: int | None = None, **env: str) -> Kward:
        script = write_script(tmp_path / "scripts", steps, model="scripted-test", loop=loop)
        return children.start(cwd or workspace, script, env, nofile=nofile, check_exit=True, lenient_if_killed=True)

    yield launch
    children.end_all()
