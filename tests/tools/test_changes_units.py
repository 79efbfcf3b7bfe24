"""The pure parts of changed-file detection: the ``git status --porcelain=v2 -z`` parser
(odd file names, every record kind, the workspace prefix), the git environment, the
snapshot walk and its diff (what it skips, its cap, symlinks, unreadable directories)
and the baseline cache."""

import os

import pytest

from kward.tools import snapshot
from kward.tools.changes import BaselineCache, read_file
from kward.tools.gitstatus import Status, find_toplevel, git_environment, parse_status
from kward.tools.snapshot import signature

H = "0" * 40
H1 = "1" * 40


def z(*records: str | bytes) -> bytes:
    return b"".join((r.encode() if isinstance(r, str) else r) + b"\0" for r in records)


# --- the porcelain parser ---------------------------------------------------------------

def test_parse_every_record_kind():
    out = z(f"# branch.oid {H1}", "# branch.head main",
            f"1 .M N... 100644 100644 100644 {H} {H} changed.txt",
            f"1 A. N... 000000 100644 100644 {H} {H} staged.txt",
            f"2 R. N... 100644 100644 100644 {H} {H} R100 new name.txt", "old name.txt",
            f"u UU N... 100644 100644 100644 100644 {H} {H} {H} conflict.txt",
            "? untracked.txt", "! ignored.log")
    assert parse_status(out) == Status(H1, frozenset({"changed.txt", "staged.txt", "new name.txt", "old name.txt",
                                                      "conflict.txt", "untracked.txt"}))


def test_parse_names_with_spaces_newlines_and_unicode():
    names = ["with space.txt", "new\nline.txt", "tab\there", "ünïcødé/日本.txt", " lead and trail ", "a\\b\"c"]
    out = z(f"# branch.oid {H1}", *(f"? {n}" for n in names[:3]),
            *(f"1 .M N... 100644 100644 100644 {H} {H} {n}" for n in names[3:]))
    assert parse_status(out).paths == frozenset(names)


def test_parse_non_utf8_names_round_trip_to_the_file_system():
    out = z(f"# branch.oid {H1}", b"? caf\xe9.txt")
    (name,) = parse_status(out).paths
    assert os.fsencode(name) == b"caf\xe9.txt"


def test_parse_initial_head_and_empty_output():
    assert parse_status(z("# branch.oid (initial)", "# branch.head main", "? a")) == Status(None, frozenset({"a"}))
    assert parse_status(b"") == Status(None, frozenset())


def test_parse_strips_the_workspace_prefix_and_leaves_out_directories():
    out = z(f"# branch.oid {H1}", f"1 .M N... 100644 100644 100644 {H} {H} sub/dir/a.txt", "? sub/nested/",
            "? sub/b")
    assert parse_status(out, "sub/").paths == frozenset({"dir/a.txt", "b"})


@pytest.mark.parametrize("bad", [
    z("? sub/a", "? other/b"),  # a path outside the workspace
    z("1 .M N... 100644 short"),  # too few fields
    z("x what is this"),
    z(f"2 R. N... 100644 100644 100644 {H} {H} R100 new"),  # the original path missing
])
def test_parse_refuses_what_it_cannot_read(bad):
    with pytest.raises(ValueError):
        parse_status(bad, "sub/")


def test_git_environment_drops_redirections_and_sets_the_safe_options():
    env = git_environment({"PATH": "/bin", "GIT_DIR": "/elsewhere/.git", "GIT_WORK_TREE": "/w",
                           "GIT_INDEX_FILE": "/i", "GIT_TRACE": "1", "GIT_TRACE_PACKET": "1",
                           "GIT_CEILING_DIRECTORIES": "/home", "GIT_AUTHOR_NAME": "kept"})
    assert env == {"PATH": "/bin", "GIT_CEILING_DIRECTORIES": "/home", "GIT_AUTHOR_NAME": "kept",
                   "GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1", "GIT_TERMINAL_PROMPT": "0"}


def test_find_toplevel_takes_the_nearest_git_dir_or_file(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "wt").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "wt" / ".git").write_text("gitdir: /somewhere\n")
    assert find_toplevel(str(tmp_path / "repo" / "a")) == str(tmp_path / "repo")
    assert find_toplevel(str(tmp_path / "repo" / "a" / "wt")) == str(tmp_path / "repo" / "a" / "wt")


# --- the snapshot -----------------------------------------------------------------------

def files(root, mapping):
    for rel, text in mapping.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_snapshot_diff_added_modified_deleted_renamed(tmp_path):
    files(tmp_path, {"keep.txt": "k", "mod.txt": "m", "gone.txt": "g", "old.txt": "o", "d/e/deep.txt": "d"})
    before = snapshot.take(str(tmp_path))
    (tmp_path / "new.txt").write_text("n")
    (tmp_path / "mod.txt").write_text("mm")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "old.txt").rename(tmp_path / "d" / "moved.txt")
    (tmp_path / "d" / "e" / "deep.txt").unlink()
    (tmp_path / "d" / "e").rmdir()
    after = snapshot.take(str(tmp_path))
    assert snapshot.diff(before, after) == [("d/e/deep.txt", "deleted"), ("d/moved.txt", "added"),
                                            ("gone.txt", "deleted"), ("mod.txt", "modified"), ("new.txt", "added"),
                                            ("old.txt", "deleted")]
    assert before.complete and after.complete and snapshot.diff(after, after) == []


