"""Symlink races: while a child process keeps exchanging the workspace directory ``sub``
with a symlink to an outside directory, no file tool and no export ever shows outside
content or writes outside.

Each test calls the tool for a budget of about a second (longer for the search, whose
every call starts a child), going on until it has seen both states of ``sub`` (the real
directory and the refused symlink) within a hard deadline of a few seconds; then it
asserts that not one call leaked and that both states were met (so the race really ran).
On the code before the confined walk these tests failed within their budget: leaks in
hundreds of the reads, listings and searches, exports written outside.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import pytest

from kward.errors import PathNotAllowed
from lib.rpc_sessions import start, workspace  # noqa: F401 (fixtures)
from lib.session_manager import new_manager
from lib.session_records import typed, user
from lib.swapper import swapping
from lib.tools_helpers import call, ctx, ws  # noqa: F401 (fixtures)

DEADLINE = 5.0  # seconds per test, at most


def outside_dir(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("OUTSIDE SECRET\n")
    (d / "outside-only.txt").write_text("OUTSIDE SECRET too\n")
    return d


def inside_dir(ws: Path) -> Path:
    d = ws / "sub"
    d.mkdir()
    (d / "secret.txt").write_text("inside secret\n")
    (d / "inside-only.txt").write_text("inside only\n")
    return d


def hammer(once: Callable[[], str], *, budget: float = 1.0) -> dict[str, int]:
    """Call `once` (which classifies one attempt as "ok", "refused" or "leak") for
    `budget` seconds and on until it has seen both "ok" and "refused", or `DEADLINE`."""
    seen = {"ok": 0, "refused": 0, "leak": 0}
    start = time.monotonic()
    while True:
        seen[once()] += 1
        elapsed = time.monotonic() - start
        if elapsed >= DEADLINE or (elapsed >= budget and seen["ok"] and seen["refused"]):
            return seen


def assert_held(seen: dict[str, int]) -> None:
    total = sum(seen.values())
    assert seen["leak"] == 0, f"{seen['leak']} of {total} calls leaked ({seen})"
    assert seen["ok"] and seen["refused"], f"the race was not exercised: {seen}"


@pytest.fixture
def race(ctx, tmp_path):
    outside = outside_dir(tmp_path)
    sub = inside_dir(ctx.workspace_root)
    with swapping(sub, outside):
        yield outside


@pytest.mark.slow
def test_read_file_never_reads_through_a_swapped_symlink(ctx, race):
    def once():
        r = call(ctx, "read_file", path="sub/secret.txt")
        if "OUTSIDE" in r.content:
            return "leak"
        if r.is_error:
            return "refused"
        assert r.content == "inside secret\n"
        return "ok"

    assert_held(hammer(once))
    assert ctx.read_paths <= {str(ctx.workspace_root / "sub" / "secret.txt")}


@pytest.mark.slow
def test_list_directory_never_lists_through_a_swapped_symlink(ctx, race):
    def once():
        r = call(ctx, "list_directory", path="sub")
        if "outside-only" in r.content:
            return "leak"
        if r.is_error:
            return "refused"
        assert r.content == "inside-only.txt\nsecret.txt"
        return "ok"

    assert_held(hammer(once))


@pytest.mark.slow
def test_search_files_never_searches_through_a_swapped_symlink(ctx, race):
    def once():
        # the root (the walk meets the swapped entry) and the swapped directory itself
        whole = call(ctx, "search_files", pattern="SECRET|inside", case_sensitive=False)
        there = call(ctx, "search_files", pattern="SECRET|inside", path="sub")
        if "OUTSIDE" in whole.content or "OUTSIDE" in there.content:
            return "leak"
        assert not whole.is_error, whole.content
        if there.is_error:
            assert there.content in ("Error: path outside workspace: sub",
                                     "Error: no such file or directory: sub",  # renames
                                     "Error: too many levels of symbolic links: sub",  # swapped after the check
                                     ), there.content
            return "refused"
        return "ok" if "inside secret" in there.content else "refused"  # swapped during the walk

    assert_held(hammer(once, budget=3.0))


@pytest.mark.slow
def test_write_file_never_shows_or_replaces_outside_content(ctx, race):
    def once():
        r = call(ctx, "read_file", path="sub/secret.txt")
        if r.is_error:
            return "leak" if "OUTSIDE" in r.content else "refused"
        w = call(ctx, "write_file", path="sub/secret.txt", content="inside secret\n")
        if "OUTSIDE" in w.content:  # the diff of the old content
            return "leak"
        return "refused" if w.is_error else "ok"

    seen = hammer(once)
    assert (race / "secret.txt").read_text() == "OUTSIDE SECRET\n"
    assert sorted(os.listdir(race)) == ["outside-only.txt", "secret.txt"]
    assert_held(seen)


@pytest.mark.slow
def test_export_is_never_written_through_a_swapped_symlink(tmp_path):
    manager, ws = new_manager(tmp_path)
    try:
        session = manager.create(name="racy")
        session.append_message(typed(user("hello")))
        outside = outside_dir(tmp_path)
        before = sorted(os.listdir(outside))
        with swapping(inside_dir(ws), outside):
            def once():
                try:
                    manager.export(session.id, path="sub/chat.md")
                except PathNotAllowed:
                    outcome = "refused"
                else:
                    outcome = "ok"
                return "leak" if sorted(os.listdir(outside)) != before else outcome

            seen = hammer(once)
        assert sorted(os.listdir(outside)) == before
        assert_held(seen)
        assert (ws / "sub" / "chat.md").read_text().startswith("# Kward Session")
    finally:
        manager.shutdown_all()


@pytest.mark.slow
def test_export_over_rpc_is_never_written_through_a_swapped_symlink(start, workspace, tmp_path):
    k = start()
    session = k.create(name="racy")
    outside = outside_dir(tmp_path)
    before = sorted(os.listdir(outside))
    with swapping(inside_dir(workspace), outside):
        def once():
            msg = k.response(k.send("sessions/export", {"sessionId": session["id"], "path": "sub/chat.md"}))
            if sorted(os.listdir(outside)) != before:
                return "leak"
            if "error" in msg:
                assert msg["error"]["data"]["reason"] == "path_not_allowed", msg
                return "refused"
            assert msg["result"]["path"] == str(workspace / "sub" / "chat.md")
            return "ok"

        seen = hammer(once)
    assert sorted(os.listdir(outside)) == before
    assert_held(seen)
    assert [p for p in os.listdir(workspace / "sub") if p.endswith(".tmp")] == []
