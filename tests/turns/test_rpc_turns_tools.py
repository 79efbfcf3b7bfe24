"""Every tool through a scripted tool call over the real `kward rpc`: the toolCall/toolResult
payloads a UI renders (normalized name, camelCase args, raw call, legacy metadata, result
with diff and changed files), the session records, what really changed on disk, and the
failure paths (a tool error, path escapes, an unknown tool, invalid JSON arguments)."""

import json
import os

import pytest

from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, payload


def tool_events(events):
    calls = [e["payload"] for e in events if e["type"] == "toolCall"]
    results = [e["payload"] for e in events if e["type"] == "toolResult"]
    assert [c["toolCallId"] for c in calls] == [r["toolCallId"] for r in results]
    return calls, results


def results_by_id(events):
    return {r["toolCallId"]: r for r in tool_events(events)[1]}


def run_tools(kward, calls, files=None, answer="done"):
    """One turn whose first model call makes `calls`, then answers; returns (k, session, events)."""
    k = kward([calls, [text(answer)]], files=files)
    s = k.session()
    _, events = k.run(s["id"], "use the tools")
    check_turn_events(events, "completed")
    return k, s, events


def test_tool_call_and_result_payloads_carry_every_normalized_field(kward):
    k, s, events = run_tools(kward, [tool("read_file", {"path": "a.txt", "offset": 2, "limit": 1}, id="c1")],
                             files={"a.txt": "one\ntwo\nthree\n"})
    (call,), (result,) = tool_events(events)
    raw = {"id": "c1", "type": "function",
           "function": {"name": "read_file", "arguments": json.dumps({"path": "a.txt", "offset": 2, "limit": 1})}}
    assert call == {"toolCallId": "c1", "toolName": "read", "args": {"path": "a.txt", "offset": 2, "limit": 1},
                    "rawToolCall": raw, "toolCall": raw,
                    "tool": {"name": "read_file", "displayName": "read", "path": "a.txt"},
                    "metadata": {"source": "builtin", "displayName": "Read"}}
    assert {k_: v for k_, v in result.items() if k_ not in ("content", "result")} == call
    assert result["content"] == "two\n\n[2 more lines in file. Use offset=3 to continue.]"
    assert result["result"] == {"content": result["content"], "isError": False, "images": []}
    # the tool message and the audit record in the session file
    messages = k.messages(s)
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": result["content"]}
    (audit,) = [r for r in k.records(s) if r["type"] == "tool_execution_end"]
    assert audit["toolCallId"] == "c1" and audit["toolName"] == "read" and audit["args"] == call["args"]
    assert audit["result"] == result["result"] and audit["isError"] is False


@pytest.mark.slow
def test_list_directory_and_search_files(kward):
    files = {"README.md": "# Demo\n", "src/app.py": "def main():\n    return 42  # TODO tidy\n",
             "src/util.py": "# TODO: more\n", "docs/guide.txt": "TODO in docs\n", ".git/config": "TODO in git\n"}
    k, s, events = run_tools(kward, [
        tool("list_directory", {"path": "."}, id="ls"),
        tool("list_directory", {"path": "src"}, id="ls_src"),
        tool("search_files", {"pattern": "TODO", "glob": "*.py", "max_results": 10}, id="grep_py"),
        tool("search_files", {"pattern": "todo", "case_sensitive": False}, id="grep_all"),
        tool("search_files", {"pattern": "nothing-matches-this"}, id="grep_none"),
    ], files=files)
    r = results_by_id(events)
    assert r["ls"]["content"] == ".git/\nREADME.md\ndocs/\nsrc/"
    assert r["ls"]["toolName"] == "list_directory" and r["ls"]["args"] == {"path": "."}
    assert r["ls_src"]["content"] == "app.py\nutil.py"
    assert r["grep_py"]["toolName"] == "search_files"
    assert r["grep_py"]["args"] == {"pattern": "TODO", "glob": "*.py", "maxResults": 10}
    assert r["grep_py"]["content"] == "src/app.py:2:     return 42  # TODO tidy\nsrc/util.py:1: # TODO: more"
    assert r["grep_all"]["args"] == {"pattern": "todo", "caseSensitive": False}
    assert r["grep_all"]["content"].splitlines() == [
        "docs/guide.txt:1: TODO in docs", "src/app.py:2:     return 42  # TODO tidy", "src/util.py:1: # TODO: more"]
    assert r["grep_none"]["content"] == "No matches found for /nothing-matches-this/ in .."
    assert all(res["result"]["isError"] is False for res in r.values())


