"""Reading session files: forgiving (skips what it cannot use) and honest (logs it)."""

from __future__ import annotations

import logging

import pytest

from kward.errors import InvalidParams
from kward.sessions.opening import load_session
from lib.session_records import (
    assistant, header, message_record, recorded, tool_result, typed, user, write_lines,
)

READER_LOG = "kward.sessions.reader"


def load(path, root):
    return load_session(str(path), str(root))


def contents(session):
    return [m.get("content", m.get("summary")) for m in recorded(session.conversation)]


def test_torn_blank_undecodable_and_unknown_lines_are_skipped_and_logged(tmp_path, caplog, capsys):
    path = write_lines(tmp_path / "s.jsonl", [
        header(),
        "",
        message_record(user("one")),
        "   ",
        b"\xff\xfe not json",
        "[1, 2]",
        {"type": "frobnicate", "x": 1},
        {"type": "message", "message": "not an object"},
        message_record(assistant("two")),
        '{"type":"message","message":{"role":"user","content":"torn',
    ], trailing_newline=False)
    with caplog.at_level(logging.DEBUG, logger="kward.sessions"):
        session = load(path, tmp_path)
    assert contents(session) == ["one", "two"]
    [warning] = [r for r in caplog.records if r.name == READER_LOG and r.levelno == logging.WARNING]
    text = warning.getMessage()
    assert "torn last line" in text and "2 undecodable" in text and "frobnicate" in text
    assert "1 malformed" in text and "2 blank" in text and str(path) in text
    assert capsys.readouterr().err == ""  # never stderr
    session.close(delete_if_unused=False)


def test_clean_file_logs_nothing(tmp_path, caplog):
    path = write_lines(tmp_path / "s.jsonl", [header(), message_record(user("hi"))])
    with caplog.at_level(logging.DEBUG, logger="kward.sessions"):
        load(path, tmp_path).close(delete_if_unused=False)
    assert not [r for r in caplog.records if r.name.startswith("kward.sessions")]


def test_complete_last_record_without_newline_is_kept(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [header(), message_record(user("a")), message_record(user("b"))],
                       trailing_newline=False)
    session = load(path, tmp_path)
    assert contents(session) == ["a", "b"]
    session.append_message(typed(user("c")))  # lands on its own line
    assert contents(load(path, tmp_path)) == ["a", "b", "c"]
    session.close()


@pytest.mark.parametrize("lines", [
    [],
    ["just some text", "more"],
    [message_record(user("no header"))],
    [{"type": "session", "version": 2, "id": "x", "cwd": "/"}],
    [{"type": "session", "version": "1", "id": "x"}],
    [{"type": "session", "version": 1}],
])
def test_non_session_files_are_refused(tmp_path, lines):
    path = write_lines(tmp_path / "x.jsonl", lines) if lines else tmp_path / "x.jsonl"
    if not lines:
        path.write_bytes(b"")
    with pytest.raises(InvalidParams) as err:
        load(path, tmp_path)
    assert "Not a Kward session file" in err.value.message and err.value.reason == "invalid_params"


@pytest.mark.parametrize("before", [[""], ["garbage"], ["", "garbage"]])
def test_the_header_must_be_the_first_line(tmp_path, before):
    path = write_lines(tmp_path / "s.jsonl", [*before, header(), message_record(user("x"))])
    with pytest.raises(InvalidParams) as err:
        load(path, tmp_path)
    assert "Not a Kward session file" in err.value.message


def compaction(first_kept, summary="S", **extra):
    return {"type": "compaction", "timestamp": "t",
            "message": {"role": "compactionSummary", "summary": summary, "first_kept_entry_id": first_kept,
                        "tokens_before": 10, **extra}}


def test_compaction_keeps_summary_and_messages_from_the_entry(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [
        header(),
        message_record({"role": "system", "content": "sys"}),
        message_record(user("u0")), message_record(assistant("a1")),
        message_record(user("u2")), message_record(assistant("a3")),
        compaction("message:2", "S1"),
        message_record(user("u4")),
        compaction("message:2", "S2"),  # positional within the branch: [S1, u2, a3, u4] -> a3
        message_record(user("u5", id="keep-me")),
        message_record(assistant("a6")),
        compaction("keep-me", "S3"),  # by message id
    ])
    session = load(path, tmp_path)
    assert contents(session) == ["S3", "u5", "a6"]
    session.close(delete_if_unused=False)


