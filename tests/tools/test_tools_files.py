"""list_directory, read_file, write_file and edit_file: success paths, limits and every
error text."""

import os
import stat

import pytest

from lib.tools_helpers import call, ctx, ws  # noqa: F401 (fixtures)


def read(ctx, path):
    result = call(ctx, "read_file", path=path)
    assert not result.is_error, result.content
    return result


# --- list_directory -------------------------------------------------------------------

def test_list_directory_sorted_with_dir_suffix(ctx, ws):
    (ws / "b.txt").write_text("b")
    (ws / "a").mkdir()
    (ws / "C.md").write_text("c")
    (ws / "a" / "inner.txt").write_text("i")
    assert call(ctx, "list_directory", path=".").content == "C.md\na/\nb.txt"
    assert call(ctx, "list_directory", path="a").content == "inner.txt"
    assert call(ctx, "list_directory").content == "C.md\na/\nb.txt"  # path defaults to the root


def test_list_directory_output_is_capped_with_a_notice(ctx, ws):
    big = ws / "big"
    big.mkdir()
    names = [f"{i:05d}-" + "x" * 94 for i in range(1000)]  # 100 bytes each, 100 KB in all
    for name in names:
        (big / name).touch()
    r = call(ctx, "list_directory", path="big")
    listing, note = r.content.split("\n\n")
    shown = listing.split("\n")
    assert shown == names[:len(shown)] and len(listing.encode()) <= 51200 and len(shown) == 506
    assert note == ("[Showing 506 of 1000 entries (51200 byte limit). List a subdirectory, or use "
                    "search_files or run_shell_command to narrow down.]")
    assert not r.is_error


def test_list_directory_errors(ctx, ws):
    (ws / "f.txt").write_text("x")
    r = call(ctx, "list_directory", path="f.txt")
    assert (r.content, r.is_error) == ("Error: not a directory: f.txt", True)
    assert call(ctx, "list_directory", path="nope").content == "Error: no such file or directory: nope"


# --- read_file ------------------------------------------------------------------------

def test_read_file_whole_and_marks_realpath(ctx, ws):
    (ws / "a.txt").write_text("one\ntwo\n")
    r = read(ctx, "a.txt")
    assert r.content == "one\ntwo\n"
    assert str(ws / "a.txt") in ctx.read_paths


def test_read_file_through_inner_symlink_marks_target(ctx, ws):
    (ws / "real.txt").write_text("x")
    os.symlink("real.txt", ws / "link.txt")
    read(ctx, "link.txt")
    assert ctx.read_paths == {str(ws / "real.txt")}


def test_read_file_offset_limit_notice(ctx, ws):
    (ws / "n.txt").write_text("\n".join(f"line{i}" for i in range(1, 11)))
    r = call(ctx, "read_file", path="n.txt", offset=3, limit=2)
    assert r.content == "line3\nline4\n\n[6 more lines in file. Use offset=5 to continue.]"
    assert call(ctx, "read_file", path="n.txt", offset=9).content == "line9\nline10"
    assert call(ctx, "read_file", path="n.txt", offset=9, limit=5).content == "line9\nline10"


def test_read_file_line_limit_notice(ctx, ws):
    (ws / "big.txt").write_text("\n".join(str(i) for i in range(1, 2501)))
    r = call(ctx, "read_file", path="big.txt")
    body, notice = r.content.split("\n\n")
    assert body.splitlines() == [str(i) for i in range(1, 2001)]
    assert notice == "[Showing lines 1-2000 of 2500 (2000 line limit). Use offset=2001 to continue.]"
    r = call(ctx, "read_file", path="big.txt", offset=2001)
    assert r.content.splitlines()[0] == "2001" and r.content.endswith("2500")


def test_read_file_byte_limit_notice(ctx, ws):
    line = "x" * 99  # 100 bytes with its newline
    (ws / "wide.txt").write_text("\n".join([line] * 1000))
    r = call(ctx, "read_file", path="wide.txt")
    body, notice = r.content.split("\n\n")
    assert len(body.encode()) <= 51200
    shown = len(body.split("\n"))
    assert shown == 512
    assert notice == "[Showing lines 1-512 of 1000 (51200 byte limit). Use offset=513 to continue.]"


def test_read_file_errors(ctx, ws):
    (ws / "n.txt").write_text("a\nb")
    (ws / "d").mkdir()
    assert call(ctx, "read_file", path="n.txt", offset=5).content == \
        "Error: offset 5 is beyond end of file (2 lines total)"
    assert call(ctx, "read_file", path="n.txt", limit=0).content == "Error: limit must be positive"
    assert call(ctx, "read_file", path="d").content == "Error: not a file: d"
    assert call(ctx, "read_file", path="missing.txt").content == "Error: no such file or directory: missing.txt"
    (ws / "long.txt").write_text("y" * 60000)
    assert call(ctx, "read_file", path="long.txt").content == (
        "Error: first line is 60000 bytes, exceeds 51200 byte read limit. "
        "Use run_shell_command with sed/head to inspect smaller chunks.")
    assert ctx.read_paths == set()  # failed reads mark nothing