def test_write_file_creates_and_rewrites_with_a_diff(kward):
    k, s, events = run_tools(kward, [
        tool("write_file", {"path": "new/dir/hello.txt", "content": "hi there\n"}, id="create"),
        tool("read_file", {"path": "old.txt"}, id="read_old"),
        tool("write_file", {"path": "old.txt", "content": "alpha\nBETA\n"}, id="rewrite"),
    ], files={"old.txt": "alpha\nbeta\n"})
    r = results_by_id(events)
    create = r["create"]
    assert create["toolName"] == "write" and create["args"] == {"path": "new/dir/hello.txt", "content": "hi there\n"}
    assert create["tool"] == {"name": "write_file", "displayName": "write", "path": "new/dir/hello.txt"}
    assert create["result"] == {"content": "Wrote 9 bytes to new/dir/hello.txt", "isError": False, "images": [],
                                "changedFiles": ["new/dir/hello.txt"]}
    assert (k.ws / "new/dir/hello.txt").read_text() == "hi there\n"
    rewrite = r["rewrite"]["result"]
    assert rewrite["isError"] is False and rewrite["changedFiles"] == ["old.txt"]
    assert rewrite["content"].startswith("Wrote 11 bytes to old.txt\n--- ")
    diff = rewrite["diff"]
    assert diff.startswith("--- ") and "\n+++ " in diff and "\n@@ " in diff
    assert "\n-beta" in diff and "\n+BETA" in diff and rewrite["content"].endswith(diff)
    assert (k.ws / "old.txt").read_text() == "alpha\nBETA\n"
    audits = {a["toolCallId"]: a for a in k.records(s) if a["type"] == "tool_execution_end"}
    assert audits["rewrite"]["result"]["diff"] == diff


def test_edit_file_payload_uses_old_and_new_text_and_changes_the_file(kward):
    edits = [{"old_text": "return 1", "new_text": "return 2"}, {"old_text": "# top", "new_text": "# head"}]
    k, s, events = run_tools(kward, [
        tool("read_file", {"path": "m.py"}, id="read"),
        tool("edit_file", {"path": "m.py", "edits": edits}, id="edit"),
    ], files={"m.py": "# top\ndef f():\n    return 1\n"})
    edit = results_by_id(events)["edit"]
    assert edit["toolName"] == "edit"
    assert edit["args"] == {"path": "m.py", "edits": [{"oldText": "return 1", "newText": "return 2"},
                                                      {"oldText": "# top", "newText": "# head"}]}
    assert edit["tool"] == {"name": "edit_file", "displayName": "edit", "path": "m.py"}
    result = edit["result"]
    assert result["isError"] is False and result["changedFiles"] == ["m.py"]
    assert result["content"].startswith("Edited m.py: replaced 2 block(s)\n")
    assert "\n-    return 1" in result["diff"] and "\n+    return 2" in result["diff"]
    assert "\n-# top" in result["diff"] and "\n+# head" in result["diff"]
    assert (k.ws / "m.py").read_text() == "# head\ndef f():\n    return 2\n"
    # the raw call keeps the model's snake_case arguments
    assert json.loads(edit["rawToolCall"]["function"]["arguments"])["edits"] == edits


@pytest.mark.slow
def test_run_shell_command_in_the_workspace(kward):
    k, s, events = run_tools(kward, [
        tool("run_shell_command", {"command": "pwd; echo out; echo err >&2; exit 3", "timeout_seconds": 5}, id="sh"),
        tool("run_shell_command", {"command": "cat > created.txt; echo made"}, id="stdin"),
        tool("run_shell_command", {"command": "sleep 5", "timeout_seconds": 1}, id="slow"),
    ])
    r = results_by_id(events)
    sh = r["sh"]
    assert sh["toolName"] == "bash" and sh["args"] == {"command": "pwd; echo out; echo err >&2; exit 3",
                                                       "timeout": 5}
    assert sh["tool"] == {"name": "run_shell_command", "displayName": "bash",
                          "command": "pwd; echo out; echo err >&2; exit 3"}
    assert sh["result"] == {"content": f"Exit status: 3\n\nSTDOUT:\n{os.path.realpath(k.ws)}\nout\n\nSTDERR:\nerr\n",
                            "isError": False, "images": []}
    assert r["stdin"]["args"] == {"command": "cat > created.txt; echo made", "timeout": 30}
    assert r["stdin"]["content"] == "Exit status: 0\n\nSTDOUT:\nmade\n"  # stdin is closed: cat ends at once
    assert (k.ws / "created.txt").read_bytes() == b""
    assert r["slow"]["result"]["isError"] is True
    assert r["slow"]["content"] == "Error: command timed out after 1 seconds"


