"""The git commands `kward.tools.gitstatus.Git` runs beyond ``git status`` of the whole
workspace, against real repositories: a status of some paths (a file, a directory, names
with globs), the ignored directories and ``check-ignore`` (names as they are), the
contents of HEAD's blobs through git's filters (end-of-line conversion, a filter driver
left out, names no batch line can carry, framing that does not trust git's size), and
the git directories of a repository and of a linked worktree."""

import os

from kward.cancel import CancelToken
from kward.tools.gitstatus import Git, git_dirs
from lib.git_repos import git, make_repo


def git_of(ws):
    found = Git.find(str(ws), dict(os.environ), CancelToken())
    assert found is not None
    return found


def test_a_status_of_some_paths(tmp_path):
    repo = make_repo(tmp_path / "repo", {"a/x.txt": "x\n", "a/y.txt": "y\n", "b/z.txt": "z\n", "st*r": "s\n"})
    for rel in ("a/x.txt", "b/z.txt", "st*r", "stXr"):
        (repo / rel).write_text("changed\n")
    g = git_of(repo)
    assert g.status(["a"]).paths == {"a/x.txt"}
    assert g.status(["b/z.txt", "a/y.txt"]).paths == {"b/z.txt"}
    assert g.status(["st*r"]).paths == {"st*r"}  # a literal name, not a glob
    assert g.status(["a"]).head == g.status().head is not None


def test_ignored_directories_and_check_ignore(tmp_path):
    repo = make_repo(tmp_path / "repo", {".gitignore": "build/\n*.log\n", "src/a.txt": "a\n"})
    (repo / "build" / "deep").mkdir(parents=True)
    (repo / "src" / "x.log").write_text("")
    g = git_of(repo)
    assert g.ignored_dirs() == {"build/"}
    names = ["build/", "src/", "src/x.log", "gone.log", "st*r.log", ":(exclude)x", "a b/c.log", "src/a.txt"]
    assert g.ignored(names) == {"build/", "src/x.log", "gone.log", "st*r.log", "a b/c.log"}
    assert g.ignored([]) == set()


def test_head_contents_through_the_filters(tmp_path):
    files = {"crlf.txt": "a\nb\n", "raw.bin": "r\n", "drv.dat": "d\n", "odd\nname.txt": "o\n", " lead.txt": "l\n",
             ".gitattributes": "*.txt text eol=crlf\ndrv.dat filter=up\n"}
    repo = make_repo(tmp_path / "repo", files)
    g = git_of(repo)
    head = g.status().head
    entries = g.head_entries(head, [p for p in files if p != ".gitattributes"])
    got = g.head_contents(entries, frozenset())
    assert got == {"crlf.txt": b"a\r\nb\r\n", "raw.bin": b"r\n", "drv.dat": b"d\n", "odd\nname.txt": b"o\r\n",
                   " lead.txt": b"l\r\n"}
    git(repo, "config", "filter.up.smudge", "tr a-z A-Z")
    assert g.filter_drivers() == {"up"}
    got = g.head_contents(entries)  # a configured driver: left out (it may be slow, or go to the network)
    assert "drv.dat" not in got and got["crlf.txt"] == b"a\r\nb\r\n"


def test_head_contents_in_a_subdirectory_workspace(tmp_path):
    repo = make_repo(tmp_path / "repo", {"sub/c.txt": "c\nd\n", ".gitattributes": "*.txt text eol=crlf\n"})
    g = git_of(repo / "sub")
    assert g.head_contents(g.head_entries(g.status().head, ["c.txt"]), frozenset()) == {"c.txt": b"c\r\nd\r\n"}


def test_git_directories_of_a_repository_and_a_worktree(tmp_path):
    repo = make_repo(tmp_path / "repo", {"a": "a\n"})
    assert git_dirs(str(repo)) == (str(repo / ".git"), str(repo / ".git"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    gitdir, common = git_dirs(str(tmp_path / "wt"))
    assert common == str(repo / ".git") and gitdir == str(repo / ".git" / "worktrees" / "wt")
    assert git_dirs(str(tmp_path)) is None
