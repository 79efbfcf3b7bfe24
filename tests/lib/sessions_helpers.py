"""Helpers for the sessions tests: message builders, raw session files, child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterable

from kward.sessions.manager import SessionManager


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(text: str = "", *, calls: Iterable[tuple[str, str, dict]] = (), **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, **extra}
    calls = list(calls)
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ]
    return message


def tool(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def header(session_id: str = "11111111-2222-3333-4444-555555555555", cwd: str = "/nowhere", **extra: Any) -> dict:
    return {"type": "session", "version": 1, "id": session_id, "timestamp": "2026-01-02T03:04:05.678Z",
            "cwd": cwd, **extra}


def message_rec(message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "timestamp": "2026-01-02T03:04:06.000Z", "message": message}


def write_lines(path: Path, lines: Iterable[Any], *, trailing_newline: bool = True) -> Path:
    """Write records (dicts are JSON-encoded, bytes/str written as they are) one per line."""
    parts = []
    for line in lines:
        if isinstance(line, dict):
            parts.append(json.dumps(line).encode())
        elif isinstance(line, str):
            parts.append(line.encode())
        else:
            parts.append(line)
    data = b"\n".join(parts) + (b"\n" if trailing_newline else b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def new_manager(tmp_path: Path, name: str = "ws") -> tuple[SessionManager, Path]:
    workspace = tmp_path / name
    workspace.mkdir(exist_ok=True)
    return SessionManager(tmp_path / "home" / ".kward" / "sessions", default_workspace=str(workspace)), workspace


def child(script: str, *args: str, stdin: bool = False) -> subprocess.Popen:
    """Start ``python -c <script> args...`` with pipes (text mode, line buffered)."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=dict(os.environ),
    )


def run_child(script: str, *args: str, timeout: float = 30) -> str:
    """Run a child to completion; return its stdout (fail with its stderr)."""
    proc = child(script, *args)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}): {err}"
    return out


def file_records(path: str | Path) -> list[dict[str, Any]]:
    """Every line of a file decoded strictly (fails on any bad line)."""
    return [json.loads(line) for line in Path(path).read_bytes().splitlines()]