@pytest.mark.slow
def test_tool_failures_are_results_and_the_turn_goes_on(kward):
    k, s, events = run_tools(kward, [
        tool("edit_file", {"path": "f.txt", "edits": [{"old_text": "a", "new_text": "b"}]}, id="unread_edit"),
        tool("write_file", {"path": "f.txt", "content": "clobbered"}, id="unread_write"),
        tool("read_file", {"path": "missing.txt"}, id="missing"),
        tool("read_file", {"path": "f.txt"}, id="read"),
        tool("edit_file", {"path": "f.txt", "edits": [{"old_text": "zzz", "new_text": "b"}]}, id="no_match"),
        tool("frobnicate", {"x": 1}, id="unknown"),
        tool("read_file", "{not json", id="bad_json"),
        tool("read_file", {}, id="no_path"),
    ], files={"f.txt": "a line\n"}, answer="recovered")
    r = results_by_id(events)
    expect = {
        "unread_edit": "Error: existing file must be read before editing: f.txt",
        "unread_write": "Error: existing file must be read before writing: f.txt",
        "missing": "Error: no such file or directory: missing.txt",
        "no_match": "Error: edits[0].old_text was not found in f.txt",
        "unknown": "Unknown tool: frobnicate",
        "no_path": "Error: path is required",
    }
    for call_id, content in expect.items():
        assert r[call_id]["content"] == content, call_id
        assert r[call_id]["result"] == {"content": content, "isError": True, "images": []}, call_id
    assert r["unknown"]["toolName"] == "frobnicate" and r["unknown"]["args"] == {"x": 1}
    bad = r["bad_json"]
    assert bad["content"].startswith("Error: invalid JSON arguments for read_file") and bad["result"]["isError"]
    assert bad["args"] == {} and bad["rawToolCall"]["function"]["arguments"] == "{not json"
    assert r["read"]["result"]["isError"] is False
    assert (k.ws / "f.txt").read_text() == "a line\n"
    assert payload(events, "answer") == {"content": "recovered"}
    audits = {a["toolCallId"]: a for a in k.records(s) if a["type"] == "tool_execution_end"}
    assert audits["unknown"]["isError"] is True and audits["read"]["isError"] is False


@pytest.mark.slow
def test_paths_outside_the_workspace_are_refused(kward, isolated_home):
    outside = isolated_home / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    k = kward([[
        tool("read_file", {"path": "../outside/secret.txt"}, id="dotdot"),
        tool("read_file", {"path": str(outside / "secret.txt")}, id="absolute"),
        tool("read_file", {"path": "/etc/hostname"}, id="etc"),
        tool("read_file", {"path": "link/secret.txt"}, id="symlink_dir"),
        tool("read_file", {"path": "file_link"}, id="symlink_file"),
        tool("list_directory", {"path": ".."}, id="list_parent"),
        tool("write_file", {"path": "../outside/new.txt", "content": "x"}, id="write_dotdot"),
        tool("write_file", {"path": "link/new.txt", "content": "x"}, id="write_symlink"),
        tool("write_file", {"path": str(outside / "abs.txt"), "content": "x"}, id="write_abs"),
        tool("edit_file", {"path": "file_link", "edits": [{"old_text": "top", "new_text": "no"}]}, id="edit_link"),
        tool("search_files", {"pattern": "secret", "path": "../outside"}, id="search_out"),
        tool("search_files", {"pattern": "top secret"}, id="search_in"),
    ], [text("refused")]])
    os.symlink(outside, k.ws / "link")
    os.symlink(outside / "secret.txt", k.ws / "file_link")
    s = k.session()
    _, events = k.run(s["id"])
    check_turn_events(events, "completed")
    r = results_by_id(events)
    given = {"dotdot": "../outside/secret.txt", "absolute": str(outside / "secret.txt"), "etc": "/etc/hostname",
             "symlink_dir": "link/secret.txt", "symlink_file": "file_link", "list_parent": "..",
             "write_dotdot": "../outside/new.txt", "write_symlink": "link/new.txt",
             "write_abs": str(outside / "abs.txt"), "edit_link": "file_link", "search_out": "../outside"}
    for call_id, path in given.items():
        assert r[call_id]["content"] == f"Error: path outside workspace: {path}", call_id
        assert r[call_id]["result"]["isError"] is True
    # the search of the workspace skips the symlinked file that points out
    assert r["search_in"]["content"] == "No matches found for /top secret/ in .."
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not any("top secret\n" in res["content"] for res in r.values())


def test_a_tool_results_error_flag_is_stored_and_the_transcript_agrees_with_the_event(kward):
    k, s, events = run_tools(kward, [tool("frobnicate", {"x": 1}, id="unknown"),
                                     tool("read_file", {"path": "a.txt"}, id="read")], files={"a.txt": "hi\n"})
    live = {r["toolCallId"]: r["result"]["isError"] for r in tool_events(events)[1]}
    assert live == {"unknown": True, "read": False}

    def shown(client, session_id):
        return {m["toolCallId"]: m["isError"] for m in client.transcript(session_id)["messages"]
                if m["role"] == "toolResult"}

    assert shown(k, s["id"]) == live
    k.close()
    other = kward()  # a new process resumes the file
    resumed = other.resume(s["path"])
    assert shown(other, resumed["id"]) == live
