"""The change summary (kward.agent.diffs) against hostile input in a temp workspace: file
names that would break or forge a patch's header lines (quoted as git quotes them, checked
against `git diff` and `git apply`), a file pair whose diff would cost minutes in difflib
(bounded: listed as too large to compare), and a shell command whose changed files may be
incomplete (the tracker and the summary say so)."""

import os
import random
import subprocess
import threading

from kward.agent import diffs
from kward.agent.changes import Baseline, ChangeTracker
from kward.agent.diffs import quote_name, summarize
from kward.model import FileChange

GIT = ["git", "-c", "core.quotePath=true", "-c", "user.name=t", "-c", "user.email=t@t"]

# name -> (content before or None: no file, content now or None: no file)
HOSTILE = {
    "na\nme.txt": (b"old\n", b"new\n"),
    "x\n+++ b/evil\n@@ -0,0 +1 @@\n+pwned": (None, b"added\n"),  # a directory "x\n+++ b" and a file in it
    "tab\there.txt": (b"old\n", b"new\n"),
    'q"uote.txt': (None, b"q\n"),
    "back\\slash.txt": (b"b\n", None),
    os.fsdecode(b"caf\xe9.txt"): (b"old\n", b"new\n"),  # not UTF-8: a surrogate-escaped name
    "\u00fcn\u00ef.txt": (b"old\n", b"new\n"),
    "with space.txt": (b"old\n", b"new\n"),
    "trail ": (None, b"t\n"),
    "ctl\x07\x1b\x7f\r.txt": (b"old\n", b"new\n"),
    "x 2020-01-01 00:00:00.000000000 +0000": (b"old\n", b"new\n"),  # looks like a timestamp
    "plain.txt": (b"old\n", b"new\n"),
}


def git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True).stdout


def put(root, name, data):
    path = root / os.fsencode(name).decode("utf-8", "surrogateescape")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_names_are_quoted_as_git_quotes_them():
    assert quote_name("a/plain.txt") == "a/plain.txt"
    assert quote_name("a/na\nme") == '"a/na\\nme"'
    assert quote_name('a/q"\\t\t') == '"a/q\\"\\\\t\\t"'
    assert quote_name("a/\a\b\v\f\r\x01\x1b\x7f") == '"a/\\a\\b\\v\\f\\r\\001\\033\\177"'
    assert quote_name("a/\u00fc") == '"a/\\303\\274"'
    assert quote_name("a/" + os.fsdecode(b"caf\xe9")) == '"a/caf\\351"'
    assert quote_name("a/\ud800") == '"a/\\355\\240\\200"'  # a lone surrogate (JSON can carry one): no crash
    assert quote_name("a/with space") == "a/with space"


def test_hostile_names_make_a_patch_git_applies_with_no_forged_header(tmp_path):
    ws, repo = tmp_path / "ws", tmp_path / "repo"
    ws.mkdir()
    repo.mkdir()
    bases = {}
    for name, (old, new) in HOSTILE.items():
        if new is not None:
            put(ws, name, new)
        if old is not None:
            put(repo, name, old)
        bases[name] = Baseline(old is not None, old if old is not None else b"")
    summary = summarize(str(ws), bases)
    assert {f.path for f in summary.files} == set(HOSTILE) and all(f.omitted is None for f in summary.files)
    lines = summary.diff.split("\n")
    assert lines.pop() == ""
    headers = [line for line in lines if line.startswith(("--- ", "+++ "))]
    assert len(headers) == 2 * len(HOSTILE)  # none forged by a name
    assert all(line[:1] in " -+@\\" for line in lines)
    assert '--- "a/na\\nme.txt"' in headers and "+++ b/with space.txt\t" in headers
    assert '+++ "b/x\\n+++ b/evil\\n@@ -0,0 +1 @@\\n+pwned"\t' in headers
    # git takes it, names every file as it is, and writes the same headers itself
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "before")
    patch = tmp_path / "hostile.patch"
    patch.write_bytes(summary.diff.encode("utf-8", "surrogateescape"))
    git(repo, "apply", "--check", str(patch))
    numstat = git(repo, "apply", "--numstat", "-z", str(patch)).split(b"\0")
    named = {entry.split(b"\t", 2)[2] for entry in numstat if entry}
    assert named == {os.fsencode(name) for name in HOSTILE}
    git(repo, "apply", str(patch))
    for name, (_, new) in HOSTILE.items():
        path = repo / os.fsencode(name).decode("utf-8", "surrogateescape")
        assert (path.read_bytes() if path.exists() else None) == new, name
    git(repo, "add", "-A")
    theirs = git(repo, "diff", "--cached", "HEAD").decode("utf-8", "surrogateescape").split("\n")
    assert sorted(h for h in theirs if h.startswith(("--- ", "+++ "))) == sorted(headers)


