"""Controlling turns over the real `kward rpc`: follow-up queueing (FIFO per session),
steering, cancellation of queued and running turns (a scripted delay, a long shell command
whose processes must be gone, a pending question) and the ui/question bridge.

A turn is held "running" deterministically by a pending ui/question or a waitForSteer step,
never by timing."""

import contextlib
import os
import threading

import pytest

from kward.agent.eventlog import EventLog
from kward.agent.scheduler import TurnManager
from kward.errors import InvalidParams, SessionBusy
from kward.model import Answer, Finished, Status
from kward.rpc.wire import events as wire
from lib.processes import pid_alive
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import delay, text, tool, wait_for_steer
from lib.turn_events import check_turn_events, payload, payloads, types
from lib.waiting import wait_until

QUESTION = {"question": "Which color?", "header": "Color",
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}


def ask(id="ask", questions=(QUESTION,)):
    return tool("ask_user_question", {"questions": list(questions)}, id=id)


def parent_pid(pid):
    """The parent of `pid`, or None when it is gone entirely."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except FileNotFoundError:
        return None


def position(k, turn_id, type_):
    """Index of a turn event in the order notifications arrived."""
    for i, n in enumerate(k.client.notifications):
        p = n["params"]
        if n["method"] == "turn/event" and p["turnId"] == turn_id and p["type"] == type_:
            return i
    raise AssertionError(f"no {type_} for {turn_id}")


def answer(k, sid, q, answers):
    return k.request("ui/answerQuestion", {"sessionId": sid, "questionRequestId": q["questionRequestId"],
                                           "answers": answers})


def test_turns_of_one_session_run_one_at_a_time_in_fifo_order(kward):
    k = kward([[ask()], [text("first done")], [text("second done")], [text("third done")]])
    s = k.session()
    sid = s["id"]
    t1 = k.start(sid, "one")
    q = k.question()
    t2 = k.start(sid, "two", streamingBehavior="followUp")
    t3 = k.start(sid, "three", streamingBehavior="newTurn")
    assert t2["status"] == t3["status"] == "queued" and t2["sessionId"] == sid
    assert k.request("turns/status", {"turnId": t1["id"]})["status"] == "running"
    assert k.request("turns/status", {"turnId": t3["id"]})["status"] == "queued"
    state = k.request("runtime/state", {"sessionId": sid})
    assert state["isStreaming"] is True and state["pendingMessageCount"] == 2
    assert types(k.events(t2["id"])) == ["turnQueued"]
    assert answer(k, sid, q, ["Blue"]) == {"ok": True}
    e3 = k.finish(t3["id"])
    e1, e2 = k.events(t1["id"]), k.events(t2["id"])
    for events, answer_text in ((e1, "first done"), (e2, "second done"), (e3, "third done")):
        check_turn_events(events, "completed")
        assert payload(events, "answer") == {"content": answer_text}
    assert position(k, t1["id"], "turnFinished") < position(k, t2["id"], "turnStarted")
    assert position(k, t2["id"], "turnFinished") < position(k, t3["id"], "turnStarted")
    assert position(k, t2["id"], "turnQueued") < position(k, t1["id"], "turnFinished")
    assert [(m["role"], m["content"]) for m in k.messages(s) if m["role"] == "user"] == \
        [("user", "one"), ("user", "two"), ("user", "three")]
    state = k.request("runtime/state", {"sessionId": sid})
    assert state["isStreaming"] is False and state["pendingMessageCount"] == 0


def test_steering_a_running_turn(kward):
    k = kward([[wait_for_steer(20), text("noted")], [text("done with "), text("both")]])
    s = k.session()
    turn = k.start(s["id"], "start")
    k.wait_event(turn["id"], "turnStarted")
    steered = k.start(s["id"], "also check the tests", streamingBehavior="steer")
    assert steered["id"] == turn["id"] and steered["status"] == "running"
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert types(events) == ["turnQueued", "turnStarted", "assistantDelta", "assistantMessage", "turnSteered",
                             "assistantDelta", "assistantDelta", "assistantMessage", "answer", "turnDiff",
                             "turnFinished"]
    assert payloads(events, "turnSteered")[0]["input"] == "also check the tests"
    assert payloads(events, "answer") == [{"content": "done with both"}]
    # the steered input is a user message written before the next model call's answer
    assert [(m["role"], m["content"]) for m in k.messages(s)] == [
        ("user", "start"), ("assistant", "noted"), ("user", "also check the tests"), ("assistant", "done with both")]
    assert len({e["turnId"] for e in k.events()}) == 1  # steering made no new turn


def test_omitted_streaming_behavior_steers_a_running_turn(kward):
    k = kward([[ask()], [text("answered")], [text("idle turn")]])
    s = k.session()
    sid = s["id"]
    turn = k.start(sid, "start")
    q = k.question()
    steered = k.start(sid, "by the way")  # no streamingBehavior while running: steer
    assert steered["id"] == turn["id"]
    answer(k, sid, q, ["Red"])
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    tail = types(events)[types(events).index("toolResult"):]
    assert tail == ["toolResult", "turnSteered", "assistantDelta", "assistantMessage", "answer", "turnDiff",
                    "turnFinished"]
    roles = [(m["role"], m["content"] if m["role"] != "assistant" else "") for m in k.messages(s)]
    assert roles == [("user", "start"), ("assistant", ""), ("tool", "Which color?: Red"),
                     ("user", "by the way"), ("assistant", "")]
    # idle again: an omitted streamingBehavior starts a new turn
    t2, e2 = k.run(sid, "next")
    assert t2["id"] != turn["id"]
    check_turn_events(e2, "completed")


def test_canceling_a_queued_turn_finishes_it_without_running(kward):
    k = kward([[ask()], [text("first done")], [text("third done")]])
    s = k.session()
    sid = s["id"]
    t1 = k.start(sid, "one")
    q = k.question()
    t2 = k.start(sid, "never runs", streamingBehavior="followUp")
    canceled = k.request("turns/cancel", {"turnId": t2["id"]})
    assert canceled["status"] == "canceled" and canceled["cancelRequested"] is True and "finishedAt" in canceled
    e2 = k.finish(t2["id"])
    check_turn_events(e2, "canceled")
    assert types(e2) == ["turnQueued", "turnCancelRequested", "turnFinished"]
    assert "startedAt" not in k.request("turns/status", {"turnId": t2["id"]})
    assert k.request("turns/cancel", {"turnId": t2["id"]})["status"] == "canceled"  # idempotent
    assert types(k.events(t2["id"])) == types(e2)
    answer(k, sid, q, ["Red"])
    check_turn_events(k.finish(t1["id"]), "completed")
    _, e3 = k.run(sid, "three")
    assert payloads(e3, "answer") == [{"content": "third done"}]  # the canceled turn used no step
    assert "never runs" not in [m["content"] for m in k.messages(s)]


def test_canceling_a_running_turn_during_a_model_delay(kward):
    k = kward([[text("thinking..."), delay(60), text("never streamed")], [text("second")]])
    s = k.session()
    turn = k.start(s["id"], "slow")
    k.wait_event(turn["id"], "assistantDelta")
    result = k.request("turns/cancel", {"turnId": turn["id"]})
    assert result["id"] == turn["id"] and result["cancelRequested"] is True
    events = k.finish(turn["id"], timeout=5)
    check_turn_events(events, "canceled")
    assert types(events) == ["turnQueued", "turnStarted", "assistantDelta", "turnCancelRequested",
                             "assistantMessage", "turnDiff", "turnFinished"]
    status = k.request("turns/status", {"turnId": turn["id"]})
    assert status["status"] == "canceled" and status["cancelRequested"] is True and "error" not in status
    # what was streamed is kept, marked interrupted (tests/turns/test_rpc_turns_interrupted.py)
    assert [(m["role"], m["content"], m.get("interrupted")) for m in k.messages(s)] == \
        [("user", "slow", None), ("assistant", "thinking...", True)]
    state = k.request("runtime/state", {"sessionId": s["id"]})
    assert state["isStreaming"] is False


def test_canceling_a_long_shell_command_kills_its_processes(kward):
    command = "sleep 100 & echo $! > bg.pid; echo $$ > sh.pid; wait"
    k = kward([[tool("run_shell_command", {"command": command, "timeout_seconds": 300}, id="sh")],
               [text("unreached")]])
    s = k.session()
    turn = k.start(s["id"], "run it")
    k.wait_event(turn["id"], "toolCall")
    pids = [int(wait_until(lambda p=p: (k.ws / p).exists() and (k.ws / p).read_text().strip(), 10, p))
            for p in ("bg.pid", "sh.pid")]
    assert all(pid_alive(pid) for pid in pids)
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"], timeout=5)
    check_turn_events(events, "canceled")
    assert types(events)[-5:] == ["toolCall", "turnCancelRequested", "toolResult", "turnDiff", "turnFinished"]
    (result,) = payloads(events, "toolResult")
    assert result["toolName"] == "bash" and result["result"] == {"content": "Cancelled.", "isError": True,
                                                                 "images": [], "changedFiles": ["bg.pid", "sh.pid"]}
    bg_pid, sh_pid = pids
    assert not pid_alive(sh_pid)
    wait_until(lambda: not pid_alive(bg_pid), 5, "the killed background sleep to die")
    assert not os.path.exists(f"/proc/{sh_pid}")  # kward reaped its child: not even a zombie is left
    # the background sleep was killed with the group and, re-parented to kward (a child
    # subreaper), reaped by it: it is not left as kward's zombie
    assert parent_pid(bg_pid) != k.client.proc.pid
    assert [m["role"] for m in k.messages(s)] == ["user", "assistant", "tool"]
    assert k.messages(s)[-1]["content"] == "Cancelled."


def test_question_answered(kward):
    k = kward([[ask(questions=(QUESTION, {**QUESTION, "question": "Which size?", "header": "Size"}))],
               [text("Blue it is.")]])
    s = k.session()
    sid = s["id"]
    turn = k.start(sid, "pick")
    q = k.question()
    assert set(q) == {"sessionId", "questionRequestId", "questions"} and q["sessionId"] == sid
    assert q["questions"][0] == QUESTION and q["questions"][1]["question"] == "Which size?"
    assert types(k.events(turn["id"]))[-1] == "toolCall"  # the tool waits for the answer
    other = k.session()["id"]
    wrong = k.error("ui/answerQuestion", {"sessionId": other, "questionRequestId": q["questionRequestId"],
                                          "answers": ["Red"]})
    assert wrong.code == -32602 and wrong.reason == "question_not_found"
    assert answer(k, sid, q, [{"question": "Which color?", "answer": "Blue"}, "Large"]) == {"ok": True}
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    (result,) = payloads(events, "toolResult")
    assert result["toolName"] == "ask_user_question"
    assert result["result"] == {"content": "Which color?: Blue\nWhich size?: Large", "isError": False, "images": []}
    again = k.error("ui/answerQuestion", {"sessionId": sid, "questionRequestId": q["questionRequestId"],
                                          "answers": ["Red"]})
    assert again.code == -32602 and again.reason == "question_not_found"


@pytest.mark.parametrize("dismissed", [[], None])
def test_question_dismissed_with_an_empty_answer_list_lets_the_turn_go_on(kward, dismissed):
    k = kward([[ask()], [text("Fine, I will choose myself.")]])
    s = k.session()
    turn = k.start(s["id"], "pick")
    q = k.question()
    answer(k, s["id"], q, dismissed)
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    (result,) = payloads(events, "toolResult")
    assert result["content"] == "Cancelled." and result["result"]["isError"] is True
    assert payloads(events, "answer") == [{"content": "Fine, I will choose myself."}]


def test_invalid_questions_are_refused_before_any_notification(kward):
    bad = {**QUESTION, "options": [{"label": "Only", "description": "one"}]}
    k = kward([[ask(questions=(bad,))], [text("ok")]])
    s = k.session()
    _, events = k.run(s["id"])
    check_turn_events(events, "completed")
    (result,) = payloads(events, "toolResult")
    assert result["content"] == "Error: question 1 requires 2 to 4 options."
    assert k.notified("ui/question") == []


def test_canceling_a_turn_waiting_for_an_answer_releases_the_question(kward):
    k = kward([[ask()], [text("unreached")]])
    s = k.session()
    turn = k.start(s["id"], "pick")
    q = k.question()
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"], timeout=5)
    check_turn_events(events, "canceled")
    assert types(events)[-4:] == ["turnCancelRequested", "toolResult", "turnDiff", "turnFinished"]
    assert payloads(events, "toolResult")[0]["content"] == "Cancelled."
    late = k.error("ui/answerQuestion", {"sessionId": s["id"], "questionRequestId": q["questionRequestId"],
                                         "answers": ["Red"]})
    assert late.code == -32602 and late.reason == "question_not_found"


def test_closing_a_session_cancels_its_running_and_queued_turns(kward):
    k = kward([[ask()], [text("unreached")]])
    s = k.session()
    t1 = k.start(s["id"], "one")
    k.question()
    t2 = k.start(s["id"], "two", streamingBehavior="followUp")
    assert k.request("sessions/close", {"sessionId": s["id"]}) == {"closed": True}
    check_turn_events(k.finish(t1["id"], timeout=5), "canceled")
    check_turn_events(k.finish(t2["id"], timeout=5), "canceled")
    assert "turnStarted" not in types(k.events(t2["id"]))


# --- races at the end of a turn, forced in process on the TurnManager ---------------------

class _FakeSession:
    id = "fake-session"

    @property
    def shared(self):  # the object behind every RPC id on one file: here just this one
        return self

    @contextlib.contextmanager
    def turn_lock(self):
        yield self

    def sync(self):
        pass


def _manager(execute):
    published = []
    cond = threading.Condition()

    def publish(event):
        with cond:
            published.append(wire.turn_event(event))
            cond.notify_all()

    def submit(job):
        threading.Thread(target=job, daemon=True).start()
        return True

    manager = TurnManager(submit=submit, publish=publish, make_room=lambda: None, execute=execute,
                          steering_supported=lambda: True)
    return manager, published, cond


def test_a_cancel_that_arrives_after_the_final_answer_leaves_the_turn_completed():
    answered, release = threading.Event(), threading.Event()

    def execute(turn, session):
        turn.emit("answer", Answer("done"))
        answered.set()
        release.wait(5)  # the loop returns its answer while the cancel request arrives
        return "done"

    manager, published, cond = _manager(execute)
    turn = manager.start(_FakeSession(), "hi", [])
    assert answered.wait(5)
    assert manager.cancel(turn.id).cancel_requested is True
    release.set()
    with cond:
        assert cond.wait_for(lambda: published and published[-1]["type"] == "turnFinished", 5)
    check_turn_events(published, "completed")
    assert [e["type"] for e in published][-3:] == ["answer", "turnCancelRequested", "turnFinished"]
    assert wire.turn(manager.get(turn.id))["status"] == "completed"


def test_nothing_is_published_after_turn_finished():
    published = []
    log = EventLog("t", "s", published.append, lambda: None)
    log.emit("turnQueued", Status("queued"))
    log.emit("turnFinished", Finished("canceled"))
    assert log.emit("turnCancelRequested", None) is None  # e.g. a cancel that lost the race
    assert log.emit("turnFinished", Finished("completed")) is None
    assert [e.type for e in published] == ["turnQueued", "turnFinished"]
    assert [e.sequence for e in log.after(0)] == [1, 2]


def test_input_steered_while_the_turn_finishes_becomes_a_follow_up_turn():
    closed, release = threading.Event(), threading.Event()

    def execute(turn, session):
        if turn.input == "first":
            assert turn.steering.close_if_empty() == []  # what the loop does on its final answer
            closed.set()
            release.wait(5)
        turn.emit("answer", Answer(turn.input))
        return turn.input

    manager, published, cond = _manager(execute)
    session = _FakeSession()
    first = manager.start(session, "first", [])
    assert closed.wait(5)
    late = manager.start(session, "late input", [], "steer")
    assert late.id != first.id and late.status == "queued"
    release.set()
    with cond:
        assert cond.wait_for(lambda: sum(e["type"] == "turnFinished" for e in published) == 2, 5)
    for turn in (first, late):
        events = [e for e in published if e["turnId"] == turn.id]
        check_turn_events(events, "completed")
        assert "turnSteered" not in [e["type"] for e in events]
    assert [e["payload"]["content"] for e in published if e["type"] == "answer"] == ["first", "late input"]


def test_steered_input_a_failed_turn_never_used_runs_before_the_turns_queued_after_it():
    running, release = threading.Event(), threading.Event()

    def execute(turn, session):
        if turn.input == "first":
            running.set()
            release.wait(5)
            raise InvalidParams("the model call failed")  # the steered input was never drained
        turn.emit("answer", Answer(turn.input))
        return turn.input

    manager, published, cond = _manager(execute)
    session = _FakeSession()
    first = manager.start(session, "first", [])
    assert running.wait(5)
    assert manager.start(session, "steered", [], "steer").id == first.id
    later = manager.start(session, "queued later", [], "followUp")
    assert later.status == "queued"
    release.set()
    with cond:
        assert cond.wait_for(lambda: sum(e["type"] == "turnFinished" for e in published) == 3, 5)
    assert [e["payload"]["content"] for e in published if e["type"] == "answer"] == ["steered", "queued later"]


def test_end_of_input_cancels_running_and_queued_turns_and_reports_them(kward):
    k = kward([[ask()], [text("unreached")]])
    s = k.session()
    t1 = k.start(s["id"], "one")
    k.question()
    t2 = k.start(s["id"], "two", streamingBehavior="followUp")
    k.client.close_stdin()
    assert k.client.wait_exit(10) == 0
    for turn in (t1, t2):
        check_turn_events(k.events(turn["id"]), "canceled")
    assert [m["role"] for m in k.messages(s)] == ["user", "assistant", "tool"]


class _FlockSession(_FakeSession):
    """A session whose turn lock behaves like the flock: taking it again while it is held
    (even by this process) fails with SessionBusy; its release is held at a gate (a slow
    fsync before the unlock)."""

    def __init__(self):
        self.held = False
        self.releasing = threading.Event()
        self.gate = threading.Event()

    @contextlib.contextmanager
    def turn_lock(self):
        if self.held:
            raise SessionBusy("Session is busy: another process is running a turn")
        self.held = True
        try:
            yield self
        finally:
            self.releasing.set()
            self.gate.wait(5)
            self.held = False


def test_a_turn_started_while_the_previous_one_releases_its_lock_is_not_busy():
    def execute(turn, session):
        turn.emit("answer", Answer(turn.input))
        return turn.input

    manager, published, cond = _manager(execute)
    session = _FlockSession()
    first = manager.start(session, "one", [])
    assert session.releasing.wait(5)  # turnFinished is out; the lock is being released
    assert manager.get(first.id).status == "completed"
    waiting = threading.Event()
    wait = manager._released.wait

    def spy(*args):
        waiting.set()
        return wait(*args)

    manager._released.wait = spy
    outcome = {}

    def start_second():
        try:
            outcome["turn"] = manager.start(session, "two", [])
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    thread = threading.Thread(target=start_second, daemon=True)
    thread.start()
    wait_until(lambda: waiting.is_set() or not thread.is_alive(), 5, "the second start to wait or fail")
    session.gate.set()
    thread.join(5)
    assert "error" not in outcome, outcome
    second = outcome["turn"]
    with cond:
        assert cond.wait_for(lambda: sum(e["type"] == "turnFinished" for e in published) == 2, 5)
    check_turn_events([e for e in published if e["turnId"] == second.id], "completed")


def test_steer_before_the_first_turn_started_queues_a_follow_up_and_steer_when_idle_is_refused():
    jobs = []

    def execute(turn, session):
        turn.emit("answer", Answer(turn.input))
        return turn.input

    manager = TurnManager(submit=lambda job: jobs.append(job) or True, publish=lambda event: None, make_room=lambda: None,
                          execute=execute, steering_supported=lambda: True)
    session = _FakeSession()
    first = manager.start(session, "first", [])  # queued; the pool has not run it yet
    second = manager.start(session, "second", [], "steer")
    assert second.id != first.id and second.status == "queued"
    jobs.pop()()  # the lane's drain job runs both, in order
    assert (manager.get(first.id).status, manager.get(second.id).status) == ("completed", "completed")
    try:
        manager.start(session, "third", [], "steer")
    except InvalidParams as exc:
        assert exc.message == "Unsupported streamingBehavior: steer"
    else:
        raise AssertionError("steer on an idle session was accepted")


def test_finished_turns_beyond_the_limit_are_forgotten_oldest_first():
    from kward.agent.scheduler import KEEP_FINISHED_TURNS

    jobs = []
    manager = TurnManager(submit=lambda job: jobs.append(job) or True, publish=lambda event: None,
                          make_room=lambda: None, execute=lambda turn, session: turn.input,
                          steering_supported=lambda: True)
    session = _FakeSession()
    queued = manager.start(session, "queued first", [])  # not finished while the others run
    drain = jobs.pop()
    ids = []
    for i in range(KEEP_FINISHED_TURNS + 2):
        other = _FakeSession()
        ids.append(manager.start(other, str(i), []).id)
        jobs.pop()()
    # the queued turn is kept; the two oldest finished ones went, the next ones stay
    assert manager.get(queued.id).status == "queued"
    for gone in ids[:3]:
        with pytest.raises(InvalidParams):
            manager.get(gone)
    assert [manager.get(t).status for t in ids[3:]] == ["completed"] * (KEEP_FINISHED_TURNS - 1)
    drain()
    assert manager.get(queued.id).status == "completed"
