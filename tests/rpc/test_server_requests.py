"""The server-request table (kward/rpc/server_requests.py) with real threads: answers reach
their own waiter whatever their order, unknown and late ids change nothing, and a cancel,
a timeout or the client's end each end a wait with its outcome and one
serverRequest/resolved."""

from __future__ import annotations

import threading

from kward.cancel import CancelToken
from kward.rpc.protocol import Response, parse
from kward.rpc.server_requests import ServerRequests

WAIT = 10.0


class Wire:
    """What the table sends and notifies, with an event per sent request."""

    def __init__(self):
        self.sent: list[dict] = []
        self.notes: list[tuple[str, dict]] = []
        self.cond = threading.Condition()

    def send(self, message):
        with self.cond:
            self.sent.append(message)
            self.cond.notify_all()

    def notify(self, method, params):
        self.notes.append((method, params))

    def wait_sent(self, count):
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.sent) >= count, WAIT)
            return list(self.sent)


def asking(table, results, key, *, timeout=WAIT, cancel=None):
    def run():
        results[key] = table.ask("tool/requestApproval", {"n": key}, timeout=timeout, cancel=cancel if cancel is not None else CancelToken())

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_answers_reach_their_own_waiter_in_any_order_and_unknown_ids_change_nothing():
    wire = Wire()
    table = ServerRequests(wire.send, wire.notify)
    results: dict = {}
    first = asking(table, results, 1)
    wire.wait_sent(1)
    second = asking(table, results, 2)
    sent = wire.wait_sent(2)
    ids = {m["params"]["n"]: m["id"] for m in sent}
    assert len(set(ids.values())) == 2 and all(i.startswith("srv-") for i in ids.values())
    assert all(m["jsonrpc"] == "2.0" and m["method"] == "tool/requestApproval" for m in sent)
    table.resolve(Response("srv-999", {"decision": "approve"}))  # nobody waits for it
    table.resolve(Response(7, {"decision": "approve"}))
    table.resolve(Response(ids[2], {"decision": "decline"}))
    second.join(WAIT)
    table.resolve(Response(ids[1], None, {"code": -32601, "message": "no"}))
    first.join(WAIT)
    assert results[2] == ("answered", {"decision": "decline"}, None)
    assert results[1] == ("answered", None, {"code": -32601, "message": "no"})
    table.resolve(Response(ids[1], {"decision": "approve"}))  # late: ignored
    assert wire.notes == []


def test_cancel_timeout_and_the_client_gone_each_end_the_wait_once():
    wire = Wire()
    table = ServerRequests(wire.send, wire.notify)
    results: dict = {}
    cancel = CancelToken()
    canceled = asking(table, results, "c", cancel=cancel)
    wire.wait_sent(1)
    cancel.cancel()
    canceled.join(WAIT)
    timed = asking(table, results, "t", timeout=0.05)
    timed.join(WAIT)
    gone = asking(table, results, "g")
    sent = wire.wait_sent(3)
    table.close()
    gone.join(WAIT)
    assert [results[k].outcome for k in ("c", "t", "g")] == ["canceled", "timedOut", "clientGone"]
    assert wire.notes == [("serverRequest/resolved", {"id": m["id"], "outcome": o})
                          for m, o in zip(sent, ("canceled", "timedOut", "clientGone"))]
    after = table.ask("tool/requestApproval", {}, timeout=WAIT, cancel=CancelToken())
    assert after.outcome == "clientGone" and len(wire.sent) == 3  # nothing sent once the client is gone


def test_a_response_frame_parses_as_a_response_and_a_request_stays_a_request():
    assert parse(b'{"jsonrpc":"2.0","id":"srv-1","result":{"decision":"approve"}}') == \
        Response("srv-1", {"decision": "approve"}, None)
    assert parse(b'{"jsonrpc":"2.0","id":"srv-2","error":{"code":1,"message":"x"}}') == \
        Response("srv-2", None, {"code": 1, "message": "x"})
    assert not isinstance(parse(b'{"jsonrpc":"2.0","id":1,"method":"m","result":1}'), Response)
    # some clients send "error": null beside the result, or leave "jsonrpc" out of a reply:
    # still an answer (never answered back with an error frame)
    assert parse(b'{"jsonrpc":"2.0","id":"srv-3","result":{"decision":"approve"},"error":null}') == \
        Response("srv-3", {"decision": "approve"}, None)
    assert parse(b'{"id":"srv-4","result":{"decision":"decline"}}') == Response("srv-4", {"decision": "decline"}, None)
