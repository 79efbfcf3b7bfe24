"""The runtime facade used directly, with no RPC in between: what a terminal face does.

A Runtime over a temp config directory, the Scripted provider and a thread pool of the
test's own; turn events go to a Python sink, questions to a notify callable."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kward.config.store import ConfigStore, resolve_paths
from kward.config.settings import resolve_settings
from kward.errors import SessionNotFound
from kward.model import TurnEvent
from kward.rpc.wire import events as wire
from kward.rpc.wire import runtime as wire_sessions
from kward.runtime import Runtime
from kward.runtime.notices import QuestionAsked, SessionEvent
from lib.scripts import text, tool, write_script
from lib.turn_events import check_turn_events

QUESTION = {"question": "Which one?", "header": "Pick", "options": [{"label": "A", "description": "a"},
                                                                     {"label": "B", "description": "b"}]}


class Sink:
    """Collects events (any thread; turn events as the protocol shows them) and waits for a
    condition on them."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self._cond = threading.Condition()

    def __call__(self, event) -> None:
        with self._cond:
            self.events.append(wire.turn_event(event) if isinstance(event, TurnEvent) else event)
            self._cond.notify_all()

    def wait(self, predicate, timeout: float = 10.0) -> list[dict]:
        with self._cond:
            assert self._cond.wait_for(lambda: predicate(self.events), timeout), self.events
            return list(self.events)

    def finished(self, timeout: float = 10.0) -> list[dict]:
        return self.wait(lambda evs: any(e["type"] == "turnFinished" for e in evs), timeout)


class Notices(Sink):
    def __call__(self, notice) -> None:  # type: ignore[override]
        super().__call__(notice)


def question(notices: Notices) -> QuestionAsked:
    """The first QuestionAsked notice, once it arrived (session notices may come before it)."""
    asked = notices.wait(lambda ns: any(isinstance(n, QuestionAsked) for n in ns))
    return next(n for n in asked if isinstance(n, QuestionAsked))


@pytest.fixture
def make_runtime(isolated_home: Path, tmp_path: Path):
    made: list[tuple[Runtime, ThreadPoolExecutor]] = []

    def make(steps: list) -> tuple[Runtime, Path, Sink, Notices]:
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        env = {"HOME": str(isolated_home), "KWARD_PROVIDER": "scripted",
               "KWARD_SCRIPT": str(write_script(tmp_path / "scripts", steps))}
        paths = resolve_paths(env)
        pool = ThreadPoolExecutor(4, thread_name_prefix="test-runtime")

        def submit(job) -> bool:
            try:
                pool.submit(job)
            except RuntimeError:  # shut down
                return False
            return True

        default_sink, notices = Sink(), Notices()
        rt = Runtime(paths=paths, config=ConfigStore(paths), settings=resolve_settings({}, env), launch_cwd=ws,
                     env=env, submit=submit, event_sink=default_sink, notify=notices)
        made.append((rt, pool))
        return rt, ws, default_sink, notices

    yield make
    for rt, pool in made:
        rt.shutdown()
        pool.shutdown(wait=True)


