"""A manual compaction right after a queued turn was canceled, before the lane's drain job ran.

Canceling a queued turn leaves its lane holding the session's turn lock until the drain job
(already on the pool) finds the queue empty and lets go. A compaction in that moment found
nothing queued or running and took the turn lock a second time, which this process's own
flock refused: `session_busy`, "another process is running a turn", though nothing ran.
Over `kward rpc` the pool's FIFO order almost always runs the drain job first (the
compaction request is queued behind it); a face calling the runtime from its own thread
meets it whenever the pool is busy. Now the compaction shares the lane's lock, the waiting
drain job leaves the queue to it, and the lock is released once, by whoever ends last.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kward.agent.scheduler import TurnManager
from kward.cancel import CancelToken
from kward.config.store import ConfigStore, resolve_paths
from kward.config.settings import resolve_settings
from kward.runtime import Runtime
from kward.sessions.manager import SessionManager
from lib.compaction_helpers import compaction_records, write_compaction_config
from lib.scripts import text, write_script

LONG = "please look at the parser " * 8  # ~51 estimated tokens a message


class Gate:
    """A `submit` for the runtime: jobs run on a thread pool, or wait while the gate is shut
    (a pool whose workers are all busy)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(4, thread_name_prefix="test-gate")
        self.held: list = []
        self.shut = False
        self._lock = threading.Lock()

    def submit(self, job) -> bool:
        with self._lock:
            if self.shut:
                self.held.append(job)
                return True
        self.pool.submit(job)
        return True

    def open(self) -> None:
        with self._lock:
            self.shut, held, self.held = False, self.held, []
        for job in held:
            self.pool.submit(job)


@pytest.fixture
def runtime(isolated_home: Path, tmp_path: Path):
    write_compaction_config(isolated_home, keep_recent_tokens=60)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"HOME": str(isolated_home), "KWARD_PROVIDER": "scripted",
           "KWARD_SCRIPT": str(write_script(tmp_path / "scripts", [[text("one")], [text("two")], [text("three")]]))}
    paths = resolve_paths(env)
    gate = Gate()
    events: list = []
    cond = threading.Condition()

    def sink(event) -> None:
        with cond:
            events.append(event)
            cond.notify_all()

    def wait_finished(turn_id: str) -> str:
        with cond:
            assert cond.wait_for(lambda: any(e.turn_id == turn_id and e.type == "turnFinished" for e in events), 10)
            return next(e.payload.status for e in events if e.turn_id == turn_id and e.type == "turnFinished")

    rt = Runtime(paths=paths, config=ConfigStore(paths), settings=resolve_settings({}, env), launch_cwd=ws,
                 env=env, submit=gate.submit, event_sink=sink, notify=lambda notice: None)
    yield rt, ws, gate, wait_finished
    gate.open()
    rt.shutdown()
    gate.pool.shutdown(wait=True)


def test_compacting_after_a_queued_turn_was_canceled_before_its_drain_job_ran(runtime):
    rt, ws, gate, wait_finished = runtime
    session = rt.create_session(str(ws))
    for i in (1, 2):
        assert wait_finished(rt.start_turn(session.id, LONG + str(i)).id) == "completed"
    gate.shut = True  # every worker busy: the next drain job waits
    queued = rt.start_turn(session.id, "never runs")
    assert len(gate.held) == 1 and rt.turn(queued.id).status == "queued"
    rt.cancel_turn(queued.id)
    assert wait_finished(queued.id) == "canceled"  # what a client compacts on

    result = rt.compact(session.id)  # was SessionBusy: the lane's own turn lock, taken again
    assert result.summary.startswith("## Goal") and len(compaction_records(session.path)) == 1
    assert rt.state(session.id).streaming is False

    gate.open()  # the drain job runs now: nothing is left to run, it lets go of the lock
    assert wait_finished(rt.start_turn(session.id, "after").id) == "completed"
    other = SessionManager(rt.paths.sessions_dir, str(ws))  # as another process: its own descriptor
    with other.resume(session.path).turn_lock():  # free: the lane let go of it exactly once
        pass
    other.shutdown_all()


class FakeSession:
    """A session for the TurnManager alone: counts how often its turn lock is taken and
    refuses a second holder, as the flock of another descriptor would."""

    def __init__(self) -> None:
        self.locks = 0
        self.holders = 0
        self.id = "s"

    @property
    def shared(self):
        return self

    @contextlib.contextmanager
    def turn_lock(self):
        from kward.errors import SessionBusy

        if self.holders:
            raise SessionBusy("held twice")
        self.locks += 1
        self.holders += 1
        try:
            yield self
        finally:
            self.holders -= 1

    def sync(self):
        pass


def manager(ran: list) -> tuple[TurnManager, list]:
    jobs: list = []
    return TurnManager(submit=lambda job: jobs.append(job) or True, publish=lambda event: None,
                       make_room=lambda: None, execute=lambda turn, session: ran.append(turn.input),
                       steering_supported=lambda: False), jobs


@pytest.mark.parametrize("drain_first", [True, False], ids=["drain-job-during-compaction", "drain-job-after-it"])
def test_the_waiting_drain_job_and_the_compaction_share_one_lock(drain_first):
    ran: list = []
    turns, jobs = manager(ran)
    session = FakeSession()
    canceled = turns.start(session, "canceled", [])
    turns.cancel(canceled.id)
    assert canceled.status == "canceled" and len(jobs) == 1 and session.holders == 1
    with turns.exclusive(session, CancelToken()):
        assert turns.compacting(session) and session.locks == 1  # the lane's lock, shared
        later = turns.start(session, "later", [])  # queues behind the compaction
        if drain_first:
            jobs.pop(0)()  # the old drain job leaves the queue to the compaction ...
            assert ran == [] and later.status == "queued" and session.holders == 1
    if drain_first:
        assert len(jobs) == 1  # ... which schedules it when it ends
    while jobs:
        jobs.pop(0)()
    assert ran == ["later"] and later.status == "completed"
    assert session.holders == 0 and session.locks == 1 and not turns.compacting(session)


def test_a_compaction_after_the_canceled_turn_alone_releases_the_lock_once():
    ran: list = []
    turns, jobs = manager(ran)
    session = FakeSession()
    turns.cancel(turns.start(session, "canceled", []).id)
    with turns.exclusive(session, CancelToken()):
        pass
    assert session.holders == 1  # the drain job still to run owns the release
    jobs.pop(0)()
    assert jobs == [] and ran == [] and session.holders == 0
    with turns.exclusive(session, CancelToken()):  # a fresh lane: takes the lock itself
        assert session.holders == 1 and session.locks == 2
    assert session.holders == 0
