"""The looks run_shell_command keeps between commands (`kward.tools.lookcache`, with a
`DirWatcher`), in this process with real files, real git and real commands: a change made
between two commands (by another process, by kward's own write tool, a directory made, HEAD
moved by a checkout or a commit) is reported by neither and is the baseline of the next
change; what runs in the background after a command returned; a kept look is reused (no
git, no walk when nothing changed; one restricted git status when something did); two
commands at once in one workspace; ``KWARD_NO_FSWATCH``; a watcher that cannot be opened;
a cancelled command's changes; baselines of clean files through git's filters."""

import subprocess
import sys
import threading

import pytest

from kward.cancel import CancelToken
from kward.tools import fswatch, gitstatus, lookcache, snapshot
from kward.tools.shell import CanceledCommand
from lib.git_repos import GIT_ENV, git, make_repo, write_files
from lib.tools_helpers import call, make_ctx
from lib.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watcher is Linux only")


def sh(ctx, command, **kw):
    return call(ctx, "run_shell_command", command=command, **kw)


def found(result):
    got = {c.path: (c.status, c.before) for c in result.changes}
    assert result.changed_files == (sorted(got) or None)
    return got


def elsewhere(ws, command):
    """`command` run by another process than kward (as an editor or a build would)."""
    subprocess.run(["/bin/sh", "-c", command], cwd=ws, check=True, env={**GIT_ENV, "PATH": "/usr/bin:/bin"})


@pytest.fixture(params=["git", "plain"])
def kind(request):
    return request.param


@pytest.fixture
def ws(tmp_path, kind):
    files = {"clean.txt": "clean\n", "gone.txt": "gone\n", "sub/s.txt": "s\n"}
    if kind == "git":
        return make_repo(tmp_path / "repo", {**files, ".gitignore": "*.log\n"})
    write_files(tmp_path / "plain", files)
    return tmp_path / "plain"


@pytest.fixture
def git_calls(monkeypatch):
    """The argv of every git command kward runs (subcommand first)."""
    calls = []
    run = gitstatus.Git._run

    def counted(self, args, *a, **kw):
        calls.append(list(args))
        return run(self, args, *a, **kw)

    monkeypatch.setattr(gitstatus.Git, "_run", counted)
    return calls


def test_a_change_between_commands_is_reported_by_neither_and_is_the_next_baseline(ws, kind):
    ctx = make_ctx(ws)
    assert found(sh(ctx, "echo 1 > u.txt")) == {"u.txt": ("added", b"")}
    elsewhere(ws, "echo between >> u.txt; echo between >> clean.txt; echo b > b.txt; rm gone.txt; "
                  "mkdir -p new/deep && echo n > new/deep/n.txt")
    call(ctx, "write_file", path="w.txt", content="written\n")  # kward's own tool, between commands
    assert found(sh(ctx, "true")) == {}
    r = sh(ctx, "echo again >> u.txt; echo again >> clean.txt; echo again >> w.txt; echo again >> new/deep/n.txt")
    known = kind == "git"  # a snapshot keeps no baselines
    assert found(r) == {"u.txt": ("modified", b"1\nbetween\n" if known else None),
                        "clean.txt": ("modified", b"clean\nbetween\n" if known else None),
                        "w.txt": ("modified", b"written\n" if known else None),
                        "new/deep/n.txt": ("modified", b"n\n" if known else None)}
    assert found(sh(ctx, "cat u.txt")) == {}


def test_what_a_background_process_writes_after_the_command_returned(ws):
    ctx = make_ctx(ws)
    r = sh(ctx, "(while [ ! -e go ]; do sleep 0.01; done; echo late > late.txt) >/dev/null 2>&1 &")
    assert found(r) == {}
    elsewhere(ws, "touch go")
    wait_until(lambda: (ws / "late.txt").exists(), what="the background write")
    assert found(sh(ctx, "true")) == {}  # it happened between the commands
    assert found(sh(ctx, "rm late.txt"))["late.txt"][0] == "deleted"


