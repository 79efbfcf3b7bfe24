"""`$/ping`, the heartbeat: answered at once, before initialize and during a busy turn."""

from lib.scripted_kward import kward  # noqa: F401 (fixture)
from lib.scripts import text, wait_for_steer


def test_ping_answers_before_initialize_and_during_a_busy_turn(kward):  # noqa: F811
    k = kward([[wait_for_steer(30), text("late")]])
    first = k.request("$/ping")
    assert first["pong"] is True and first["pid"] == k.proc.pid
    caps = k.request("initialize")["capabilities"]["rpc"]
    assert caps["heartbeat"] == {"supported": True, "method": "$/ping"}
    assert caps["connection"] == {"transport": "stdio", "severalClients": False, "attach": True, "closeBehaviors": []}
    session = k.session()
    turn = k.start(session["id"], "think hard")
    k.wait_event(turn["id"], "turnStarted")
    # the turn holds its worker; the heartbeat is the dispatcher's and answers all the same
    assert [k.request("$/ping", timeout=2)["pong"] for _ in range(5)] == [True] * 5
    k.request("turns/cancel", {"turnId": turn["id"]})
    assert k.outcome(turn["id"]) == "canceled"
