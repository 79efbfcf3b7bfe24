"""`kward.tools.fswatch.DirWatcher` on real directories: what `collect` reports for files
created, written, renamed and deleted in nested directories, a rename across directories,
new directories (watched at once, with what is below them), directories deleted or moved,
what the policy skips (and what `vet` refuses), nested repositories, the git directory
(HEAD, a branch, the index) and ignore rules, and what makes it give up: an overflowing
queue, the watch cap, the workspace itself going away."""

import os
import shutil
import sys
from pathlib import Path

import pytest

from kward.tools import fswatch
from kward.tools.fswatch import DirWatcher, Unusable

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


def tree(root: Path, *dirs: str) -> Path:
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture
def watched(tmp_path):
    root = tree(tmp_path / "ws", "a/b", "c")
    (root / "a" / "b" / "f.txt").write_text("f")
    (root / "top.txt").write_text("t")
    made = []

    def make(**kw):
        made.append(DirWatcher(str(root), **kw))
        return made[-1]

    yield root, make
    for w in made:
        w.close()


def test_file_changes_in_nested_directories(watched):
    root, make = watched
    w = make()
    assert w.watches == 4 and w.collect().quiet
    (root / "a" / "b" / "f.txt").write_text("changed")
    (root / "c" / "new.txt").write_text("n")
    (root / "top.txt").unlink()
    os.chmod(root / "a" / "b" / "f.txt", 0o600)
    act = w.collect()
    assert act.dirty == {"", "a/b/", "c/"} and act.files() == {"a/b/f.txt", "c/new.txt", "top.txt"}
    assert not (act.new_dirs or act.gone_dirs or act.meta or act.rules or act.unknown)
    assert w.collect().quiet  # drained


def test_a_rename_across_directories_shows_in_both(watched):
    root, make = watched
    w = make()
    os.rename(root / "a" / "b" / "f.txt", root / "c" / "g.txt")
    act = w.collect()
    assert act.files() == {"a/b/f.txt", "c/g.txt"} and act.dirty == {"a/b/", "c/"}


def test_a_new_directory_is_watched_with_everything_below_it(watched):
    root, make = watched
    w = make()
    (root / "n" / "m" / "o").mkdir(parents=True)
    (root / "n" / "m" / "o" / "x.txt").write_text("x")
    act = w.collect()
    assert act.new_dirs == {"n/"} and act.dirty == {""} and act.files() == set()  # its content: unseen
    assert w.watches == 7
    (root / "n" / "m" / "o" / "x.txt").write_text("y")
    (root / "n" / "m" / "o" / "p").mkdir()
    act = w.collect()
    assert act.files() == {"n/m/o/x.txt"} and act.new_dirs == {"n/m/o/p/"}


def test_a_directory_made_and_removed_between_two_collects_is_nothing(watched):
    root, make = watched
    w = make()
    (root / "tmp" / "deep").mkdir(parents=True)
    shutil.rmtree(root / "tmp")
    act = w.collect()
    assert act.new_dirs == set() and act.gone_dirs == set() and not act.unknown


def test_a_directory_deleted_or_moved_drops_its_watches(watched):
    root, make = watched
    w = make()
    shutil.rmtree(root / "a")
    act = w.collect()
    assert act.gone_dirs == {"a/"} and act.dirty == {""} and not act.unknown
    assert w.watches == 2 and w.collect().quiet
    os.rename(root / "c", root / "d")
    act = w.collect()
    assert act.gone_dirs == {"c/"} and act.new_dirs == {"d/"} and not act.unknown
    (root / "d" / "z.txt").write_text("z")  # reported where it is now
    assert w.collect().files() == {"d/z.txt"}


