"""What run_shell_command changed, in this process with real files, real git repositories
and real commands: statuses and baselines (`FileChange.before`) in a git work tree and in a
plain workspace, what is never reported (ignored files, paths outside the workspace, index-
only changes, a touch), HEAD moved by the command, a subdirectory workspace, the caps, the
fallbacks (no git, a broken repository) and that detection never fails the command. Each
runs twice: with the looks kept between commands (a watcher) and with ``KWARD_NO_FSWATCH``
(two whole looks per command); tests/tools/test_shell_changes_kept.py has what only the
first does."""

import os
import threading
from pathlib import Path

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.tools import baselines, gitlook, shell, snapshot
from kward.tools import changes as changes_mod
from kward.tools.shell import CanceledCommand
from lib.git_repos import GIT_ENV, git, make_repo, write_files
from lib.tools_helpers import call, make_ctx
from lib.waiting import wait_until


@pytest.fixture(autouse=True, params=["watched", "KWARD_NO_FSWATCH"])
def watcher_mode(request, monkeypatch):
    if request.param == "KWARD_NO_FSWATCH":
        monkeypatch.setenv("KWARD_NO_FSWATCH", "1")
    return request.param


def sh(ctx, command, **kw):
    return call(ctx, "run_shell_command", command=command, **kw)


def found(result):
    """{path: (status, before)} of a result, checking that changed_files lists the same paths."""
    got = {c.path: (c.status, c.before) for c in result.changes}
    assert result.changed_files == (sorted(got) or None)
    assert [c.path for c in result.changes] == sorted(got)
    return got


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", {"clean.txt": "clean\n", "dirty.txt": "dirty\n", "gone.txt": "gone\n",
                                         "old.txt": "old\n", ".gitignore": "*.log\nbuild/\n", "sub/s.txt": "s\n"})


@pytest.fixture
def plain(tmp_path):
    ws = tmp_path / "plain"
    write_files(ws, {"clean.txt": "clean\n", "gone.txt": "gone\n", "old.txt": "old\n"})
    return ws


def test_git_statuses_and_baselines(repo):
    (repo / "dirty.txt").write_text("dirty\nalready\n")
    (repo / "untracked.txt").write_text("u\n")
    ctx = make_ctx(repo)
    r = sh(ctx, "echo more >> clean.txt; echo again >> dirty.txt; echo new > new.txt; rm gone.txt; "
                "mv old.txt renamed.txt; echo uu >> untracked.txt; mkdir -p d/e; echo deep > d/e/f.txt")
    assert r.is_error is False and r.changes_complete is True
    assert found(r) == {
        "clean.txt": ("modified", b"clean\n"),  # HEAD's blob
        "dirty.txt": ("modified", b"dirty\nalready\n"),  # the bytes before the command
        "untracked.txt": ("modified", b"u\n"),
        "gone.txt": ("deleted", b"gone\n"),
        "old.txt": ("deleted", b"old\n"), "renamed.txt": ("added", b""),
        "new.txt": ("added", b""), "d/e/f.txt": ("added", b""),
    }
    # the next command sees the state the last one left: a dirty file deleted, an added one modified
    r = sh(ctx, "rm dirty.txt; echo newer >> new.txt")
    assert found(r) == {"dirty.txt": ("deleted", b"dirty\nalready\nagain\n"), "new.txt": ("modified", b"new\n")}
    assert sh(ctx, "cat clean.txt").changes == ()


def test_git_never_reports_ignored_outside_index_only_or_same_content(repo, tmp_path):
    (repo / "staged.txt").write_text("s\n")
    ctx = make_ctx(repo)
    outside = tmp_path / "outside.txt"
    r = sh(ctx, f"echo l > x.log; mkdir -p build; echo b > build/out.bin; echo o > ../outside.txt; echo a > '{outside}2'; "
                "git add staged.txt dirty.txt; git rm -q --cached clean.txt; touch old.txt; "
                "cp sub/s.txt sub/s.tmp && mv sub/s.tmp sub/s.txt; mkdir -p nested && cd nested && git init -q && echo n > n")
    assert outside.read_text() == "o\n" and (repo / "x.log").exists() and (repo / "nested" / "n").exists()
    assert found(r) == {}
    assert r.changes_complete is True