def test_compaction_with_unknown_or_missing_entry_keeps_only_the_summary(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [header(), message_record(user("u0")), compaction("message:99")])
    assert contents(load(path, tmp_path)) == ["S"]
    path = write_lines(tmp_path / "t.jsonl", [header(), message_record(user("u0")), compaction(None)])
    assert contents(load(path, tmp_path)) == ["S"]


def test_name_is_the_last_session_info(tmp_path):
    info = lambda **kw: {"type": "session_info", "timestamp": "t", **kw}  # noqa: E731
    path = write_lines(tmp_path / "a.jsonl", [header(), info(name="first"), info(name="  second  ")])
    assert load(path, tmp_path).name == "second"
    for cleared in (info(name=""), info(name=None), info(name="   "), info(model="m")):
        path = write_lines(tmp_path / "b.jsonl", [header(), info(name="x"), cleared])
        assert load(path, tmp_path).name is None
    path = write_lines(tmp_path / "c.jsonl", [header(model="h"), info(name="n", model="m2", reasoningEffort="high")])
    session = load(path, tmp_path)
    assert (session.name, session.model, session.reasoning_effort) == ("n", "m2", "high")


def test_read_paths_come_from_successful_read_file_results(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a")
    (ws / "b.txt").write_text("b")
    path = write_lines(tmp_path / "s.jsonl", [
        header(cwd=str(ws)),
        message_record(assistant(calls=[("c1", "read_file", {"path": "a.txt"}), ("c2", "read_file", {"path": "b.txt"}),
                                     ("c3", "read_file", {"path": "gone.txt"}),
                                     ("c4", "write_file", {"path": "w.txt", "content": ""})])),
        message_record(tool_result("c1", "read_file", "a")),
        message_record(tool_result("c2", "read_file", "Error: too big")),
        message_record(tool_result("c3", "read_file", "gone")),
        message_record(tool_result("c4", "write_file", "Wrote 0 bytes")),
    ])
    session = load(path, ws.resolve())
    assert session.read_paths == {str((ws / "a.txt").resolve())}
    session.append_record("compaction", message={"role": "compactionSummary", "summary": "s"})
    assert session.read_paths == set() and contents(session) == ["s"]
    session.close()
    assert load(path, ws.resolve()).read_paths == set()  # a reload agrees with the live view


def test_memory_state_is_the_last_record(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", [
        header(),
        {"type": "memory_state", "timestamp": "t", "sessionMemories": ["a"], "lastRetrieval": None},
        {"type": "memory_state", "timestamp": "t", "sessionMemories": ["b"], "lastRetrieval": {"q": 1}},
    ])
    assert load(path, tmp_path).memory_state == {"sessionMemories": ["b"], "lastRetrieval": {"q": 1}}


def test_successful_writes_and_edits_count_as_read_after_a_resume(tmp_path):
    """write_file adds its file to the live read set; a resumed session must agree, or a
    second write after the resume is refused as "must be read before writing"."""
    import json

    from kward.sessions.opening import create_session
    from kward.tools.base import ToolContext
    from kward.tools.registry import default_registry

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "old.txt").write_text("x\n")
    session = create_session(tmp_path / "sessions", str(ws.resolve()))
    ctx = ToolContext(workspace_root=ws, read_paths=session.read_paths)

    def run(call_id, name, **args):
        session.append_message(typed(assistant(calls=[(call_id, name, args)])))
        result = default_registry().run(name, json.dumps(args), ctx)
        session.append_message(typed(tool_result(call_id, name, result.content)))
        return result

    assert not run("c1", "write_file", path="new.txt", content="v1").is_error
    assert run("c2", "edit_file", path="old.txt", edits=[{"old_text": "x", "new_text": "y"}]).is_error  # not read
    assert not run("c3", "read_file", path="old.txt").is_error
    assert not run("c4", "edit_file", path="old.txt", edits=[{"old_text": "x", "new_text": "y"}]).is_error
    live = set(session.read_paths)
    assert live == {str((ws / "new.txt").resolve()), str((ws / "old.txt").resolve())}
    session.close()

    resumed = load(session.path, ws.resolve())
    assert resumed.read_paths == live
    ctx2 = ToolContext(workspace_root=ws, read_paths=resumed.read_paths)
    assert default_registry().run("write_file", json.dumps({"path": "new.txt", "content": "v2"}), ctx2).content \
        .startswith("Wrote 2 bytes to new.txt")
    resumed.close()
