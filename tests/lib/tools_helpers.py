"""Helpers for the kward.tools tests: a workspace context, a one-line tool call, and
/proc-based checks that processes and process groups are really gone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kward.tools.base import ToolContext, ToolResult
from kward.tools.registry import default_registry
from lib.waiting import wait_until  # noqa: F401 (re-exported for the tools tests)


def make_ctx(root: Path, **kw: Any) -> ToolContext:
    root.mkdir(parents=True, exist_ok=True)
    return ToolContext(workspace_root=root, **kw)


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    """Run tool `name` with keyword arguments sent as JSON text, as a model would."""
    return default_registry().run(name, json.dumps(args), ctx)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may contain spaces; fields after the closing paren are well-formed
    return data[data.rindex(")") + 2:].split()


def pid_alive(pid: int) -> bool:
    """True while `pid` is a live (not zombie) process."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def live_group_members(pgid: int) -> list[int]:
    """Pids of live (not zombie) processes whose process group is `pgid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


@pytest.fixture
def ctx(tmp_path):
    """A tool context on a fresh workspace `tmp_path/ws` (import this fixture by name)."""
    return make_ctx(tmp_path / "ws")


@pytest.fixture
def ws(ctx):
    """The (real) workspace root of `ctx`."""
    return ctx.workspace_root
