"""The codec's fast path for plain records: what a resume loads and a clone copies."""

from __future__ import annotations

import json

from kward.model import AssistantMessage, ToolResultMessage, UserMessage
from kward.sessions.codec import decode, encode, stored_chars
from kward.sessions.opening import derive_session, load_session
from lib.sessions_helpers import file_records, header, message_rec, write_lines

#: Plain shapes in kward's key order, then near misses: other key orders, extra keys,
#: other types, other roles.
MESSAGES = [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "a"},
    {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "text"},
    {"role": "tool", "tool_call_id": "c2", "name": "", "content": "Error: no"},
    {"content": "content first", "role": "user"},
    {"content": "a", "role": "assistant"},
    {"role": "tool", "name": "bash", "tool_call_id": "c3", "content": "out"},
    {"role": "user", "content": "q", "id": "m1"},
    {"role": "user", "content": [{"type": "text", "text": "parts"}]},
    {"role": "assistant", "content": None},
    {"role": "tool", "tool_call_id": None, "name": "bash", "content": "x"},
    {"role": "tool", "tool_call_id": "c4", "name": 5, "content": "x"},
    {"role": "toolResult", "toolCallId": "c5", "toolName": "bash", "content": "x"},
    {"role": "system", "content": "sys"},
    {"role": 5, "content": "odd"},
]


def test_plain_records_decode_to_plain_messages_and_encode_back_in_order():
    assert decode({"role": "user", "content": "q"}) == UserMessage("q")
    assert decode({"role": "assistant", "content": "a"}) == AssistantMessage("a")
    assert decode(dict(MESSAGES[2])) == ToolResultMessage("c1", "read_file", "text")
    for raw in MESSAGES:
        message = decode(dict(raw))
        assert json.dumps(encode(message)) == json.dumps(raw)
        content = raw.get("content")
        assert stored_chars(message) == (len(content) if isinstance(content, str) else len(json.dumps(content or "")))


def test_a_clone_of_a_loaded_session_copies_every_message_as_written(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    path = write_lines(tmp_path / "s.jsonl", [header(cwd=str(ws))] + [message_rec(m) for m in MESSAGES])
    source = load_session(str(path), str(ws))
    try:
        clone = derive_session(tmp_path / "sessions", source, list(source.conversation))
    finally:
        source.close()
    try:
        copied = [r["message"] for r in file_records(clone.path) if r["type"] == "message"]
        assert [json.dumps(m) for m in copied] == [json.dumps(m) for m in MESSAGES]
        assert [type(m) for m in clone.conversation] == [type(m) for m in source.conversation]
        assert clone.conversation == source.conversation
    finally:
        clone.close()