def test_git_mode_change_and_symlinks(repo):
    os.symlink("clean.txt", repo / "link")
    git(repo, "add", "link")
    git(repo, "commit", "-qm", "link")
    ctx = make_ctx(repo)
    r = sh(ctx, "chmod +x clean.txt; ln -sf old.txt link; ln -s gone.txt link2")
    assert found(r) == {"clean.txt": ("modified", b"clean\n"), "link": ("modified", None), "link2": ("added", b"")}
    assert sh(ctx, "ln -sf old.txt link").changes == ()  # the same target again


@pytest.mark.parametrize("kind", ["git", "plain"])
def test_a_file_replaced_by_a_directory(repo, plain, kind):
    ctx = make_ctx(repo if kind == "git" else plain)
    r = sh(ctx, "rm clean.txt && mkdir clean.txt && echo x > clean.txt/inner")
    assert found(r) == {"clean.txt": ("deleted", b"clean\n" if kind == "git" else None),
                        "clean.txt/inner": ("added", b"")}


def test_git_head_moved_by_the_command(repo):
    ctx = make_ctx(repo, env=dict(GIT_ENV))
    git(repo, "checkout", "-qb", "other")
    write_files(repo, {"clean.txt": "other branch\n", "only-other.txt": "o\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "other")
    git(repo, "checkout", "-q", "-")
    # a commit of the command's own change, and a new file committed at once
    r = sh(ctx, "echo c >> dirty.txt && echo n > n.txt && git add -A && git commit -qm mine")
    assert r.content == "Exit status: 0\n" and git(repo, "status", "--porcelain") == ""
    assert found(r) == {"dirty.txt": ("modified", b"dirty\n"), "n.txt": ("added", b"")}
    # a checkout that rewrites tracked files leaves them clean: still reported
    r = sh(ctx, "git checkout -q other")
    assert r.content == "Exit status: 0\n"
    assert found(r) == {"clean.txt": ("modified", b"clean\n"), "dirty.txt": ("modified", b"dirty\nc\n"),
                        "n.txt": ("deleted", b"n\n"), "only-other.txt": ("added", b"")}


def test_git_first_commit_of_a_new_repository(tmp_path):
    ws = tmp_path / "fresh"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    ctx = make_ctx(ws, env=dict(GIT_ENV))
    r = sh(ctx, "echo b > b.txt && git add -A && git commit -qm first")
    assert found(r) == {"b.txt": ("added", b"")}


def test_git_workspace_in_a_subdirectory_of_the_repository(repo):
    ctx = make_ctx(repo / "sub")
    r = sh(ctx, "echo x >> s.txt; echo n > 'n e w.txt'; echo up >> ../clean.txt; echo top > ../top.txt")
    assert found(r) == {"s.txt": ("modified", b"s\n"), "n e w.txt": ("added", b"")}
    assert (repo / "top.txt").exists()


def test_git_names_with_newlines_globs_and_unicode(repo):
    ctx = make_ctx(repo)
    names = ["line\nbreak.txt", "st*r.txt", "日本 語.txt"]
    r = sh(ctx, "printf a > \"$(printf 'line\\nbreak.txt')\"; printf b > 'st*r.txt'; printf c > '日本 語.txt'")
    assert sorted(found(r)) == sorted(names)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "names")
    r = sh(ctx, "for f in *.txt; do echo more >> \"$f\"; done; echo x >> \"$(printf 'line\\nbreak.txt')\"")
    got = found(r)
    assert got["st*r.txt"] == ("modified", b"b") and got["日本 語.txt"] == ("modified", b"c")
    assert got["line\nbreak.txt"] == ("modified", b"a")


def test_git_baselines_are_bounded(repo, monkeypatch):
    big = b"x" * (baselines.MAX_FILE_BYTES + 1)
    (repo / "big.bin").write_bytes(big)
    git(repo, "add", "big.bin")
    git(repo, "commit", "-qm", "big")
    (repo / "bigdirty.bin").write_bytes(big)
    monkeypatch.setattr(baselines, "MAX_CALL_BYTES", 9)
    write_files(repo, {"d1.txt": "12345", "d2.txt": "67890"})  # untracked, 5 bytes each: one fits
    ctx = make_ctx(repo)
    r = sh(ctx, "echo >> big.bin; echo >> bigdirty.bin; echo >> d1.txt; echo >> d2.txt")
    got = found(r)
    assert got["big.bin"] == ("modified", None) and got["bigdirty.bin"] == ("modified", None)
    assert sorted([got["d1.txt"][1], got["d2.txt"][1]], key=str) == [None, b"12345"]


def test_git_index_is_not_written(repo):
    os.utime(repo / "clean.txt", ns=(1, 1_000_000_000))  # the index's stat data is stale now
    index = (repo / ".git" / "index").read_bytes()
    ctx = make_ctx(repo)
    assert sh(ctx, "true").changes == ()
    assert (repo / ".git" / "index").read_bytes() == index


def test_redirecting_git_variables_are_ignored(repo, tmp_path):
    other = make_repo(tmp_path / "other", {"o.txt": "o\n"})
    ctx = make_ctx(repo, env={"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)})
    r = sh(ctx, "unset GIT_DIR GIT_WORK_TREE; echo l > x.log; echo c >> clean.txt")
    assert found(r) == {"clean.txt": ("modified", b"clean\n")}  # the workspace's repository: x.log ignored


@pytest.mark.parametrize("broken", ["no git on PATH", "a broken repository"])
def test_without_git_a_snapshot_is_used(repo, tmp_path, broken, monkeypatch):
    if broken == "no git on PATH":
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for tool in ("rm", "mv", "cat"):
            os.symlink(f"/bin/{tool}", bin_dir / tool)
        monkeypatch.setenv("PATH", str(bin_dir))
    else:
        (repo / ".git" / "HEAD").write_text("garbage\n")
    ctx = make_ctx(repo)
    r = sh(ctx, "echo l > x.log; echo c >> clean.txt; rm gone.txt; mv old.txt new.txt; echo o > ../outside.txt")
    assert r.content == "Exit status: 0\n"
    assert found(r) == {"x.log": ("added", b""), "clean.txt": ("modified", None), "gone.txt": ("deleted", None),
                        "old.txt": ("deleted", None), "new.txt": ("added", b"")}


def test_a_git_that_does_not_answer_is_not_asked_again(repo, tmp_path, monkeypatch):
    from kward.tools import gitstatus

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "git-calls"
    (bin_dir / "git").write_text(f"#!/bin/sh\necho \"$@\" >> '{calls}'\nexec sleep 30\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(gitstatus, "GIT_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(changes_mod, "_slow_git", {})
    ctx = make_ctx(repo)
    assert found(sh(ctx, "echo l > x.log")) == {"x.log": ("added", b"")}  # git timed out: a snapshot
    assert found(sh(ctx, "echo c >> clean.txt")) == {"clean.txt": ("modified", None)}
    assert len(calls.read_text().splitlines()) == 1  # asked once


def test_plain_workspace_statuses(plain):
    ctx = make_ctx(plain)
    r = sh(ctx, "echo more >> clean.txt; rm gone.txt; mv old.txt new.txt; echo o > ../outside.txt; "
                "mkdir -p node_modules/p .venv && echo x > node_modules/p/i.js && echo v > .venv/v; "
                "ln -s /etc link; mkdir d && echo d > d/f")
    assert found(r) == {"clean.txt": ("modified", None), "gone.txt": ("deleted", None), "old.txt": ("deleted", None),
                        "new.txt": ("added", b""), "link": ("added", b""), "d/f": ("added", b"")}
    assert r.changes_complete is True
    assert found(sh(ctx, "touch clean.txt")) == {"clean.txt": ("modified", None)}  # no content kept: a touch counts
    assert sh(ctx, "cat clean.txt").changes == ()


@pytest.mark.parametrize("kind", ["git", "plain"])
def test_a_rewrite_that_keeps_size_and_mtime_is_seen_in_a_recent_file(repo, plain, kind):
    ws = repo if kind == "git" else plain
    (ws / "recent.txt").write_text("abc\n")  # just written: its signature may not show a second write
    ctx = make_ctx(ws)
    mtime = os.stat(ws / "recent.txt").st_mtime_ns
    r = sh(ctx, f"printf 'XYZ\\n' > recent.txt && python3 -c 'import os; os.utime(\"recent.txt\", ns=({mtime}, {mtime}))'")
    assert os.stat(ws / "recent.txt").st_mtime_ns == mtime
    assert found(r)["recent.txt"][0] == "modified"
    assert sh(ctx, "cat recent.txt").changes == ()  # read only: compared, equal


def test_a_timed_out_command_reports_what_it_wrote(plain):
    ctx = make_ctx(plain)
    r = sh(ctx, "echo t > t.txt; sleep 30", timeout_seconds=1)
    assert (r.is_error, r.content) == (True, "Error: command timed out after 1 seconds")
    assert found(r) == {"t.txt": ("added", b"")}


def test_a_cancelled_command_reports_what_it_wrote(plain):
    ctx = make_ctx(plain, cancel=CancelToken())
    errors = []

    def run():
        try:
            sh(ctx, "echo c > c.txt; sleep 30")
        except Canceled as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: (plain / "c.txt").exists(), what="the command's file")
    ctx.cancel.cancel()
    t.join(10)
    assert not t.is_alive() and len(errors) == 1
    assert isinstance(errors[0], CanceledCommand) and errors[0].result.content == "Cancelled."
    assert found(errors[0].result) == {"c.txt": ("added", b"")}


@pytest.mark.parametrize("kind", ["git", "plain"])
def test_the_look_after_a_cancel_is_bounded(repo, plain, kind, monkeypatch):
    monkeypatch.setattr(shell, "CANCEL_LOOK_SECONDS", 0.0)
    ws = repo if kind == "git" else plain
    ctx = make_ctx(ws, cancel=CancelToken())
    sh(ctx, "true")
    errors = []

    def run():
        try:
            sh(ctx, "echo c > c.txt; sleep 30")
        except CanceledCommand as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: (ws / "c.txt").exists(), what="the command's file")
    ctx.cancel.cancel()
    t.join(10)
    result = errors[0].result
    assert (result.content, result.changes, result.changes_complete) == ("Cancelled.", (), False)  # no time left
    assert found(sh(make_ctx(ws), "rm c.txt")) == {"c.txt": ("deleted", b"c\n" if kind == "git" else None)}


def test_caps_report_nothing_and_say_so(repo, plain, monkeypatch):
    monkeypatch.setattr(gitlook, "MAX_ENTRIES", 3)
    write_files(repo, {f"u{i}": "" for i in range(4)})
    r = sh(make_ctx(repo), "echo x > new.txt")
    assert (r.changes, r.changed_files, r.changes_complete) == ((), None, False)
    monkeypatch.setattr(snapshot, "MAX_ENTRIES", 3)
    monkeypatch.setattr(snapshot.take, "__kwdefaults__", {"max_entries": 3, "recent_since_ns": None})
    r = sh(make_ctx(plain), "echo x > new.txt")
    assert (r.changes, r.changed_files, r.changes_complete) == ((), None, False)
    assert r.content == "Exit status: 0\n"


def test_a_failing_detection_never_fails_the_command(plain, monkeypatch):
    def broken(*a, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(snapshot, "take", broken)
    r = sh(make_ctx(plain), "echo hi; echo x > x.txt")
    assert (r.content, r.is_error) == ("Exit status: 0\n\nSTDOUT:\nhi\n", False)
    assert (r.changes, r.changed_files, r.changes_complete) == ((), None, False)
    assert Path(plain / "x.txt").exists()