def records(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_scripted_turn_through_the_facade(make_runtime):
    rt, ws, default_sink, _ = make_runtime([[text("Hello "), text("there.")]])
    assert rt.info().steering is True and not rt.has_service("engine")  # Scripted steers; nothing built yet
    session = rt.create_session(str(ws))
    sink = Sink()
    turn = rt.start_turn(session.id, "Say hello", sink=sink)
    events = sink.finished()
    check_turn_events(events, "completed")
    assert {e["turnId"] for e in events} == {turn.id} and {e["sessionId"] for e in events} == {session.id}
    assert "".join(e["payload"]["delta"] for e in events if e["type"] == "assistantDelta") == "Hello there."
    assert default_sink.events == []  # the turn's own sink got everything
    assert rt.turn(turn.id).status == "completed"

    state = rt.state(session.id)
    assert (state.streaming, state.pending, state.message_count) == (False, 0, 2)
    assert state.ids.id == session.id and state.ids.name == "Say hello" and state.workspace_root == str(ws)
    assert state.model is not None and state.model.provider == "Scripted" and state.provider_error is None
    stats = wire_sessions.session_stats(rt.stats(session.id))
    assert stats["totalMessages"] == 2 and stats["userMessages"] == 1

    path = session.path
    assert rt.close_session(session.id) is None
    with pytest.raises(SessionNotFound):
        rt.session(session.id)
    messages = [r["message"] for r in records(path) if r.get("type") == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == "Say hello"


def test_turns_without_a_sink_use_the_runtime_sink(make_runtime):
    rt, ws, default_sink, _ = make_runtime([[text("one")]])
    session = rt.create_session(str(ws))
    turn = rt.start_turn(session.id, "go")
    check_turn_events(default_sink.finished(), "completed")
    assert {e["turnId"] for e in default_sink.events} == {turn.id}


def test_close_cancels_the_running_turn_and_waits_for_its_end(make_runtime):
    rt, ws, _, notices = make_runtime([[tool("ask_user_question", {"questions": [QUESTION]})], [text("never")]])
    session = rt.create_session(str(ws))
    sink = Sink()
    turn = rt.start_turn(session.id, "ask me", sink=sink)
    asked = question(notices)
    assert asked.session_id == session.id
    assert asked.questions[0]["question"] == "Which one?"
    assert rt.state(session.id).streaming is True
    assert rt.close_session(session.id) is None
    # close returned after the turn ended: its turnFinished is already out
    assert sink.events[-1]["type"] == "turnFinished" and sink.events[-1]["payload"]["status"] == "canceled"
    check_turn_events(sink.events, "canceled")
    assert rt.turn(turn.id).status == "canceled"


def test_an_answered_question_resumes_the_turn_and_delete_removes_the_file(make_runtime):
    rt, ws, _, notices = make_runtime([[tool("ask_user_question", {"questions": [QUESTION]})], [text("You chose.")]])
    session = rt.create_session(str(ws))
    sink = Sink()
    rt.start_turn(session.id, "ask me", sink=sink)
    asked = question(notices)
    # before it: the automatic name and the usage of the model call that asked (session notices)
    assert [(n.type, n.session_id) for n in notices.events if isinstance(n, SessionEvent)][:2] == [
        ("sessionUpdated", session.id), ("usageUpdated", session.id)]
    rt.answer_question(session.id, asked.request_id, ["B"])
    events = sink.finished()
    check_turn_events(events, "completed")
    result = next(e for e in events if e["type"] == "toolResult")["payload"]
    assert "B" in json.dumps(result)
    path = session.path
    assert rt.delete_session(session.id) == path
    assert not Path(path).exists()


def test_the_change_tracker_of_a_session_goes_with_its_file(make_runtime):
    write = tool("write_file", {"path": "a.txt", "content": "a\n"})
    rt, ws, _, _ = make_runtime([[write], [text("one")], [text("two")]])
    session = rt.create_session(str(ws))
    sink = Sink()
    rt.start_turn(session.id, "write", sink=sink)
    check_turn_events(sink.finished(), "completed")
    again = rt.resume_session(session.path)  # another id on the same file: the same totals
    assert [f.path for f in rt.session_diff(again.id).files] == ["a.txt"] == \
        [f.path for f in rt.session_diff(session.id).files]
    rt.close_session(session.id)
    assert rt.engine.changes.get(again.shared) is not None  # the file is still open
    assert [f.path for f in rt.session_diff(again.id).files] == ["a.txt"]
    rt.close_session(again.id)
    assert again.shared.closed and rt.engine.changes.get(again.shared) is None
    other = rt.resume_session(session.path)  # opened again: what happened before is not known
    assert rt.session_diff(other.id).files == ()
    with pytest.raises(SessionNotFound):
        rt.session_diff(session.id)
