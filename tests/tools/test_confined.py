"""kward.confined: the no-follow walk below a root, symlink hops, types, creation,
the descriptor-relative atomic replace and the removal of dead processes' temp files."""

from __future__ import annotations

import errno
import os
import re
import stat

import pytest

from kward.confined import (
    MAX_HOPS, Escape, open_below, pid_alive, read_fd, remove_dead_temps, replace_file, split_below,
)
from lib.processes import dead_pid


@pytest.fixture
def tree(tmp_path):
    """root/{a/b/f.txt, rel -> a, abs -> <root>/a/b, out -> ../outside, dotdot -> a/../a/b,
    loop1 <-> loop2, chain -> rel/b/f.txt, fifo}; tmp/outside/secret."""
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("hello")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret")
    os.symlink("a", root / "rel")
    os.symlink(root / "a" / "b", root / "abs")
    os.symlink("../outside", root / "out")
    os.symlink("a/../a/b", root / "dotdot")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.symlink("rel/b/f.txt", root / "chain")
    os.mkfifo(root / "fifo")
    return str(root)


def parts(path):
    return path.split("/") if path else []


def test_split_below():
    assert split_below("/r", "/r") == [] and split_below("/r", ".") == []
    assert split_below("/r", "a/./b//c/../d") == ["a", "b", "d"]
    assert split_below("/r", "/r/x") == ["x"]
    assert split_below("/r", "..") is None and split_below("/r", "/rx/y") is None
    assert split_below("/r", "a/../../r/x") == ["x"]  # textual: only where it ends counts
    assert split_below("/", "/etc/x") == ["etc", "x"]


def test_plain_walks_give_descriptors_and_real_parts(tree):
    with open_below(tree, parts("a/b/f.txt")) as node:
        assert node.is_file and node.parts == ["a", "b", "f.txt"] and node.path == tree + "/a/b/f.txt"
        assert read_fd(node.fd, 100) == b"hello"
    with open_below(tree, parts("a/b")) as node:
        assert node.is_dir and sorted(os.listdir(node.fd)) == ["f.txt"]
    with open_below(tree, []) as node:
        assert node.is_dir and node.parts == [] and node.path == tree


@pytest.mark.parametrize("path, real", [
    ("rel/b/f.txt", "a/b/f.txt"), ("abs/f.txt", "a/b/f.txt"), ("dotdot/f.txt", "a/b/f.txt"),
    ("chain", "a/b/f.txt"), ("rel", "a"),
])
def test_symlinks_inside_are_followed_to_real_parts(tree, path, real):
    with open_below(tree, parts(path)) as node:
        assert node.fd is not None and node.parts == parts(real)


def test_symlinks_pointing_out_are_refused(tree):
    for path in ("out", "out/secret"):
        with pytest.raises(Escape):
            open_below(tree, parts(path))


def test_no_symlink_at_all_without_follow(tree):
    for path in ("rel/b/f.txt", "chain", "abs"):
        with pytest.raises(Escape):
            open_below(tree, parts(path), follow=False)


def test_a_symlink_loop_stops_after_max_hops(tree):
    with pytest.raises(OSError) as info:
        open_below(tree, parts("loop1"))
    assert info.value.errno == errno.ELOOP and MAX_HOPS == 40


def test_missing_and_not_a_directory(tree):
    with pytest.raises(FileNotFoundError):
        open_below(tree, parts("a/nope"))
    node = open_below(tree, parts("rel/new/deeper.txt"), missing_ok=True)
    assert (node.fd, node.st, node.exists, node.parts) == (None, None, False, ["a", "new", "deeper.txt"])
    with pytest.raises(NotADirectoryError) as info:
        open_below(tree, parts("rel/b/f.txt/x"))
    assert info.value.filename == "a/b/f.txt"  # the resolved prefix that is a file


def test_a_fifo_is_reported_not_opened(tree):
    node = open_below(tree, ["fifo"])  # would block forever if it were opened for reading
    assert node.fd is None and stat.S_ISFIFO(node.st.st_mode) and not node.is_file and not node.is_dir


def test_create_makes_directories_but_not_through_symlinks(tree):
    with open_below(tree, parts("a/x/y/z"), follow=False, create=True) as node:
        assert node.is_dir and os.path.isdir(tree + "/a/x/y/z")
    with pytest.raises(Escape):
        open_below(tree, parts("out/created"), follow=False, create=True)
    assert sorted(os.listdir(os.path.join(tree, "..", "outside"))) == ["secret"]


def test_replace_file_is_relative_to_the_descriptor(tree):
    with open_below(tree, parts("a/b")) as node:
        replace_file(node.fd, "f.txt", b"new", 0o640, ".f.tmp")
        replace_file(node.fd, "g.txt", b"g", 0o600, ".g.tmp")
    assert open(tree + "/a/b/f.txt").read() == "new"
    assert stat.S_IMODE(os.stat(tree + "/a/b/f.txt").st_mode) == 0o640
    assert sorted(os.listdir(tree + "/a/b")) == ["f.txt", "g.txt"]


def test_remove_dead_temps_only_removes_files_of_dead_processes(tmp_path):
    tmp_path = tmp_path / "dir"
    tmp_path.mkdir()
    pattern = re.compile(r"\.t-(?P<pid>[0-9]{1,10})\.tmp")
    dead = dead_pid()
    assert not pid_alive(dead) and pid_alive(os.getpid()) and not pid_alive(0)
    names = [f".t-{dead}.tmp", f".t-{os.getpid()}.tmp", f".t-{os.getppid()}.tmp", "keep.txt", f".t-{dead}.tmpx"]
    for name in names:
        (tmp_path / name).write_text("x")
    os.mkdir(tmp_path / f".t-{dead_pid()}.tmp")  # a directory of that name stays
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert remove_dead_temps(fd, pattern) == 1
    finally:
        os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == sorted(names[1:])
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1
