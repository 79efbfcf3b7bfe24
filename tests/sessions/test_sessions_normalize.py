"""Tool normalization of stored calls: derived result details (kward.rpc.wire.transcript), and the
shape of the tool_execution_end record (kward.sessions.codec) that transcripts read back."""

from __future__ import annotations

import json

from kward.model import ToolCall, is_error_text
from kward.rpc.wire.transcript import call_arguments, result_details
from kward.sessions.codec import tool_execution_fields
from kward.tools.base import ToolResult


def is_error_result(text):
    return isinstance(text, str) and is_error_text(text)


def test_tool_execution_record_from_a_tool_result():
    result = ToolResult.text("Edited a.py: replaced 1 block(s)\n--- a.py\n+++ a.py", diff="--- a.py\n+++ a.py",
                             changed_files=["a.py"])
    args = json.dumps({"path": "a.py", "edits": [{"old_text": "x", "new_text": "y"}]})
    call = ToolCall("c1", "edit_file", args)
    fields = tool_execution_fields(call, result)
    assert fields == {
        "toolCallId": "c1", "toolName": "edit",
        "args": {"path": "a.py", "edits": [{"oldText": "x", "newText": "y"}]},
        "result": {"content": result.content, "isError": False, "images": [], "diff": "--- a.py\n+++ a.py",
                   "changedFiles": ["a.py"]},
        "isError": False,
    }


def test_call_arguments_and_errors():
    assert call_arguments("run_shell_command", '{"command": "ls", "timeout_seconds": 5}') == {"command": "ls",
                                                                                             "timeout": 5}
    assert call_arguments("list_directory", "{not json") == {}
    assert call_arguments(None, {"max_results": 1}) == {"maxResults": 1}
    assert is_error_result("Declined: no") and is_error_result("Cancelled.") and not is_error_result(None)


def test_result_details_only_for_successful_edits_and_writes():
    text = "Wrote 3 bytes to n.txt\n--- n.txt\n+++ n.txt"
    assert result_details("write_file", '{"path": "n.txt"}', text) == {"diff": "--- n.txt\n+++ n.txt",
                                                                      "changedFiles": ["n.txt"]}
    assert result_details("write_file", '{"path": "n.txt"}', "Error: not read first") == {}
    assert result_details("read_file", '{"path": "n.txt"}', text) == {}
