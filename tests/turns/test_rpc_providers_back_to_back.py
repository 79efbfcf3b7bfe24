"""A turn started right after the previous one finished must not fail with session_busy.

Found by the end-to-end provider tests: `turns/start` sent as soon as `turnFinished`
arrived failed now and then with "Session is busy: another process is running a turn"
(about 1 in 100 turns on a loaded machine). Cause, in kward/agent/scheduler.py
(`TurnManager._drain`): `turnFinished` was emitted by `_run`, then the lane was marked
idle (`lane.turn_lock = None`, under `_lock`) and only afterwards, outside the lock,
`stack.close()` fsynced the session and released its cross-process turn lock (the flock
on the sidecar file). A `turns/start` arriving in that window found no lane lock, tried
to take the flock itself, and the flock was still held by this very process.

The test reproduces the window deterministically in process: a stand-in session whose
turn lock behaves like the flock (busy while held) starts the next turn from inside the
release, after `turnFinished` was published. It passes with any fix that either releases
the lock before `turnFinished` or makes such a start wait for the release.
"""

import contextlib
import threading

from kward.agent.scheduler import Turn, TurnManager
from kward.errors import SessionBusy
from kward.rpc.wire import events as wire


class FlockLikeSession:
    """Just enough of an OpenSession for TurnManager; `turn_lock` is busy while held."""

    id = "session-1"

    def __init__(self):
        self.held = False
        self.on_release = None

    @property
    def shared(self):  # the object behind every RPC id on one file: here just this one
        return self

    @contextlib.contextmanager
    def turn_lock(self):
        if self.held:
            raise SessionBusy("Session is busy: another process is running a turn on session-1")
        self.held = True
        try:
            yield self
        finally:
            hook, self.on_release = self.on_release, None
            if hook is not None:
                hook()
            self.held = False

    def sync(self):
        pass


def test_turn_started_after_turn_finished_is_accepted():
    finished = {}
    done = threading.Condition()
    threads = []

    def publish(event):
        event = wire.turn_event(event)
        if event["type"] == "turnFinished":
            with done:
                finished[event["turnId"]] = event["payload"]["status"]
                done.notify_all()

    def submit(fn):
        thread = threading.Thread(target=fn, daemon=True)
        threads.append(thread)
        thread.start()
        return True

    manager = TurnManager(submit=submit, publish=publish, make_room=lambda: None, execute=lambda turn, session: None,
                          steering_supported=lambda: False)
    session = FlockLikeSession()
    outcome = []

    def start_second():
        try:
            outcome.append(manager.start(session, "second", []))
        except SessionBusy as exc:
            outcome.append(exc)

    client = threading.Thread(target=start_second, daemon=True)

    def client_starts_next_turn():  # runs while the first turn's lock is being released
        if finished:  # the client has seen turnFinished and sends turns/start at once
            client.start()
            client.join(0.5)  # a fix may make it wait for the release instead: let it

    session.on_release = client_starts_next_turn
    first = manager.start(session, "first", [])
    with done:
        assert done.wait_for(lambda: first.id in finished, 5)
    threads[0].join(5)
    if client.is_alive() or client.ident is not None:
        client.join(5)
    if not outcome:  # a fix released the lock before turnFinished: start now
        outcome.append(manager.start(session, "second", []))
    assert isinstance(outcome[0], Turn), f"turns/start failed: {outcome[0]!r}"
    with done:
        assert done.wait_for(lambda: outcome[0].id in finished, 5)
    assert finished == {first.id: "completed", outcome[0].id: "completed"}
