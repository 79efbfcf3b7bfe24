"""Helpers for the kward.tools tests: a workspace context (the `ctx` and `ws` fixtures)
and a one-line tool call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kward.tools.base import ToolContext, ToolResult
from kward.tools.registry import default_registry


def make_ctx(root: Path, **kw: Any) -> ToolContext:
    root.mkdir(parents=True, exist_ok=True)
    return ToolContext(workspace_root=root, **kw)


def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    """Run tool `name` with keyword arguments sent as JSON text, as a model would."""
    return default_registry().run(name, json.dumps(args), ctx)


@pytest.fixture
def ctx(tmp_path):
    """A tool context on a fresh workspace `tmp_path/ws` (import this fixture by name)."""
    return make_ctx(tmp_path / "ws")


@pytest.fixture
def ws(ctx):
    """The (real) workspace root of `ctx`."""
    return ctx.workspace_root
