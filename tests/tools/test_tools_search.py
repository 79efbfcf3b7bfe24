"""search_files: results, glob, case, skips (.git, binaries, huge files, symlinks out),
caps and errors."""

import os
import threading

import pytest

from kward.errors import Canceled
from kward.tools import process, search
from kward.tools.search import glob_matches
from lib.tools_helpers import call, ctx  # noqa: F401 (fixtures)


@pytest.fixture
def ws(ctx):
    root = ctx.workspace_root
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return TODO_value\n")
    (root / "src" / "util.js").write_text("// TODO: js\n")
    (root / "README.md").write_text("Nothing\ntodo lower\n")
    return root


def find(ctx, **kw):
    return call(ctx, "search_files", **kw)


def test_results_sorted_with_line_numbers(ctx, ws):
    r = find(ctx, pattern="TODO")
    assert (r.content, r.is_error) == ("src/app.py:4:     return TODO_value\nsrc/util.js:1: // TODO: js", False)


def test_case_insensitive_and_regex(ctx, ws):
    r = find(ctx, pattern=r"todo\b", case_sensitive=False)
    assert r.content == "README.md:2: todo lower\nsrc/util.js:1: // TODO: js"
    assert find(ctx, pattern=r"^def \w+\(").content == "src/app.py:3: def main():"


def test_glob_on_basename_and_relative_path(ctx, ws):
    assert find(ctx, pattern="TODO", glob="*.js").content == "src/util.js:1: // TODO: js"
    assert find(ctx, pattern="TODO", glob="src/*.py").content == "src/app.py:4:     return TODO_value"
    (ws / "top.py").write_text("TODO top\n")
    # walk order: a directory's files before its subdirectories
    assert find(ctx, pattern="TODO", glob="**/*.py").content == \
        "top.py:1: TODO top\nsrc/app.py:4:     return TODO_value"
    assert glob_matches("*.py", "a/b/c.py") and not glob_matches("*.py", "a/b/c.pyc")


def test_path_restricts_the_search(ctx, ws):
    (ws / "other").mkdir()
    (ws / "other" / "x.txt").write_text("TODO other\n")
    assert find(ctx, pattern="TODO", path="other").content == "other/x.txt:1: TODO other"
    assert find(ctx, pattern="TODO", path="src/util.js").content == "src/util.js:1: // TODO: js"