def test_read_file_refuses_oversize_and_binary(ctx, ws):
    (ws / "huge.txt").write_bytes(b"a\n" * (128 * 1024 + 1))
    r = call(ctx, "read_file", path="huge.txt")
    assert r.is_error
    assert r.content == "Error: file too large: huge.txt is 262146 bytes; limit is 262144 bytes"
    (ws / "bin.dat").write_bytes(b"abc\x00def")
    r = call(ctx, "read_file", path="bin.dat")
    assert r.is_error and r.content.startswith("Error: not a text file: bin.dat")
    assert ctx.read_paths == set()


def test_read_file_invalid_utf8_is_shown_replaced(ctx, ws):
    (ws / "latin.txt").write_bytes(b"caf\xe9\n")
    assert read(ctx, "latin.txt").content == "caf\ufffd\n"


# --- write_file -----------------------------------------------------------------------

def test_write_new_file_creates_parents(ctx, ws):
    r = call(ctx, "write_file", path="src/pkg/new.py", content="print('hi')\n")
    assert (r.content, r.is_error) == ("Wrote 12 bytes to src/pkg/new.py", False)
    assert r.diff is None and r.changed_files == ["src/pkg/new.py"]
    assert (ws / "src/pkg/new.py").read_text() == "print('hi')\n"
    assert str(ws / "src/pkg/new.py") in ctx.read_paths  # may be written again without a read
    r = call(ctx, "write_file", path="src/pkg/new.py", content="print('bye')\n")
    assert r.content.startswith("Wrote 13 bytes to src/pkg/new.py\n--- src/pkg/new.py")


def test_write_counts_utf8_bytes(ctx, ws):
    assert call(ctx, "write_file", path="u.txt", content="é€").content == "Wrote 5 bytes to u.txt"


def test_write_existing_requires_read_then_diffs(ctx, ws):
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    r = call(ctx, "write_file", path="a.txt", content="x")
    assert (r.content, r.is_error) == ("Error: existing file must be read before writing: a.txt", True)
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\n"
    read(ctx, "a.txt")
    r = call(ctx, "write_file", path="a.txt", content="one\nTWO\nthree\n")
    expected_diff = "--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three"
    assert r.content == "Wrote 14 bytes to a.txt\n" + expected_diff
    assert r.diff == expected_diff and r.changed_files == ["a.txt"]


def test_write_unchanged_content_has_no_diff(ctx, ws):
    (ws / "a.txt").write_text("same\n")
    read(ctx, "a.txt")
    r = call(ctx, "write_file", path="a.txt", content="same\n")
    assert r.content == "Wrote 5 bytes to a.txt" and r.diff is None


def test_write_preserves_mode_and_leaves_no_temp_files(ctx, ws):
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    read(ctx, "run.sh")
    assert not call(ctx, "write_file", path="run.sh", content="#!/bin/sh\necho hi\n").is_error
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(os.listdir(ws)) == ["run.sh"]


