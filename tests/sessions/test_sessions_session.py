"""OpenSession: live state, records, catching up with other writers, closing."""

from __future__ import annotations

import os

import pytest

from kward.errors import SessionNotFound
from kward.sessions.opening import create_session, load_session
from lib.session_manager import payload
from lib.session_records import assistant, recorded, strict_records, typed, user


@pytest.fixture
def session(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = create_session(tmp_path / "sessions", str(ws))
    yield s
    s.close(delete_if_unused=False)


def test_reload_and_refresh_do_not_replay_twice(session, tmp_path):
    session.append_message(typed(user("a")))
    again = load_session(session.path, str(tmp_path))
    again.refresh()
    assert [m["content"] for m in recorded(again.conversation)] == ["a"]
    again.close(delete_if_unused=False)


def test_two_views_of_one_file_stay_consistent(session, tmp_path):
    other = load_session(session.path, str(tmp_path))
    session.append_message(typed(user("1")))
    other.append_message(typed(assistant("2")))  # lands after "1": folds it in first
    session.rename("named by one")
    other.append_record("session_info", model="m")  # carries the current name
    session.refresh()
    for view in (session, other, load_session(session.path, str(tmp_path))):
        assert [m["content"] for m in recorded(view.conversation)] == ["1", "2"]
        assert view.name == "named by one" and view.model == "m"
    other.close(delete_if_unused=False)


def test_session_info_without_name_keeps_the_name(session):
    session.rename("keep")
    record = session.append_record("session_info", model="gpt", reasoningEffort="high")
    assert record["name"] == "keep" and session.name == "keep"
    assert (session.model, session.reasoning_effort) == ("gpt", "high")


def test_live_compaction_matches_a_reload(session, tmp_path):
    for i in range(4):
        session.append_message(typed(user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}")))
    session.append_record("compaction", message={"role": "compactionSummary", "summary": "S",
                                                 "first_kept_entry_id": "message:2", "tokens_before": 5})
    session.append_message(typed(user("after")))
    assert [m.get("content", m.get("summary")) for m in recorded(session.conversation)] == ["S", "u2", "a3", "after"]
    assert load_session(session.path, str(tmp_path)).conversation == session.conversation
    with pytest.raises(ValueError):
        session.append_record("compaction", message="not a dict")


def test_is_empty_and_delete_if_unused(session):
    assert session.is_empty
    session.append_message(typed({"role": "system", "content": "s"}))
    assert session.is_empty  # a system message is not content
    session.begin_work()
    assert not session.delete_if_unused()  # busy
    session.end_work()
    assert session.delete_if_unused()
    assert not os.path.exists(session.path) and session.closed
    with pytest.raises(SessionNotFound):
        session.append_message(typed(user("late")))


def test_close_is_idempotent_and_keeps_content(session):
    session.append_message(typed(user("x")))
    assert session.close() is False and session.close() is False
    assert strict_records(session.path)[-1]["message"]["content"] == "x"
    assert payload(session)["persistentId"] == session.persistent_id  # still describable


def test_messages_are_persisted_as_given(session):
    message = {"role": "assistant", "content": "c", "tool_calls": [], "usage": {"total_tokens": 3},
               "provider": "Scripted", "model": "demo"}
    typed_message = typed(message)
    session.append_message(typed_message)
    record = strict_records(session.path)[-1]
    assert record["type"] == "message" and record["message"] == message and record["timestamp"].endswith("Z")
    assert session.conversation[-1] is typed_message
    with pytest.raises(TypeError):
        session.append_message("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        session.append_message(message)  # type: ignore[arg-type]: a record, not a message