def test_what_the_policy_skips_and_vet_refuses_is_not_watched(watched):
    root, make = watched
    w = make(skip=lambda parent, name: name == "node_modules")
    (root / "node_modules" / "p").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "kept").mkdir()
    act = w.collect(vet=lambda dirs: {d for d in dirs if d == "build/"})
    assert act.new_dirs == {"kept/"} and act.dirty == {""}
    (root / "node_modules" / "p" / "i.js").write_text("")
    (root / "build" / "out").write_text("")
    assert w.collect().quiet


def test_a_vet_that_fails_watches_everything(watched):
    root, make = watched
    w = make()
    (root / "new").mkdir()

    def broken(dirs):
        raise RuntimeError("git broke")

    assert w.collect(vet=broken).new_dirs == {"new/"}


def test_nested_repositories_are_left_alone(watched):
    root, make = watched
    (root / "c" / ".git").mkdir()
    w = make(nested_repos=True)
    assert w.watches == 3  # ws, a, a/b
    (root / "c" / "x").write_text("")
    assert w.collect().quiet
    (root / "a" / ".git").write_text("gitdir: elsewhere\n")  # a worktree linked inside: look again
    assert w.collect().unknown


def test_git_directory_and_rules(tmp_path):
    ws = tree(tmp_path / "repo", "sub/ws/d", ".git/refs/heads", ".git/info")
    git = ws / ".git"
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    w = DirWatcher(str(ws / "sub" / "ws"), nested_repos=True,
                   meta_dirs=[(str(git), False), (str(git / "refs" / "heads"), True), (str(git / "info"), False)],
                   rule_dirs=[str(ws / "sub"), str(ws)])
    try:
        (git / "index").write_text("i")
        (git / "FETCH_HEAD").write_text("f")
        (ws / "outside.txt").write_text("o")  # above the workspace: only its rule files count
        assert w.collect().quiet
        (git / "refs" / "heads" / "main").write_text("1" * 40)
        act = w.collect()
        assert act.meta and not act.unknown
        (git / "refs" / "heads" / "feature").mkdir()
        assert w.collect().meta
        (git / "refs" / "heads" / "feature" / "x").write_text("2" * 40)  # watched since it was made
        assert w.collect().meta
        (git / "info" / "exclude").write_text("*.o\n")
        assert w.collect().meta
        (ws / ".gitignore").write_text("*.log\n")
        act = w.collect()
        assert act.rules and not act.meta
        (ws / "sub" / "ws" / "d" / ".gitattributes").write_text("* text\n")
        act = w.collect()
        assert act.rules and act.files() == {"d/.gitattributes"}
    finally:
        w.close()


def test_an_overflowing_queue_makes_it_unknown(watched):
    root, make = watched
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip(f"max_queued_events is {limit}")
    w = make()
    for _ in range(limit // 2 + 10):
        os.utime(root / "top.txt")
        os.utime(root / "a" / "b" / "f.txt")
    assert w.collect().unknown
    assert not w.usable and w.collect().unknown  # given up: its owner opens a new one


def test_past_the_watch_cap_it_is_unusable(watched, monkeypatch):
    root, make = watched
    with pytest.raises(Unusable):
        make(max_watches=3)
    w = make(max_watches=5)
    (root / "x" / "y").mkdir(parents=True)
    assert w.collect().unknown and not w.usable


def test_the_workspace_going_away_makes_it_unknown(watched):
    root, make = watched
    w = make()
    os.rename(root, root.with_name("moved"))
    assert w.collect().unknown


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_a_directory_it_cannot_list_makes_it_unusable(watched):
    root, make = watched
    os.chmod(root / "c", 0)
    try:
        with pytest.raises(Unusable):
            make()
    finally:
        os.chmod(root / "c", 0o755)


def test_without_inotify_the_caller_is_told(watched, monkeypatch):
    root, make = watched
    monkeypatch.setattr(fswatch.inotify, "_libc", None)
    monkeypatch.setattr(fswatch.inotify.sys, "platform", "darwin")
    with pytest.raises(fswatch.inotify.Unavailable):
        make()