def test_snapshot_signature_sees_a_rewrite_of_the_same_size_and_a_chmod(tmp_path):
    files(tmp_path, {"a": "one", "b": "two"})
    os.utime(tmp_path / "a", ns=(1, 1_000_000_000))
    before = snapshot.take(str(tmp_path))
    (tmp_path / "a").write_text("ONE")  # same size, new mtime
    os.chmod(tmp_path / "b", 0o755)
    assert snapshot.diff(before, snapshot.take(str(tmp_path))) == [("a", "modified"), ("b", "modified")]


def test_snapshot_skips_tool_trees_and_never_follows_symlinks(tmp_path):
    outside = tmp_path / "outside"
    files(outside, {"o.txt": "o"})
    ws = tmp_path / "ws"
    files(ws, {"src/a.py": "a"})
    for skipped in sorted(snapshot.SKIP_DIRS):
        files(ws, {f"{skipped}/x": "x", f"src/{skipped}/y": "y"})
    (ws / "link").symlink_to(outside, target_is_directory=True)
    (ws / "filelink").symlink_to(outside / "o.txt")
    snap = snapshot.take(str(ws))
    assert set(snap.dirs) == {"", "src/"}
    assert set(snap.dirs[""]) == {"link", "filelink"} and set(snap.dirs["src/"]) == {"a.py"}
    (outside / "o.txt").write_text("changed outside")
    (outside / "new.txt").write_text("new outside")
    for skipped in snapshot.SKIP_DIRS:
        (ws / skipped / "x").write_text("changed")
    assert snapshot.diff(snap, snapshot.take(str(ws))) == []


def test_snapshot_cap(tmp_path):
    ws = tmp_path / "ws"
    files(ws, {f"d/f{i}": "" for i in range(30)})
    assert snapshot.take(str(ws), max_entries=31).complete  # 30 files and d/
    capped = snapshot.take(str(ws), max_entries=30)
    assert capped.capped and not capped.complete


def test_snapshot_unreadable_directory_is_unseen_not_deleted(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    files(ws, {"locked/secret.txt": "s", "open/a.txt": "a"})
    before = snapshot.take(str(ws))
    if os.geteuid() == 0:  # root lists every directory: refuse this one as the kernel would
        listdir = os.listdir

        def refusing(fd):
            if os.readlink(f"/proc/self/fd/{fd}") == str(ws / "locked"):
                raise PermissionError(13, "Permission denied")
            return listdir(fd)

        monkeypatch.setattr(os, "listdir", refusing)
    os.chmod(ws / "locked", 0)
    try:
        after = snapshot.take(str(ws))
        (ws / "open" / "b.txt").write_text("b")
        later = snapshot.take(str(ws))
    finally:
        os.chmod(ws / "locked", 0o755)
    assert after.unreadable == ["locked/"] and not after.complete
    assert snapshot.diff(before, after) == []  # not reported as deleted
    assert snapshot.diff(after, later) == [("open/b.txt", "added")]


def test_snapshot_recent_files(tmp_path):
    files(tmp_path, {"old.txt": "o", "new.txt": "n"})
    os.utime(tmp_path / "old.txt", ns=(1, 1_000_000_000))
    now = os.stat(tmp_path / "new.txt").st_mtime_ns
    assert set(snapshot.take(str(tmp_path), recent_since_ns=now).recent) == {"new.txt"}
    assert snapshot.take(str(tmp_path)).recent == {}


# --- reading baselines ------------------------------------------------------------------

def test_read_file_checks_the_signature_and_never_follows_a_symlink(tmp_path):
    files(tmp_path, {"a.txt": "alpha", "d/b.txt": "beta"})
    (tmp_path / "ln").symlink_to(tmp_path / "a.txt")
    (tmp_path / "dl").symlink_to(tmp_path / "d")
    sig = signature(os.lstat(tmp_path / "a.txt"))
    assert read_file(str(tmp_path), "a.txt", sig) == b"alpha"
    assert read_file(str(tmp_path), "ln", signature(os.lstat(tmp_path / "ln"))) is None
    assert read_file(str(tmp_path), "dl/b.txt", signature(os.lstat(tmp_path / "d" / "b.txt"))) is None
    (tmp_path / "a.txt").write_text("ALPHA!")
    assert read_file(str(tmp_path), "a.txt", sig) is None  # no longer the file that was stat'ed
    assert read_file(str(tmp_path), "missing", sig) is None


def test_baseline_cache_serves_unchanged_files_and_drops_the_oldest(tmp_path):
    files(tmp_path, {"a": "a" * 40, "b": "b" * 40, "c": "c" * 40})
    cache = BaselineCache(capacity=100)
    sigs = {n: signature(os.lstat(tmp_path / n)) for n in "abc"}
    assert cache.read(str(tmp_path), "a", sigs["a"]) == b"a" * 40
    os.chmod(tmp_path / "a", 0)  # unreadable now: only the cache can answer
    try:
        if os.geteuid() != 0:
            assert read_file(str(tmp_path), "a", signature(os.lstat(tmp_path / "a"))) is None
        assert cache.read(str(tmp_path), "a", sigs["a"]) == b"a" * 40  # (the signature it was read with)
        cache.read(str(tmp_path), "b", sigs["b"])
        cache.read(str(tmp_path), "c", sigs["c"])  # 120 bytes > 100: "a" is dropped
        if os.geteuid() != 0:
            assert cache.read(str(tmp_path), "a", sigs["a"]) is None
    finally:
        os.chmod(tmp_path / "a", 0o644)
    assert cache.read(str(tmp_path), "c", sigs["c"], cache=False) == b"c" * 40
