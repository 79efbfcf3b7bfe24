"""The parts behind turnDiff and sessions/diff, on their own: the change tracker's
baselines and caps (kward.agent.changes) and the summary against real files in a temp
workspace (kward.agent.diffs), its unified diff checked by `git apply`."""

import os
import random
import subprocess

import pytest

from kward.agent import diffs
from kward.agent.changes import Baseline, ChangeTracker, SessionChanges, clean_path
from kward.agent.diffs import file_diff, summarize
from kward.model import FileChange


def added(path):
    return FileChange(path, "added", b"")


def modified(path, before):
    return FileChange(path, "modified", before)


# --- the tracker -------------------------------------------------------------------------

def test_the_first_change_of_a_path_is_its_baseline_for_the_session_and_for_the_turn():
    t = ChangeTracker()
    t.begin_turn()
    t.record([modified("a.txt", b"v1"), added("n.txt")])
    t.record([modified("a.txt", b"v2"), FileChange("n.txt", "deleted", b"x")])  # later ones change nothing
    assert t.turn_baselines().paths == {"a.txt": Baseline(True, b"v1"), "n.txt": Baseline(False, b"")}
    t.end_turn()
    assert t.turn_baselines().paths == {}
    t.begin_turn()
    t.record([modified("a.txt", b"v3"), FileChange("d.txt", "deleted", None)])
    assert t.turn_baselines().paths == {"a.txt": Baseline(True, b"v3"), "d.txt": Baseline(True, None)}
    assert t.session_baselines().paths == {"a.txt": Baseline(True, b"v1"), "n.txt": Baseline(False, b""),
                                           "d.txt": Baseline(True, None)}


def test_bad_changes_are_ignored_and_paths_normalized():
    t = ChangeTracker()
    t.record([modified("/etc/passwd", b"x"), modified("../out.txt", b"x"), modified("a/../../b", b"x"),
              modified("", b"x"), modified("nul\x00.txt", b"x"), FileChange("ok.txt", "renamed", b"x"),
              modified("./sub//c.txt", b"c"), modified(".", b"x")])
    assert t.session_baselines().paths == {"sub/c.txt": Baseline(True, b"c")}
    assert [clean_path(p) for p in ("a/./b", "a/b/..", 5)] == ["a/b", "a", None]


def test_memory_is_bounded_and_what_does_not_fit_becomes_unknown():
    t = ChangeTracker(max_baseline=10, max_total=25, max_paths=4)
    t.begin_turn()
    t.record([modified("big", b"x" * 11), modified("a", b"y" * 10), modified("b", b"z" * 10), modified("c", b"w" * 10)])
    assert t.session_baselines().paths == {"big": Baseline(True, None), "a": Baseline(True, b"y" * 10),
                                           "b": Baseline(True, b"z" * 10), "c": Baseline(True, None)}
    assert t.held_bytes == 20  # shared by the session's and the turn's maps: counted once
    t.record([modified("e", b"e"), added("f")])  # past max_paths: counted, not kept
    assert "e" not in t.session_baselines().paths and t.session_baselines().untracked == 2
    assert t.turn_baselines().untracked == 2
    t.end_turn()
    t.begin_turn()
    t.record([modified("a", b"q" * 5)])  # the turn's own baseline of a tracked path costs its bytes ...
    assert t.held_bytes == 25 and t.turn_baselines().paths["a"] == Baseline(True, b"q" * 5)
    t.end_turn()
    assert t.held_bytes == 20  # ... until the turn ends
    assert t.turn_baselines().untracked == 0 and t.session_baselines().untracked == 2


def test_session_changes_drop_a_tracker_with_its_file():
    class File:
        closed = False

    changes = SessionChanges()
    one, two = File(), File()
    tracker = changes.tracker(one)
    assert changes.tracker(one) is tracker and changes.get(two) is None
    changes.drop(one)
    assert changes.get(one) is None
    changes.tracker(one)
    one.closed = True  # closed another way: swept when the next tracker is made
    changes.tracker(two)
    assert changes.get(one) is None and len(changes) == 1


# --- the summary -------------------------------------------------------------------------

