"""The hub's routing and backpressure, on real connections over in-memory outboxes."""

import pytest

from kward.config.secrets import KnownSecrets
from kward.config.store import ConfigStore, resolve_paths
from kward.errors import Overloaded
from kward.model import TurnEvent
from kward.rpc.connection import Connection
from kward.rpc.hub import Hub
from kward.rpc.transport import Outbox


@pytest.fixture
def connection(isolated_home):
    """`connection(high_water, limit)`: a Connection over an outbox nobody reads."""
    paths = resolve_paths({"HOME": str(isolated_home)})

    def make(high_water=1000, limit=10_000):
        return Connection(Outbox(high_water=high_water, limit=limit), KnownSecrets({}, ConfigStore(paths), paths.auth_file))

    return make


def event(session_id, turn_id="t", sequence=1, type_="assistantDelta"):
    from kward.model import Delta

    return TurnEvent(sequence, "2026-12-04T00:00:00.000Z", session_id, turn_id, type_, Delta("x" * 50))


def test_events_go_to_the_attached_connections_only(connection):
    hub = Hub()
    a, b = connection(), connection()
    hub.add(a, lambda: None)
    hub.add(b, lambda: None)
    hub.answered(a, "sessions/create", {}, {"id": "s1"})
    hub.answered(b, "sessions/create", {}, {"id": "s2"})
    hub.publish_turn_event(event("s1"))
    assert a.outbox.pending_bytes > 0 and b.outbox.pending_bytes == 0
    hub.attach(b, "s1")
    hub.publish_turn_event(event("s1", sequence=2))
    assert b.outbox.pending_bytes > 0
    assert hub.detach(b, "s1") and not hub.detach(b, "s1")
    assert hub.remove(a) == set() and hub.attached("s1") == []
    hub.answered(b, "sessions/close", {"sessionId": "s2"}, {"closed": True})
    assert hub.attached("s2") == [] and not hub.detach(b, "s2")


def test_a_connection_past_its_high_water_mark_is_refused_new_turns_the_others_are_not(connection):
    hub = Hub()
    slow, fine = connection(high_water=100), connection(high_water=100)
    hub.add(slow, lambda: None)
    hub.add(fine, lambda: None)
    hub.answered(slow, "sessions/create", {}, {"id": "s"})
    hub.publish_turn_event(event("s"))  # (nobody reads `slow`: its output waits)
    hub.local.conn = slow
    with pytest.raises(Overloaded):
        hub.admit()
    hub.local.conn = fine
    hub.admit()


def test_a_connection_far_behind_is_dropped_at_once_without_stalling_anyone(connection):
    from kward.rpc import hub as hubmod

    hub = Hub()
    stopped = []
    big = connection(high_water=10, limit=100)
    hub.add(big, lambda: stopped.append(big))
    hub.answered(big, "sessions/create", {}, {"id": "s"})
    old = hubmod.DROP_BYTES
    hubmod.DROP_BYTES = 500
    try:
        for n in range(20):
            hub.publish_turn_event(event("s", sequence=n + 1))
    finally:
        hubmod.DROP_BYTES = old
    assert stopped == [big] and big.outbox.pending_bytes == 0  # its output discarded, its server stopped


def test_a_steer_does_not_take_over_the_turn_and_a_fork_attaches(connection):
    hub = Hub()
    starter, steerer = connection(), connection()
    hub.add(starter, lambda: None)
    hub.add(steerer, lambda: None)
    hub.answered(starter, "turns/start", {}, {"id": "t1", "sessionId": "s"})
    hub.answered(steerer, "turns/start", {}, {"id": "t1", "sessionId": "s"})  # (a steer answers the running turn)
    assert hub.remove(steerer) == set()  # (its closeBehavior cannot cancel the starter's turn)
    assert hub.remove(starter) == {"t1"}
    forker = connection()
    hub.add(forker, lambda: None)
    hub.answered(forker, "sessions/fork", {}, {"session": {"id": "f"}, "text": "", "cancelled": False})
    assert hub.attached("f") == [forker]


def test_a_turn_that_ended_before_its_answer_gets_no_owner(connection):
    hub = Hub()
    conn = connection()
    hub.add(conn, lambda: None)
    hub.publish_turn_event(event("s", turn_id="fast", type_="turnFinished"))
    hub.answered(conn, "turns/start", {}, {"id": "fast", "sessionId": "s"})
    assert hub.remove(conn) == set()