def test_write_new_file_gets_umask_mode(ctx, ws):
    old = os.umask(0o027)
    try:
        call(ctx, "write_file", path="n.txt", content="x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / "n.txt").stat().st_mode) == 0o640


def test_write_to_directory_is_refused(ctx, ws):
    (ws / "d").mkdir()
    assert call(ctx, "write_file", path="d", content="x").content == "Error: not a file: d"


def test_write_argument_errors(ctx):
    assert call(ctx, "write_file", path="a.txt").content == "Error: content is required"
    assert call(ctx, "write_file", path="a.txt", content=5).content == "Error: content must be a string"


# --- edit_file ------------------------------------------------------------------------

@pytest.fixture
def src(ctx, ws):
    (ws / "m.py").write_text("def a():\n    return 1\n\ndef b():\n    return 1\n")
    return "m.py"


def edit(ctx, path, *pairs):
    return call(ctx, "edit_file", path=path, edits=[{"old_text": o, "new_text": n} for o, n in pairs])


def test_edit_requires_read(ctx, ws, src):
    r = edit(ctx, src, ("def a", "def z"))
    assert (r.content, r.is_error) == ("Error: existing file must be read before editing: m.py", True)


def test_edit_success_with_diff(ctx, ws, src):
    read(ctx, src)
    r = edit(ctx, src, ("def a():\n    return 1", "def a():\n    return 2"), ("def b", "def bee"))
    # one hunk: every changed line removed, then every new line added
    diff = ("--- m.py\n+++ m.py\n@@ -1,5 +1,5 @@\n def a():\n-    return 1\n-\n-def b():\n"
            "+    return 2\n+\n+def bee():\n     return 1")
    assert r.content == "Edited m.py: replaced 2 block(s)\n" + diff
    assert (r.is_error, r.diff, r.changed_files) == (False, diff, ["m.py"])
    assert (ws / src).read_text() == "def a():\n    return 2\n\ndef bee():\n    return 1\n"


def test_edit_applies_against_original(ctx, ws):
    (ws / "s.txt").write_text("alpha beta")
    read(ctx, "s.txt")
    # the second old_text exists only in the original, not after the first replacement
    r = edit(ctx, "s.txt", ("alpha", "beta"), ("beta", "gamma"))
    assert not r.is_error, r.content
    assert (ws / "s.txt").read_text() == "beta gamma"


def test_edit_errors(ctx, ws, src):
    read(ctx, src)
    cases = [
        ([("zzz", "y")], "Error: edits[0].old_text was not found in m.py"),
        ([("return 1", "return 3")], "Error: edits[0].old_text appears 2 times in m.py; provide more context"),
        ([("def a():", "x"), ("a():\n    ret", "y")], "Error: edits[0] and edits[1] overlap in m.py"),
        ([("def a", "def a")], "Error: no changes made to m.py"),
        ([("", "x")], "Error: edits[0].old_text must not be empty"),
    ]
    before = (ws / src).read_text()
    for pairs, message in cases:
        r = edit(ctx, src, *pairs)
        assert (r.content, r.is_error) == (message, True)
    assert (ws / src).read_text() == before
    assert call(ctx, "edit_file", path=src, edits=[]).content == \
        "Error: edits must contain at least one replacement"
    assert call(ctx, "edit_file", path=src, edits="x").content == "Error: edits must be an array"
    assert call(ctx, "edit_file", path=src, edits=[{"old_text": 1, "new_text": "x"}]).content == \
        "Error: edits[0].old_text must be a string"
    assert call(ctx, "edit_file", path=src, edits=[{"old_text": "def a"}]).content == \
        "Error: edits[0].new_text must be a string"
    assert call(ctx, "edit_file", path="nope.py", edits=[]).content == \
        "Error: no such file or directory: nope.py"


def test_edit_keeps_undecodable_bytes(ctx, ws):
    (ws / "l.txt").write_bytes(b"caf\xe9 = 1\nx = 2\n")
    read(ctx, "l.txt")
    assert not edit(ctx, "l.txt", ("x = 2", "x = 3")).is_error
    assert (ws / "l.txt").read_bytes() == b"caf\xe9 = 1\nx = 3\n"


def test_edit_preserves_mode(ctx, ws):
    f = ws / "t.sh"
    f.write_text("echo a\n")
    f.chmod(0o700)
    read(ctx, "t.sh")
    edit(ctx, "t.sh", ("a", "b"))
    assert stat.S_IMODE(f.stat().st_mode) == 0o700


def test_edit_diff_is_truncated(ctx, ws):
    (ws / "big.txt").write_text("start\n" + "".join(f"old line {i}\n" for i in range(1000)))
    read(ctx, "big.txt")
    old = "".join(f"old line {i}\n" for i in range(1000))
    r = edit(ctx, "big.txt", (old, old.replace("old", "new")))
    assert r.diff.endswith("... diff truncated to 8192 bytes; full diff stats: +1000|-1000. "
                           "Use read_file to inspect current content.")
    assert len(r.diff.encode()) < 8192 + 200


# --- the file changes write_file and edit_file report (turnDiff, sessions/diff) -----------

def test_write_and_edit_report_the_file_they_changed_with_its_content_before(ctx, ws):
    from kward.model import FileChange

    assert call(ctx, "write_file", path="sub/new.txt", content="one\n").changes == \
        (FileChange("sub/new.txt", "added", b""),)
    assert call(ctx, "write_file", path="sub/new.txt", content="two\n").changes == \
        (FileChange("sub/new.txt", "modified", b"one\n"),)
    assert call(ctx, "write_file", path="sub/new.txt", content="two\n").changes == ()  # the same bytes again
    r = call(ctx, "edit_file", path="./sub/../sub/new.txt", edits=[{"old_text": "two", "new_text": "three"}])
    assert r.changes == (FileChange("sub/new.txt", "modified", b"two\n"),)
    (ws / "real.txt").write_bytes(b"caf\xe9\n")
    os.symlink("real.txt", ws / "link.txt")  # a link inside: the change is its target's
    read(ctx, "link.txt")
    r = call(ctx, "edit_file", path="link.txt", edits=[{"old_text": "caf", "new_text": "CAF"}])
    assert r.changes == (FileChange("real.txt", "modified", b"caf\xe9\n"),)
    failed = call(ctx, "edit_file", path="real.txt", edits=[{"old_text": "absent", "new_text": "x"}])
    assert failed.is_error and failed.changes == ()