def test_net_status_counts_and_left_out_files(tmp_path):
    root = str(tmp_path)
    (tmp_path / "mod.txt").write_text("a\nB\nc\n")
    (tmp_path / "same.txt").write_text("same\n")
    (tmp_path / "new.txt").write_text("new\n")
    (tmp_path / "bin.dat").write_bytes(b"\x00\x01")
    (tmp_path / "unknown.txt").write_text("?\n")
    summary = summarize(root, {
        "mod.txt": Baseline(True, b"a\nb\nc\n"), "same.txt": Baseline(True, b"same\n"),
        "new.txt": Baseline(False, b""), "gone.txt": Baseline(True, b"g1\ng2\n"), "never.txt": Baseline(False, b""),
        "bin.dat": Baseline(True, b"text\n"), "unknown.txt": Baseline(True, None),
        "unknown-gone.txt": Baseline(True, None)})
    assert [(f.path, f.status, f.added, f.removed, f.binary, f.omitted) for f in summary.files] == [
        ("bin.dat", "modified", None, None, True, "binary"),
        ("gone.txt", "deleted", 0, 2, False, None),
        ("mod.txt", "modified", 1, 1, False, None),
        ("new.txt", "added", 1, 0, False, None),
        ("unknown-gone.txt", "deleted", None, None, False, "unknownBaseline"),
        ("unknown.txt", "modified", None, None, False, "unknownBaseline"),
    ]
    assert "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-g1\n-g2\n" in summary.diff
    assert summary.truncated is False
    assert summary.note == ("Not in the diff: bin.dat (binary), unknown-gone.txt (content before the change not "
                            "known), unknown.txt (content before the change not known).")


def test_a_fifo_a_directory_or_a_symlinked_parent_is_never_read(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "f.txt").write_text("SECRET\n")
    os.mkfifo(ws / "fifo")  # opening it for reading would block
    (ws / "dir").mkdir()
    os.symlink(outside, ws / "sub")  # a changed file's directory swapped for a link out
    summary = summarize(str(ws), {"fifo": Baseline(True, b"x\n"), "dir": Baseline(False, b""),
                                  "sub/f.txt": Baseline(True, b"mine\n")})
    assert [(f.path, f.status, f.omitted) for f in summary.files] == [
        ("dir", "added", "notRegularFile"), ("fifo", "modified", "notRegularFile"),
        ("sub/f.txt", "modified", "notRegularFile")]
    assert summary.diff == "" and "SECRET" not in repr(summary)


def test_a_parent_that_became_a_file_means_the_file_is_gone(tmp_path):
    (tmp_path / "d").write_text("now a file\n")
    summary = summarize(str(tmp_path), {"d/x.txt": Baseline(True, b"x\n")})
    assert [(f.path, f.status, f.removed) for f in summary.files] == [("d/x.txt", "deleted", 1)]


def test_the_read_budget_and_the_listing_cap(tmp_path, monkeypatch):
    for name in "abcd":
        (tmp_path / f"{name}.txt").write_text(name * 10 + "\n")
    monkeypatch.setattr(diffs, "MAX_READ_BYTES", 25)
    bases = {f"{n}.txt": Baseline(True, b"old\n") for n in "abcd"}
    summary = summarize(str(tmp_path), bases)
    assert [(f.path, f.added, f.omitted) for f in summary.files] == [
        ("a.txt", 1, None), ("b.txt", 1, None), ("c.txt", None, "capped"), ("d.txt", None, "capped")]
    assert summary.truncated is True and "c.txt (past what one summary reads and compares)" in summary.note
    assert "KiB" not in summary.note  # (no diff was too big)
    monkeypatch.setattr(diffs, "MAX_LISTED_FILES", 1)
    summary = summarize(str(tmp_path), bases, untracked=3)
    assert [f.path for f in summary.files] == ["a.txt"] and summary.truncated is True
    assert "3 more changed path(s) not looked at (at most 1 files are listed)" in summary.note
    assert "3 change(s) of further paths not tracked (at most 10000 paths per session)" in summary.note


def test_the_diff_text_is_scrubbed(tmp_path):
    (tmp_path / "k.txt").write_text("key = hunter2-secret-value\n")
    summary = summarize(str(tmp_path), {"k.txt": Baseline(False, b"")},
                        scrub=lambda text: text.replace("hunter2-secret-value", "[REDACTED]"))
    assert summary.diff == "--- /dev/null\n+++ b/k.txt\n@@ -0,0 +1 @@\n+key = [REDACTED]\n"


def test_file_diff_of_edge_cases():
    assert file_diff("e", b"", b"") == ("", 0, 0)
    assert file_diff("e", None, b"") == ("", 0, 0)  # an empty file added: no hunk
    assert file_diff("n", b"a", b"a\n") == ("--- a/n\n+++ b/n\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n",
                                             1, 1)
    text, plus, minus = file_diff("u", b"caf\xe9\n", b"cafe\n")  # not UTF-8: shown with U+FFFD
    assert "-caf\ufffd\n" in text and (plus, minus) == (1, 1)


