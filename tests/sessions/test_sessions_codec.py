"""The codec's fast path for plain records: what a resume loads and a clone copies."""

from __future__ import annotations

import json

from kward.model import AssistantMessage, ToolResultMessage, UserMessage
from kward.sessions.codec import decode, encode, stored_chars
from kward.sessions.opening import derive_session, load_session
from lib.session_records import header, message_record, strict_records, write_lines

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
    path = write_lines(tmp_path / "s.jsonl", [header(cwd=str(ws))] + [message_record(m) for m in MESSAGES])
    source = load_session(str(path), str(ws))
    try:
        clone = derive_session(tmp_path / "sessions", source, list(source.conversation))
    finally:
        source.close()
    try:
        copied = [r["message"] for r in strict_records(clone.path) if r["type"] == "message"]
        assert [json.dumps(m) for m in copied] == [json.dumps(m) for m in MESSAGES]
        assert [type(m) for m in clone.conversation] == [type(m) for m in source.conversation]
        assert clone.conversation == source.conversation
    finally:
        clone.close()


# --- the texts a listing reads from records agree with the decoded messages ----------

def _typed_text(content) -> str:
    from kward.model import OtherPart, TextPart

    if isinstance(content, str):
        return content
    return " ".join(p.text for p in content if isinstance(p, (TextPart, OtherPart)) and p.text is not None)


def _decoded_shown(message) -> str:
    from kward.model import CompactionSummary

    if isinstance(message, CompactionSummary):
        return message.summary
    if isinstance(message, UserMessage) and message.display is not None:
        return _typed_text(message.display)
    return _typed_text(getattr(message, "content", ""))


PARTS = ["plain", 7, None, True, {"type": "text", "text": "a"}, {"type": "text", "text": 5},
         {"type": "input_text", "text": "b"}, {"type": "output_text", "text": "c"},
         {"type": "image", "data": "xx", "mimeType": "image/png", "text": "alt"}, {"type": "image_url", "image_url": "u"},
         {"type": "thinking", "thinking": "hm", "text": "t"}, {"type": "reasoning", "text": "r"},
         {"type": "thinking", "text": None}, {"type": "toolCall", "id": "1", "name": "x", "text": "tc"},
         {"type": "odd", "text": "kept"}, {"type": "odd"}, {"text": 3.5}, ["nested"]]
CONTENTS = ["text", "", None, 3, {"a": 1}, [], *([p] for p in PARTS), PARTS]


def test_the_text_a_listing_reads_from_a_record_is_the_decoded_message_s():
    from kward.sessions.format import first_kept_entry_id, shown_text

    records = []
    for content in CONTENTS:
        records += [{"role": "user", "content": content}, {"role": "user", "content": "typed", "display_content": content},
                    {"role": "assistant", "content": content}, {"role": "toolResult", "content": content},
                    {"role": "odd", "content": content}, {"role": 5, "content": content},
                    {"role": "compactionSummary", "summary": content, "first_kept_entry_id": "message:3"},
                    {"role": "compactionSummary", "content": content, "firstKeptEntryId": "m"},
                    {"role": "compactionSummary", "summary": content, "first_kept_entry_id": 4}]
    for record in records:
        message = decode(json.loads(json.dumps(record)))
        assert shown_text(record) == _decoded_shown(message), record
        kept = getattr(message, "first_kept_entry_id", None) if record["role"] == "compactionSummary" else None
        assert first_kept_entry_id(record) == kept, record
