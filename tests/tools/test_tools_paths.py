"""Workspace confinement: `..`, absolute paths, symlinked files and directories pointing
out, and new files under a symlinked directory."""

import os

import pytest

from kward.errors import PathNotAllowed
from kward.tools.paths import open_existing, resolve_for_write
from lib.tools_helpers import call, ctx, ws  # noqa: F401 (fixtures)


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("TOP SECRET\n")
    return d


def assert_outside(result, path):
    assert (result.content, result.is_error) == (f"Error: path outside workspace: {path}", True)


def test_dotdot_and_absolute_outside(ctx, ws, outside):
    assert_outside(call(ctx, "read_file", path="../outside/secret.txt"), "../outside/secret.txt")
    assert_outside(call(ctx, "read_file", path=str(outside / "secret.txt")), str(outside / "secret.txt"))
    assert_outside(call(ctx, "list_directory", path=".."), "..")
    assert_outside(call(ctx, "write_file", path="../evil.txt", content="x"), "../evil.txt")
    assert_outside(call(ctx, "write_file", path="/tmp/../etc/kward-evil", content="x"), "/tmp/../etc/kward-evil")
    assert not (ws.parent / "evil.txt").exists()


def test_absolute_path_inside_is_allowed_and_dotdot_back_in(ctx, ws):
    (ws / "a.txt").write_text("hi")
    assert call(ctx, "read_file", path=str(ws / "a.txt")).content == "hi"
    assert call(ctx, "read_file", path="sub/../a.txt").content == "hi"


def test_symlink_file_pointing_out(ctx, ws, outside):
    os.symlink(outside / "secret.txt", ws / "leak.txt")
    assert_outside(call(ctx, "read_file", path="leak.txt"), "leak.txt")
    ctx.read_paths.add(str(outside / "secret.txt"))  # even a poisoned read set does not help
    assert_outside(call(ctx, "write_file", path="leak.txt", content="pwned"), "leak.txt")
    assert_outside(call(ctx, "edit_file", path="leak.txt", edits=[{"old_text": "TOP", "new_text": "x"}]),
                   "leak.txt")
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


def test_dangling_symlink_pointing_out_is_not_written(ctx, ws, outside):
    os.symlink(outside / "new.txt", ws / "dangling.txt")
    assert_outside(call(ctx, "write_file", path="dangling.txt", content="x"), "dangling.txt")
    assert not (outside / "new.txt").exists()


def test_symlinked_directory_pointing_out(ctx, ws, outside):
    os.symlink(outside, ws / "linkdir")
    assert_outside(call(ctx, "list_directory", path="linkdir"), "linkdir")
    assert_outside(call(ctx, "read_file", path="linkdir/secret.txt"), "linkdir/secret.txt")
    assert_outside(call(ctx, "write_file", path="linkdir/new.txt", content="x"), "linkdir/new.txt")
    assert_outside(call(ctx, "write_file", path="linkdir/deep/er/new.txt", content="x"),
                   "linkdir/deep/er/new.txt")
    assert sorted(os.listdir(outside)) == ["secret.txt"]


def test_symlink_inside_workspace_is_fine(ctx, ws):
    (ws / "real").mkdir()
    os.symlink("real", ws / "alias")
    r = call(ctx, "write_file", path="alias/f.txt", content="ok")
    assert not r.is_error, r.content
    assert (ws / "real" / "f.txt").read_text() == "ok"


def test_write_under_a_file_is_refused(ctx, ws):
    (ws / "f").write_text("x")
    r = call(ctx, "write_file", path="f/child.txt", content="x")
    assert (r.content, r.is_error) == ("Error: not a directory: f", True)


def test_resolvers_directly(ws, outside):
    (ws / "a").mkdir()
    with open_existing(ws, "a") as node:
        assert node.path == str(ws / "a")
    assert resolve_for_write(ws, "a/b/c.txt") == str(ws / "a" / "b" / "c.txt")
    with pytest.raises(PathNotAllowed) as info:
        open_existing(ws, "../outside")
    assert info.value.reason == "path_not_allowed"
    assert info.value.message == "path outside workspace: ../outside"


def test_nul_in_path_is_an_error(ctx):
    r = call(ctx, "read_file", path="a\x00b")
    assert r.is_error and r.content.startswith("Error: path contains a NUL byte")