def test_a_kept_look_is_reused(ws, kind, git_calls, monkeypatch):
    ctx = make_ctx(ws)
    sh(ctx, "true")  # the first look of the workspace: a full one
    walks = []
    take = snapshot.take
    monkeypatch.setattr(snapshot, "take", lambda *a, **kw: walks.append(a) or take(*a, **kw))
    git_calls.clear()
    assert found(sh(ctx, "true")) == {}
    assert (git_calls, walks) == ([], [])  # nothing changed: neither git nor a walk
    assert found(sh(ctx, "echo x >> sub/s.txt"))["sub/s.txt"][0] == "modified"
    statuses = [c for c in git_calls if c[0] == "status"]
    assert walks == [] and (statuses == [] if kind == "plain" else [c[-1] for c in statuses] == ["sub/s.txt"])


def test_head_moved_between_commands(tmp_path):
    repo = make_repo(tmp_path / "repo", {"clean.txt": "clean\n", "dirty.txt": "dirty\n"})
    git(repo, "checkout", "-qb", "other")
    write_files(repo, {"clean.txt": "other branch\n", "only-other.txt": "o\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "other")
    git(repo, "checkout", "-q", "-")
    ctx = make_ctx(repo)
    assert found(sh(ctx, "echo more >> dirty.txt")) == {"dirty.txt": ("modified", b"dirty\n")}
    git(repo, "checkout", "-q", "-f", "other")  # between the commands: dirty.txt's change is gone too
    assert found(sh(ctx, "true")) == {}
    r = sh(ctx, "echo x >> clean.txt; echo y >> only-other.txt; echo z >> dirty.txt")
    assert found(r) == {"clean.txt": ("modified", b"other branch\n"), "only-other.txt": ("modified", b"o\n"),
                        "dirty.txt": ("modified", b"dirty\n")}
    git(repo, "commit", "-qam", "mine")  # a commit between: the next baseline is what was committed
    assert found(sh(ctx, "true")) == {}
    assert found(sh(ctx, "rm clean.txt")) == {"clean.txt": ("deleted", b"other branch\nx\n")}


def test_two_commands_at_once_in_one_workspace(ws):
    ctx = make_ctx(ws, cancel=CancelToken())
    results = []
    first = threading.Thread(target=lambda: results.append(
        sh(ctx, "touch started; while [ ! -e go ]; do sleep 0.01; done; echo a > a.txt")))
    first.start()
    wait_until(lambda: (ws / "started").exists(), what="the first command to run")
    assert found(sh(ctx, "echo b > b.txt")) == {"b.txt": ("added", b"")}  # looked at without the kept look
    elsewhere(ws, "touch go")
    first.join(20)
    assert not first.is_alive()
    assert set(found(results[0])) == {"started", "a.txt", "b.txt", "go"}  # (what ran meanwhile shows in both)
    assert found(sh(ctx, "true")) == {}


def test_kward_no_fswatch_looks_twice_and_keeps_nothing(ws, kind, git_calls, monkeypatch):
    monkeypatch.setenv("KWARD_NO_FSWATCH", "1")
    ctx = make_ctx(ws)
    sh(ctx, "true")
    git_calls.clear()
    assert found(sh(ctx, "echo x >> sub/s.txt"))["sub/s.txt"][0] == "modified"
    elsewhere(ws, "echo between >> clean.txt")
    assert found(sh(ctx, "true")) == {}
    assert str(ws) not in lookcache.REGISTRY
    if kind == "git":  # two full statuses per command
        assert [c[-1] for c in git_calls if c[0] == "status"] == ["."] * 4


def test_without_a_watcher_every_look_is_whole(ws, monkeypatch):
    monkeypatch.setattr(fswatch, "MAX_WATCHES", 1)
    ctx = make_ctx(ws)
    assert found(sh(ctx, "echo x >> sub/s.txt; echo n > n.txt"))["n.txt"] == ("added", b"")
    elsewhere(ws, "echo between >> clean.txt")
    assert found(sh(ctx, "true")) == {}
    slot = lookcache.REGISTRY.checkout(str(ws))
    try:
        assert slot is not None and slot.watcher is None and slot.look is None and slot.retry_at > 0
    finally:
        lookcache.REGISTRY.checkin(slot)


def test_a_cancelled_command_reports_what_it_wrote(ws, kind):
    ctx = make_ctx(ws, cancel=CancelToken())
    errors = []

    def run():
        try:
            sh(ctx, "echo c > c.txt; rm gone.txt; sleep 30")
        except CanceledCommand as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: (ws / "c.txt").exists() and not (ws / "gone.txt").exists(), what="the command's changes")
    ctx.cancel.cancel()
    t.join(10)
    assert not t.is_alive() and len(errors) == 1
    result = errors[0].result
    assert (result.content, result.changes_complete) == ("Cancelled.", True)
    assert found(result) == {"c.txt": ("added", b""), "gone.txt": ("deleted", b"gone\n" if kind == "git" else None)}
    assert found(sh(make_ctx(ws), "true")) == {}  # and the kept look is right for the next one


@pytest.mark.parametrize("fswatch_off", ["", "1"])
def test_baselines_of_clean_files_are_what_a_checkout_writes(tmp_path, monkeypatch, fswatch_off):
    monkeypatch.setenv("KWARD_NO_FSWATCH", fswatch_off)
    repo = make_repo(tmp_path / "repo", {"crlf.txt": "a\nb\n", "plain.bin": "x\ny\n", "lfs.dat": "pointer\n",
                                         "auto.txt": "p\nq\n",
                                         ".gitattributes": "crlf.txt text eol=crlf\nlfs.dat filter=fake\n"})
    git(repo, "config", "core.autocrlf", "true")
    git(repo, "config", "filter.fake.smudge", "tr a-z A-Z")
    git(repo, "config", "filter.fake.clean", "tr A-Z a-z")
    for name in ("crlf.txt", "auto.txt", "lfs.dat"):
        (repo / name).unlink()
    git(repo, "checkout", "--", ".")
    assert (repo / "crlf.txt").read_bytes() == b"a\r\nb\r\n" and (repo / "lfs.dat").read_bytes() == b"POINTER\r\n"
    ctx = make_ctx(repo)
    r = sh(ctx, "echo c >> crlf.txt; echo z >> auto.txt; echo more >> lfs.dat; echo w >> plain.bin")
    assert found(r) == {"crlf.txt": ("modified", b"a\r\nb\r\n"), "auto.txt": ("modified", b"p\r\nq\r\n"),
                        "lfs.dat": ("modified", None),  # a filter driver: not run, the baseline is unknown
                        "plain.bin": ("modified", b"x\r\ny\r\n")}  # (autocrlf: any text file)


def test_directories_git_ignores_are_not_watched(tmp_path, git_calls):
    repo = make_repo(tmp_path / "repo", {".gitignore": "build/\ncache/\n", "src/a.txt": "a\n"})
    (repo / "cache").mkdir()
    ctx = make_ctx(repo)
    sh(ctx, "true")
    git_calls.clear()
    assert found(sh(ctx, "echo x > cache/f")) == {} and git_calls == []  # ignored when the watcher opened
    r = sh(ctx, "mkdir -p build/x src/new && echo y > build/x/f && echo z > src/new/z.txt")
    assert found(r) == {"src/new/z.txt": ("added", b"")}
    assert ["check-ignore", "-z", "--stdin"] in git_calls  # the new directories vetted
    git_calls.clear()
    assert found(sh(ctx, "echo w >> build/x/f")) == {} and git_calls == []  # unwatched since
    assert found(sh(ctx, "echo w >> src/new/z.txt"))["src/new/z.txt"] == ("modified", b"z\n")
