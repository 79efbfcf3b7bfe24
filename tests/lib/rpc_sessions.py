"""Helpers for the RPC-level sessions tests (tests/sessions/test_rpc_sessions*.py).

They drive the real `kward rpc` subprocess with the Scripted provider (docs/scripted.md);
the tests read the session files with lib/session_records.py: strictly (every line whole
JSON) or leniently (skipping a torn line a SIGKILL may leave). Waiting is always on
frames with a timeout, never on a sleep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lib.scripted_kward import Children, Kward
from lib.scripts import reasoning, text, tool, write_script

NOTES = "hello from the notes\n"
#: One turn: reasoning, text and a read_file call, then the answer (two model calls).
TOOL_TURN = [
    [reasoning("Thinking about the notes."), text("Reading them."), tool("read_file", {"path": "notes.txt"})],
    [text("The notes say hello.")],
]
TEXT_ONLY = [[text("Done.")]]


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
