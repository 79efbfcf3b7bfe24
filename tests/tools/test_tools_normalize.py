"""Tool-event normalization (names, camelCase args, bash timeout) and the single-hunk diff."""

import pytest

from kward.toolcalls import extract_diff, normalize_args, normalize_tool_name, parse_arguments
from kward.tools.diff import truncated_diff, unified_diff
from kward.toolcalls import camelize_key


def test_tool_names():
    assert [normalize_tool_name(n) for n in ("read_file", "edit_file", "write_file", "run_shell_command")] == \
        ["read", "edit", "write", "bash"]
    for name in ("list_directory", "search_files", "ask_user_question", "mystery", "read"):
        assert normalize_tool_name(name) == name


def test_edit_args():
    args = {"path": "a.py", "edits": [{"old_text": "x", "new_text": "y"}, "junk", {"old_text": "z"}]}
    expected = {"path": "a.py", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "z"}]}
    assert normalize_args("edit_file", args) == expected
    assert normalize_args("edit", expected) == expected  # idempotent
    assert normalize_args("edit_file", {"path": "a.py", "edits": []}) == {"path": "a.py"}


def test_write_args():
    assert normalize_args("write_file", {"path": "p", "content": "c", "extra": 1}) == {"path": "p", "content": "c"}
    assert normalize_args("write_file", {"path": "p", "content": ""}) == {"path": "p", "content": ""}


def test_bash_args():
    assert normalize_args("run_shell_command", {"command": "ls"}) == {"command": "ls", "timeout": 30}
    assert normalize_args("run_shell_command", {"command": "ls", "timeout_seconds": 5}) == {"command": "ls", "timeout": 5}
    assert normalize_args("bash", {"command": "ls", "timeout": 7}) == {"command": "ls", "timeout": 7}


def test_other_tools_camelcase_recursively():
    assert normalize_args("search_files", {"pattern": "x", "max_results": 5, "case_sensitive": False}) == \
        {"pattern": "x", "maxResults": 5, "caseSensitive": False}
    nested = {"questions": [{"question": "q", "options": [{"label_text": "a", "multi_select": False}]}]}
    assert normalize_args("ask_user_question", nested) == \
        {"questions": [{"question": "q", "options": [{"labelText": "a", "multiSelect": False}]}]}
    assert normalize_args("read_file", {"path": "a", "offset": 2}) == {"path": "a", "offset": 2}
    assert normalize_args("x", "not a dict") == {}
    assert camelize_key("start_line") == "startLine" and camelize_key("already") == "already"


def test_parse_arguments():
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {} and parse_arguments(None) == {}
    assert parse_arguments("{bad") == {} and parse_arguments("[1]") == {}
    assert parse_arguments({"a": 1}) == {"a": 1}
    assert parse_arguments("[" * 100_000) == {}


def test_decode_arguments_is_the_strict_form():
    from kward.toolcalls import ArgumentsError, decode_arguments

    assert decode_arguments(' {"a": 1} ') == {"a": 1} and decode_arguments(None) == {} and decode_arguments("  ") == {}
    for raw, invalid_json in (("{bad", True), ("[1]", False), (7, False)):
        with pytest.raises(ArgumentsError) as info:
            decode_arguments(raw)
        assert info.value.invalid_json is invalid_json


def test_extract_diff():
    assert extract_diff("Edited a: replaced 1 block(s)\n--- a\n+++ a\n@@ -1,1 +1,1 @@\n-x\n+y") == \
        "--- a\n+++ a\n@@ -1,1 +1,1 @@\n-x\n+y"
    assert extract_diff("Wrote 3 bytes to a") is None


# --- diff ------------------------------------------------------------------------------

def test_diff_context_is_three_lines():
    old = "".join(f"{i}\n" for i in range(1, 11))
    new = old.replace("5\n", "five\n")
    d = unified_diff("f.txt", old, new)
    assert d.text == "--- f.txt\n+++ f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8"
    assert (d.additions, d.deletions) == (1, 1)


def test_diff_pure_insert_and_delete_and_new_file():
    assert unified_diff("f", "a\nb\n", "a\nx\nb\n").text == "--- f\n+++ f\n@@ -1,2 +1,3 @@\n a\n+x\n b"
    assert unified_diff("f", "a\nb\nc\n", "a\nc\n").text == "--- f\n+++ f\n@@ -1,3 +1,2 @@\n a\n-b\n c"
    assert unified_diff("f", "", "x\ny\n").text == "--- f\n+++ f\n@@ -1,0 +1,2 @@\n+x\n+y"
    assert unified_diff("f", "a\n", "").text == "--- f\n+++ f\n@@ -1,1 +1,0 @@\n-a"


def test_diff_truncation_note():
    old = "".join(f"line {i}\n" for i in range(2000))
    new = old.replace("line", "LINE")
    text = truncated_diff("f", old, new)
    head, note = text.rsplit("\n", 1)
    assert len(head.encode()) <= 8192
    assert note == "... diff truncated to 8192 bytes; full diff stats: +2000|-2000. Use read_file to inspect current content."
    assert truncated_diff("f", "a\n", "b\n") == "--- f\n+++ f\n@@ -1,1 +1,1 @@\n-a\n+b"


def test_diff_truncation_keeps_characters_whole():
    old = "é\n" * 5000
    text = truncated_diff("f", old, "")
    assert "\ufffd" not in text and "diff truncated to 8192 bytes" in text