def strict_apply(old, diff_text):
    """`old` (text) with the one file's unified diff applied at exactly the lines its hunk
    headers name (git apply would find a hunk a few lines off)."""
    import re

    lines = old.splitlines(keepends=True)
    out, pos = [], 0
    body = diff_text.splitlines(keepends=True)[2:]
    i = 0
    while i < len(body):
        m = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n", body[i])
        assert m, body[i]
        start, length = int(m[1]), int(m[2] or 1)
        first = start - 1 if length else start  # an empty range names the line before
        out.extend(lines[pos:first])
        pos = first
        i += 1
        seen_old, seen_new = [], []
        while i < len(body) and not body[i].startswith("@@"):
            line = body[i]
            if line.startswith("\\"):
                for seen in (seen_old, seen_new):
                    if seen and seen[-1][1] == i - 1:
                        seen[-1] = (seen[-1][0].removesuffix("\n"), i)
                i += 1
                continue
            if line[0] in " -":
                seen_old.append((line[1:], i))
            if line[0] in " +":
                seen_new.append((line[1:], i))
            i += 1
        assert [t for t, _ in seen_old] == lines[pos:pos + len(seen_old)], "a hunk not at its stated lines"
        assert len(seen_old) == length
        pos += len(seen_old)
        out.extend(t for t, _ in seen_new)
    out.extend(lines[pos:])
    return "".join(out)


def test_the_unified_diff_undoes_random_edits_with_git_apply(tmp_path):
    rng = random.Random(23)
    ws = tmp_path / "ws"
    ws.mkdir()
    bases, originals = {}, {}
    for i in range(40):
        lines = [f"line {rng.randrange(30)}\n" for _ in range(rng.randrange(0, 40))]
        old = "".join(lines) + (f"tail {i}" if rng.random() < 0.3 else "")
        new_lines = list(lines)
        for _ in range(rng.randrange(1, 6)):
            at = rng.randrange(len(new_lines) + 1)
            op = rng.choice("ird")
            if op == "i" or not new_lines[at:]:
                new_lines.insert(at, f"new {rng.randrange(1000)}\n")
            elif op == "r":
                new_lines[at] = f"changed {rng.randrange(1000)}\n"
            else:
                del new_lines[at]
        new = "".join(new_lines) + ("" if rng.random() < 0.5 else "no newline")
        name = f"d{i // 10}/f{i}.txt"
        (ws / name).parent.mkdir(exist_ok=True)
        kind = rng.random()
        if kind < 0.1:  # deleted
            bases[name], originals[name] = Baseline(True, old.encode()), old
        elif kind < 0.2:  # added
            (ws / name).write_text(new)
            bases[name], originals[name] = Baseline(False, b""), None
        else:
            (ws / name).write_text(new)
            bases[name], originals[name] = Baseline(True, old.encode()), old
    summary = summarize(str(ws), bases)
    assert all(f.omitted is None for f in summary.files) and not summary.truncated
    for name, base in bases.items():  # each file's hunks stand exactly where their headers say
        now = (ws / name).read_bytes() if (ws / name).exists() else None
        text, _, _ = file_diff(name, base.content if base.existed else None, now)
        if text:
            assert strict_apply(base.content.decode(), text) == (now or b"").decode(), name
    patch = tmp_path / "all.patch"
    patch.write_text(summary.diff)
    subprocess.run(["git", "apply", "-R", str(patch)], cwd=ws, check=True, capture_output=True)
    for name, old in originals.items():
        if old is None:
            assert not (ws / name).exists(), name
        elif old:  # (an empty file deleted has no hunk to bring it back)
            assert (ws / name).read_text() == old, name
    # the counts are the diff's own
    assert sum(f.added or 0 for f in summary.files) == sum(
        1 for line in summary.diff.splitlines() if line.startswith("+") and not line.startswith("+++ "))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_named_not_read(tmp_path):
    f = tmp_path / "locked.txt"
    f.write_text("x\n")
    f.chmod(0)
    try:
        summary = summarize(str(tmp_path), {"locked.txt": Baseline(True, b"y\n")})
    finally:
        f.chmod(0o600)
    assert [(x.path, x.status, x.omitted) for x in summary.files] == [("locked.txt", "modified", "unreadable")]