def adversarial(seed, lines=200_000, values=1001):
    """About 0.9 MiB of short lines drawn from `values` values, each under difflib's 1%
    popularity cut: every line matches hundreds of lines of the other side."""
    rng = random.Random(seed)
    return "".join(f"{rng.randrange(values)}\n" for _ in range(lines)).encode()


def summarize_within(root, bases, seconds=20.0):
    """summarize in a thread, joined with a generous timeout (fails when it runs on)."""
    out = []
    worker = threading.Thread(target=lambda: out.append(summarize(root, bases)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the summary did not finish"
    return out[0]


def test_a_file_pair_too_costly_to_compare_is_listed_as_too_large(tmp_path):
    old, new = adversarial(1), adversarial(2)
    assert len(old) < diffs.MAX_FILE_BYTES and len(new) < diffs.MAX_FILE_BYTES
    (tmp_path / "adv.txt").write_bytes(new)
    (tmp_path / "small.txt").write_text("new\n")
    summary = summarize_within(str(tmp_path), {"adv.txt": Baseline(True, old), "small.txt": Baseline(True, b"old\n")})
    adv, small = summary.files
    assert (adv.path, adv.status, adv.added, adv.removed, adv.omitted) == ("adv.txt", "modified", None, None,
                                                                           "tooLarge")
    assert (small.added, small.removed, small.omitted) == (1, 1, None) and "+++ b/small.txt" in summary.diff
    assert "adv.txt" not in summary.diff and summary.truncated is True
    assert "adv.txt (too large to compare)" in summary.note


def test_a_large_file_with_a_few_edits_is_still_compared(tmp_path):
    old = [f"line {i}\n" for i in range(70_000)]  # ~0.8 MiB, every line unique
    new = list(old)
    new[5], new[35_000], new[-3] = "five\n", "middle\n", "end\n"
    (tmp_path / "big.txt").write_text("".join(new))
    summary = summarize(str(tmp_path), {"big.txt": Baseline(True, "".join(old).encode())})
    assert [(f.added, f.removed, f.omitted) for f in summary.files] == [(3, 3, None)]
    assert "-line 35000\n+middle\n" in summary.diff and summary.truncated is False


def test_the_summary_budget_caps_later_files(tmp_path, monkeypatch):
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text("".join(f"{name} {i}\n" for i in range(100)))
    bases = {f"{n}.txt": Baseline(True, b"old\n") for n in "abc"}
    # one file's comparison costs 310: 2 * (1 + 100 + 2) to split and index, 4 * 1 + 100 to search
    monkeypatch.setattr(diffs, "MAX_FILE_OPS", 310)
    summary = summarize(str(tmp_path), bases)
    assert [f.omitted for f in summary.files] == [None, None, None]
    monkeypatch.setattr(diffs, "MAX_SUMMARY_OPS", 700)
    summary = summarize(str(tmp_path), bases)
    assert [(f.path, f.added, f.omitted) for f in summary.files] == [
        ("a.txt", 100, None), ("b.txt", 100, None), ("c.txt", None, "capped")]
    assert "c.txt (past what one summary reads and compares)" in summary.note
    monkeypatch.setattr(diffs, "MAX_FILE_OPS", 309)
    summary = summarize(str(tmp_path), bases)
    assert [f.omitted for f in summary.files] == ["tooLarge"] * 3
    assert "a.txt (too large to compare)" in summary.note


def test_an_incomplete_change_list_makes_the_summaries_say_so(tmp_path):
    t = ChangeTracker()
    t.begin_turn()
    t.record([FileChange("a.txt", "added", b"")])
    assert t.turn_baselines().complete is True and t.session_baselines().complete is True
    t.record((), complete=False)  # a shell command whose changed files may miss some
    assert t.turn_baselines().complete is False and t.session_baselines().complete is False
    t.end_turn()
    t.begin_turn()
    assert t.turn_baselines().complete is True and t.session_baselines().complete is False
    (tmp_path / "a.txt").write_text("a\n")
    summary = summarize(str(tmp_path), t.session_baselines().paths, complete=False)
    assert summary.complete is False and summary.truncated is False and [f.path for f in summary.files] == ["a.txt"]
    assert "may be missing" in summary.note
    whole = summarize(str(tmp_path), t.session_baselines().paths)
    assert whole.complete is True and whole.note is None