def test_skips_vcs_binary_and_huge_files(ctx, ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("needle\n")
    (ws / ".hg").mkdir()
    (ws / ".hg" / "x").write_text("needle\n")
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    (ws / "huge.txt").write_bytes(b"needle\n" + b"x" * (1024 * 1024))
    (ws / "ok.txt").write_text("a needle\n")
    assert find(ctx, pattern="needle").content == "ok.txt:1: a needle"


def test_does_not_follow_symlinks_out(ctx, ws, tmp_path):
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("needle outside\n")
    os.symlink(out, ws / "linkdir")
    os.symlink(out / "secret.txt", ws / "link.txt")
    (ws / "inner.txt").write_text("needle inside\n")
    os.symlink("inner.txt", ws / "alias.txt")  # a symlink inside the workspace is searched
    assert find(ctx, pattern="needle").content == "alias.txt:1: needle inside\ninner.txt:1: needle inside"
    r = find(ctx, pattern="needle", path="linkdir")
    assert (r.content, r.is_error) == ("Error: path outside workspace: linkdir", True)


def test_max_results_default_and_cap(ctx, ws):
    (ws / "many.txt").write_text("hit\n" * 600)
    r = find(ctx, pattern="hit")
    lines, note = r.content.split("\n\n")
    assert len(lines.split("\n")) == 100
    assert note == "[Results capped at 100 matches. Narrow the pattern, path or glob to see more.]"
    r = find(ctx, pattern="hit", max_results=1000)
    lines, note = r.content.split("\n\n")
    assert len(lines.split("\n")) == 500 and "capped at 500 matches" in note


def test_exact_count_has_no_note(ctx, ws):
    (ws / "few.txt").write_text("hit\n" * 3)
    r = find(ctx, pattern="hit", max_results=3)
    assert r.content == "few.txt:1: hit\nfew.txt:2: hit\nfew.txt:3: hit"


def test_long_lines_and_total_output_are_capped(ctx, ws):
    (ws / "wide.txt").write_text(("x" * 1000 + "\n") * 400)
    r = find(ctx, pattern="x", max_results=500)
    lines, note = r.content.split("\n\n")
    first = lines.split("\n")[0]
    assert first == "wide.txt:1: " + "x" * 300 + "... [700 more chars]"
    assert len(lines.encode()) <= 50 * 1024
    assert note.startswith("[Output capped at 51200 bytes after ")


def test_no_matches_and_errors(ctx, ws):
    r = find(ctx, pattern="zzz")
    assert (r.content, r.is_error) == ("No matches found for /zzz/ in ..", False)
    r = find(ctx, pattern="(unclosed")
    assert r.is_error and r.content.startswith("Error: invalid regex: missing ), unterminated subpattern")
    assert find(ctx, pattern="x", path="../").content == "Error: path outside workspace: ../"
    assert find(ctx, pattern="x", path="nope").content == "Error: no such file or directory: nope"
    assert find(ctx, pattern="x", max_results=0).content == "Error: max_results must be positive"
    assert find(ctx, pattern="x", case_sensitive="yes").content == "Error: case_sensitive must be a boolean"
    assert find(ctx).content == "Error: pattern is required"


CATASTROPHIC = "(a+)+$"  # 2**n steps on n "a"s followed by "!": minutes for n = 30


@pytest.fixture
def trap(ws):
    (ws / "trap.txt").write_text("a" * 30 + "!\n")
    return ws


def test_cancel_kills_a_catastrophic_regex_and_the_process_keeps_running(ctx, trap, monkeypatch):
    started = threading.Event()
    real_popen = process.subprocess.Popen

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.set()
        return proc

    monkeypatch.setattr(process.subprocess, "Popen", popen)
    outcome = {}

    def run():
        try:
            outcome["result"] = find(ctx, pattern=CATASTROPHIC)
        except Canceled:
            outcome["result"] = "canceled"

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(10)
    # The matching runs in a child process: this thread is not starved of the GIL.
    beats = [threading.Event() for _ in range(3)]
    for beat in beats:
        threading.Thread(target=beat.set).start()
        assert beat.wait(10)
    ctx.cancel.cancel()
    worker.join(10)
    assert not worker.is_alive() and outcome["result"] == "canceled"


@pytest.mark.slow
def test_a_catastrophic_regex_times_out_with_an_error(ctx, trap, monkeypatch):
    monkeypatch.setattr(search, "SEARCH_TIMEOUT_SECONDS", 0.5)
    r = find(ctx, pattern=CATASTROPHIC)
    assert r.is_error and r.content.startswith("Error: search timed out after 0.5 seconds")


@pytest.mark.slow
def test_a_timeout_keeps_the_matches_found_before_it(ctx, ws, monkeypatch):
    (ws / "a_first.txt").write_text("aaa\n")
    (ws / "b_trap.txt").write_text("a" * 30 + "!\n")
    monkeypatch.setattr(search, "SEARCH_TIMEOUT_SECONDS", 0.5)
    r = find(ctx, pattern=CATASTROPHIC)
    assert not r.is_error
    lines, note = r.content.split("\n\n")
    assert lines == "a_first.txt:1: aaa"
    assert note.startswith("[Search stopped after 0.5 seconds with 1 matches; results may be incomplete.")


def test_search_child_gets_no_credentials(ctx, ws, monkeypatch):
    from kward.tools.process import child_environment

    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret")
    monkeypatch.setenv("KEEP_ME", "1")
    env = child_environment()
    assert "OPENROUTER_API_KEY" not in env and env["KEEP_ME"] == "1"
