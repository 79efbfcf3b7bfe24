"""`Connection.wants`: what `initialize`'s optOutNotificationMethods left the client, split
once when it is set (the check runs for every event)."""

from __future__ import annotations

from kward.rpc.connection import Connection
from kward.rpc.transport import Outbox


def connection(*entries):
    conn = Connection(Outbox(), secrets=None)  # (secrets: only sending needs them)
    conn.opt_out = frozenset(entries)
    return conn


def test_nothing_opted_out_wants_everything():
    conn = connection()
    assert conn.wants("turn/event") and conn.wants("turn/event", "toolUpdate") and conn.wants("ui/question")


def test_a_method_and_single_types_of_typed_methods():
    conn = connection("session/event", "turn/event:toolUpdate", "turn/event:turnDiff", "ui/question")
    assert not conn.wants("session/event") and not conn.wants("session/event", "usageUpdated")
    assert not conn.wants("turn/event", "toolUpdate") and not conn.wants("turn/event", "turnDiff")
    assert conn.wants("turn/event", "assistantDelta") and conn.wants("turn/event")
    assert not conn.wants("ui/question") and conn.wants("auth/loginFinished")
    assert conn.opt_out == frozenset({"session/event", "turn/event:toolUpdate", "turn/event:turnDiff", "ui/question"})


def test_a_type_entry_is_only_that_type_of_that_method():
    conn = connection("turn/event:toolUpdate", "odd:type:with:colons")
    assert conn.wants("session/event", "toolUpdate")  # another method's type of the same name
    assert not conn.wants("odd", "type:with:colons") and conn.wants("odd", "type")


def test_a_later_initialize_replaces_the_list():
    conn = connection("turn/event")
    assert not conn.wants("turn/event", "answer")
    conn.opt_out = frozenset({"turn/event:answer"})
    assert conn.wants("turn/event", "toolUpdate") and not conn.wants("turn/event", "answer")