@pytest.fixture
def swap_after_resolving(monkeypatch, ws, outside):
    """Replace ws/sub with a symlink to `outside` right after write_file checked its path."""
    from kward.tools import writing

    real = writing.resolve_for_write

    def resolve_then_swap(root, path):
        target = real(root, path)
        os.rename(ws / "sub", ws / "sub.moved")
        os.symlink(outside, ws / "sub")
        return target

    monkeypatch.setattr(writing, "resolve_for_write", resolve_then_swap)


def test_new_directories_are_not_created_through_a_swapped_symlink(ctx, ws, outside, swap_after_resolving):
    (ws / "sub").mkdir()
    assert_outside(call(ctx, "write_file", path="sub/deep/new.txt", content="x"), "sub/deep/new.txt")
    assert sorted(os.listdir(outside)) == ["secret.txt"]


def test_an_existing_file_is_not_replaced_through_a_swapped_parent(ctx, ws, outside, swap_after_resolving):
    (ws / "sub").mkdir()
    (ws / "sub" / "secret.txt").write_text("mine\n")
    assert not call(ctx, "read_file", path="sub/secret.txt").is_error
    assert_outside(call(ctx, "write_file", path="sub/secret.txt", content="pwned"), "sub/secret.txt")
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


# --- symlinks inside the workspace, loops, special files (the confined walk) ----------

def test_inner_symlinks_absolute_chained_and_dotdot_are_followed(ctx, ws):
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f.txt").write_text("deep")
    os.symlink(ws / "a", ws / "abs")  # absolute, pointing inside
    os.symlink("abs/b", ws / "chain")  # through another symlink
    os.symlink("a/../a/b/f.txt", ws / "dotdot.txt")
    for path in ("abs/b/f.txt", "chain/f.txt", "dotdot.txt"):
        assert call(ctx, "read_file", path=path).content == "deep", path
    assert ctx.read_paths == {str(ws / "a" / "b" / "f.txt")}
    assert call(ctx, "list_directory", path="chain").content == "f.txt"


def test_symlink_loops_are_an_error(ctx, ws):
    os.symlink("loop2", ws / "loop1")
    os.symlink("loop1", ws / "loop2")
    r = call(ctx, "read_file", path="loop1")
    assert (r.content, r.is_error) == ("Error: too many levels of symbolic links: loop1", True)


def test_a_fifo_is_refused_without_blocking(ctx, ws):
    os.mkfifo(ws / "pipe")  # opening it for reading would wait for a writer forever
    assert call(ctx, "read_file", path="pipe").content == "Error: not a file: pipe"
    assert call(ctx, "list_directory", path="pipe").content == "Error: not a directory: pipe"
    ctx.read_paths.add(str(ws / "pipe"))
    assert call(ctx, "write_file", path="pipe", content="x").content == "Error: not a file: pipe"
    (ws / "t.txt").write_text("needle\n")
    assert call(ctx, "search_files", pattern="needle").content == "t.txt:1: needle"


def test_listing_marks_only_symlinks_to_directories_inside(ctx, ws, outside):
    (ws / "real").mkdir()
    (ws / "f.txt").write_text("x")
    os.symlink("real", ws / "dir-link")
    os.symlink(outside, ws / "out-link")
    os.symlink("f.txt", ws / "file-link")
    os.symlink("missing", ws / "dangling")
    assert call(ctx, "list_directory").content == "dangling\ndir-link/\nf.txt\nfile-link\nout-link\nreal/"


def test_writes_through_inner_symlinks_land_on_their_targets(ctx, ws):
    (ws / "real.txt").write_text("old\n")
    os.symlink("real.txt", ws / "link.txt")
    os.symlink("made-by-write.txt", ws / "dangling.txt")  # dangling, pointing inside
    assert not call(ctx, "read_file", path="link.txt").is_error
    r = call(ctx, "write_file", path="link.txt", content="new\n")
    assert not r.is_error and "-old" in r.content and "+new" in r.content
    assert (ws / "real.txt").read_text() == "new\n" and os.path.islink(ws / "link.txt")
    assert not call(ctx, "write_file", path="dangling.txt", content="made\n").is_error
    assert (ws / "made-by-write.txt").read_text() == "made\n"
    r = call(ctx, "edit_file", path="link.txt", edits=[{"old_text": "new", "new_text": "edited"}])
    assert not r.is_error and (ws / "real.txt").read_text() == "edited\n"
