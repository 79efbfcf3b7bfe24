"""An automatic compaction inside a turn, over the real `kward rpc` with the Scripted
provider (issue 23, beyond the original): it is reported as the turn's own
`compactionStart` / `compactionEnd` events (with the turn's `turnId` and `sequence`, the
payloads of the `session/event` ones, which stay), so `turns/events` replays it; the
session's usage never goes down across it; `turn/event:compactionStart` opts out of one
type only."""

from __future__ import annotations

from lib.compaction_helpers import session_events, write_compaction_config
from lib.scripted_kward import kward  # noqa: F401 - fixture
from lib.scripts import step, text, usage
from lib.session_notices import assert_never_down, usages
from lib.turn_events import check_turn_events, payloads, types

SUMMARY = "## Goal\n- Keep going\n\n## Next Steps\n1. Go on"
#: the threshold of a 13,000 token window with the 12,000 guard: 1,000 tokens
AUTO = dict(context_window=13_000, reserve_tokens=1_000, keep_recent_tokens=5)


def big_first_turn(kward, isolated_home, opt_out=None):
    """A session whose first turn reports 4,010 tokens of context: the next turn compacts
    before its first model request."""
    write_compaction_config(isolated_home, **AUTO)
    k = kward([step(text("one"), usage=usage(4000, 10, cost=0.5)), step(text("two"), usage=usage(300, 5, cost=0.1))],
              compaction=[text(SUMMARY)])
    if opt_out is not None:
        k.request("initialize", {"capabilities": {"optOutNotificationMethods": opt_out}})
    s = k.session()
    _, events = k.run(s["id"], "first")
    check_turn_events(events, "completed")
    assert "compactionStart" not in types(events)
    return k, s


def test_a_compaction_inside_a_turn_is_one_of_its_events_and_replayed(kward, isolated_home):
    k, s = big_first_turn(kward, isolated_home)
    turn, events = k.run(s["id"], "second")
    check_turn_events(events, "completed")
    kinds = types(events)
    assert kinds[:5] == ["turnQueued", "turnStarted", "compactionStart", "compactionEnd", "assistantDelta"]
    start, end = events[2], events[3]
    assert (start["turnId"], start["sessionId"], start["sequence"]) == (turn["id"], s["id"], 3)
    assert (end["turnId"], end["sequence"]) == (turn["id"], 4)
    assert start["payload"] == {"reason": "threshold"}
    assert end["payload"]["aborted"] is False and end["payload"]["willRetry"] is False
    assert end["payload"]["result"]["summary"].startswith("## Goal\n- Keep going")
    # the same payloads as the session/event notifications, which are still sent
    notified = session_events(k, s["id"])
    assert [e["type"] for e in notified] == ["compactionStart", "compactionEnd"]
    assert [e["payload"] for e in notified] == [start["payload"], end["payload"]]

    replay = k.request("turns/events", {"turnId": turn["id"]})
    assert replay["events"] == events and replay["truncated"] is False and replay["firstSequence"] == 1
    later = k.request("turns/events", {"turnId": turn["id"], "afterSequence": 2})["events"]
    assert [e["type"] for e in later[:2]] == ["compactionStart", "compactionEnd"]
    assert payloads(events, "answer") == [{"content": "two"}]


def test_usage_never_goes_down_across_an_automatic_compaction(kward, isolated_home):
    k, s = big_first_turn(kward, isolated_home)
    [first] = usages(k, s["id"])
    assert (first["tokens"]["input"], first["cost"]) == (4000, 0.5)
    k.run(s["id"], "second")
    seen = usages(k, s["id"])
    summarized, answered = seen[1:]  # the summarizer's (stored with the compaction), then the answer's
    assert summarized["tokens"]["input"] > 4000 and summarized["cost"] == 0.5
    assert answered["tokens"]["input"] == summarized["tokens"]["input"] + 300 and answered["cost"] == 0.6
    assert_never_down(seen)
    stats = k.request("runtime/stats", {"sessionId": s["id"]})
    assert (stats["tokens"], stats["cost"]) == (answered["tokens"], answered["cost"])
    order = [(n["method"], n["params"]["type"]) for n in list(k.notifications)
             if n["method"] in ("turn/event", "session/event")]
    assert order[order.index(("session/event", "compactionStart")):][:5] == [
        ("session/event", "compactionStart"), ("turn/event", "compactionStart"),
        ("session/event", "usageUpdated"), ("session/event", "compactionEnd"), ("turn/event", "compactionEnd")]


def test_one_compaction_event_type_can_be_opted_out_of(kward, isolated_home):
    k, s = big_first_turn(kward, isolated_home, opt_out=["turn/event:compactionStart"])
    turn, events = k.run(s["id"], "second")
    assert "compactionStart" not in types(events) and types(events).count("compactionEnd") == 1
    assert [e["type"] for e in session_events(k, s["id"])] == ["compactionStart", "compactionEnd"]
    seq = [e["sequence"] for e in events]
    assert seq == sorted(seq) and len(seq) == len(set(seq)) and seq[-1] == len(events) + 1  # one was not sent
    replay = k.request("turns/events", {"turnId": turn["id"]})["events"]  # the replay keeps every event
    assert types(replay)[2:4] == ["compactionStart", "compactionEnd"] and len(replay) == len(events) + 1
