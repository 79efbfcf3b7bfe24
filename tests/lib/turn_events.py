"""The `turn/event` stream as a client receives it: picking a turn's events out of the
notifications, waiting for one of them, reading them, and the invariants every turn's
stream keeps (`check_turn_events`).

The clients are the harness's (`RpcClient` and its subclass `Kward`); waiting is on
frames with a timeout (`RpcClient.wait_notification`), never a sleep.
"""

from __future__ import annotations

from typing import Any

TERMINAL = ("completed", "failed", "canceled")
EVENT_TYPES = ("turnQueued", "turnSteered", "turnStarted", "compactionStart", "compactionEnd", "reasoningDelta",
               "assistantDelta", "assistantMessage", "modelRetry", "toolCall", "approvalRequested", "approvalResolved",
               "toolUpdate", "toolResult", "answer",
               "turnCancelRequested", "turnDiff", "error", "turnFinished")


# --- from the notifications --------------------------------------------------------------


def is_event(n: dict[str, Any], turn_id: str, type_: str | None = None) -> bool:
    """Whether notification `n` is a turn/event of `turn_id` (of type `type_`)."""
    p = n.get("params") or {}
    return (n.get("method") == "turn/event" and p.get("turnId") == turn_id
            and (type_ is None or p.get("type") == type_))


def turn_events(client: Any, turn_id: str | None = None) -> list[dict[str, Any]]:
    """The turn/event params received so far (of one turn), in arrival order."""
    return [n["params"] for n in list(client.notifications)
            if n.get("method") == "turn/event" and (turn_id is None or n["params"].get("turnId") == turn_id)]


def wait_event(client: Any, turn_id: str, type_: str, timeout: float = 10.0) -> dict[str, Any]:
    """The params of the turn's first `type_` event, once it arrived."""
    return client.wait_notification(lambda n: is_event(n, turn_id, type_), timeout,
                                    f"{type_} of turn {turn_id}")["params"]


def wait_turn(client: Any, turn_id: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Wait for the turn's turnFinished; returns all its events (arrival order)."""
    wait_event(client, turn_id, "turnFinished", timeout)
    return turn_events(client, turn_id)


# --- reading a turn's events -------------------------------------------------------------


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def payloads(events: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    """The payloads of every `type_` event, in order."""
    return [e["payload"] for e in events if e["type"] == type_]


def deltas(events: list[dict[str, Any]], type_: str = "assistantDelta") -> list[str]:
    return [e["payload"]["delta"] for e in events if e["type"] == type_]


def payload(events: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    """The payload of the one `type_` event (fails unless there is exactly one)."""
    found = payloads(events, type_)
    assert len(found) == 1, f"expected one {type_}, got {types(events)}"
    return found[0]


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The turnFinished payload, after checking the sequence numbers run 1, 2, 3, ... and
    that it is the last event."""
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1)), types(events)
    assert events[-1]["type"] == "turnFinished" and types(events).count("turnFinished") == 1, types(events)
    return events[-1]["payload"]


def failed_error(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The error of a failed turn (the `error` event and turnFinished's error agree)."""
    fin = finished(events)
    assert fin["status"] == "failed", fin
    assert payload(events, "error") == fin["error"]
    assert fin["error"]["fatal"] is False and fin["error"]["message"]
    return fin["error"]


# --- the invariants ----------------------------------------------------------------------


def check_turn_events(events: list[dict], status: str | None = None) -> dict:
    """Assert the invariants every turn's event stream keeps; returns the turnFinished payload.

    sequence 1..N without a gap, one session and turn id, turnQueued first, turnStarted
    second (unless a queued turn was canceled), exactly one turnFinished and it is last,
    `answer` right before a completed turnFinished, `error` before a failed one (only a
    turnCancelRequested that came too late, and the turn's turnDiff, may stand between
    them); at most one turnDiff, after every other event of the turn but a late
    turnCancelRequested, `error` and turnFinished.
    """
    assert events, "no events"
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert len({(e["sessionId"], e["turnId"]) for e in events}) == 1
    for e in events:
        assert set(e) == {"sequence", "timestamp", "sessionId", "turnId", "type", "payload"}, e
        assert e["type"] in EVENT_TYPES, e
        assert isinstance(e["payload"], dict)
        assert e["timestamp"].endswith("Z") and "T" in e["timestamp"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "turnQueued" and events[0]["payload"] == {"status": "queued"}
    assert kinds.count("turnFinished") == 1 and kinds[-1] == "turnFinished", kinds[-5:]
    fin = events[-1]["payload"]
    assert fin["status"] in TERMINAL
    if "turnStarted" in kinds:
        i = kinds.index("turnStarted")
        assert kinds.count("turnStarted") == 1 and events[i]["payload"] == {"status": "running"}
        assert set(kinds[1:i]) <= {"turnCancelRequested"}, kinds[:i + 1]
    else:  # only a turn canceled while queued never starts
        assert fin["status"] == "canceled"
        assert set(kinds[1:-1]) <= {"turnCancelRequested"}, kinds
    if "turnDiff" in kinds:
        i = kinds.index("turnDiff")
        assert kinds.count("turnDiff") == 1 and set(kinds[i + 1:]) <= {"turnCancelRequested", "error", "turnFinished"}, \
            kinds[-6:]
        assert set(events[i]["payload"]) <= {"files", "diff", "truncated", "note", "complete"}, events[i]["payload"]
        assert events[i]["payload"].get("complete", False) is False  # (only ever false)
    for i, kind in enumerate(kinds):  # an approval's events between its call's toolCall and toolResult
        if kind in ("approvalRequested", "approvalResolved"):
            call_id = events[i]["payload"]["toolCallId"]
            calls = [j for j, e in enumerate(events) if e["type"] == "toolCall" and e["payload"]["toolCallId"] == call_id]
            results = [j for j, e in enumerate(events)
                       if e["type"] == "toolResult" and e["payload"]["toolCallId"] == call_id]
            assert calls and calls[0] < i and (not results or i < results[0]), kinds
    # the last events before turnFinished, leaving out a cancel request that came too late
    last = [e for e in events[:-1] if e["type"] not in ("turnCancelRequested", "turnDiff")][-1]
    if fin["status"] == "completed":
        assert last["type"] == "answer" and kinds.count("answer") == 1, kinds[-4:]
        assert "error" not in fin
    elif fin["status"] == "failed":
        assert last["type"] == "error" and kinds.count("error") == 1 and "answer" not in kinds, kinds[-4:]
        assert fin["error"] == last["payload"]
        assert set(fin["error"]) >= {"message", "code", "fatal"} and fin["error"]["fatal"] is False
    else:
        assert "answer" not in kinds and "error" not in fin
    if status is not None:
        assert fin["status"] == status, (fin, kinds[-6:])
    return fin
