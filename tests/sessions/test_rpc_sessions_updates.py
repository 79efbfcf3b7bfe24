"""Session notifications over the real `kward rpc` (issue 23, beyond the original):
`session/event` `sessionUpdated` when this process renames a session (sessions/rename, the
automatic name from the first input), for every id it has open on the file, never for
another process's rename; `usageUpdated` after each model call and each compaction with the
session's cumulative tokens and cost, which never go down (a manual compaction, a resume in
a new process); and the typed opt-outs of both."""

from __future__ import annotations

from lib.compaction_helpers import wait_session_events, write_compaction_config
from lib.rpc_client import RpcClient
from lib.rpc_sessions import start, workspace  # noqa: F401 (fixtures)
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import step, text, tool, usage
from lib.session_notices import assert_never_down, updates, usages
from lib.turn_events import check_turn_events

LONG = "please look at the parser " * 8  # ~200 chars: ~51 estimated tokens
SUMMARY = "## Goal\n- Fix the parser\n\n## Next Steps\n1. Go on"


def names(client, session_id=None):
    return [(u["sessionId"], u["payload"]) for u in updates(client, "sessionUpdated", session_id)]


def wait_names(client, count):
    """The sessionUpdated (id, payload) pairs once `count` arrived (renames answer on the
    dispatcher, which queues their notifications in order)."""
    client.wait(lambda: len(names(client)) >= count, 10, f"{count} sessionUpdated")
    return names(client)


def test_rename_notifies_every_id_on_the_file(kward):
    k = kward([[text("one")]])
    s = k.session()
    other = k.resume(s["path"])  # a second id on the same open session
    assert other["id"] != s["id"]
    assert k.request("sessions/rename", {"sessionId": s["id"], "name": "Parser work"})["name"] == "Parser work"
    payload = {"name": "Parser work", "path": s["path"]}
    assert wait_names(k, 2) == [(s["id"], payload), (other["id"], payload)]  # once per open id

    k.request("sessions/rename", {"sessionId": other["id"], "name": "Parser work"})  # the same name: no change
    k.request("sessions/close", {"sessionId": other["id"]})
    k.request("sessions/rename", {"sessionId": s["id"], "name": "  "})  # blank: the name is cleared
    k.request("sessions/rename", {"sessionId": s["id"], "name": "last"})
    assert wait_names(k, 4)[2:] == [(s["id"], {"name": None, "path": s["path"]}),  # the closed id hears nothing
                                    (s["id"], {"name": "last", "path": s["path"]})]
    assert all(set(u) == {"timestamp", "sessionId", "type", "payload"} and u["timestamp"].endswith("Z")
               for u in updates(k, "sessionUpdated"))


def test_the_automatic_name_is_notified_once_during_the_first_turn(kward):
    k = kward([[text("hi")], [text("again")]])
    s = k.session()
    turn, events = k.run(s["id"], "  Fix   the\nflaky test  ")
    check_turn_events(events, "completed")
    assert names(k) == [(s["id"], {"name": "Fix the flaky test", "path": s["path"]})]
    order = [(n["method"], n["params"]["type"]) for n in list(k.notifications)
             if n["method"] in ("turn/event", "session/event")]
    named = order.index(("session/event", "sessionUpdated"))
    assert order.index(("turn/event", "turnStarted")) < named < order.index(("turn/event", "turnFinished"))
    k.run(s["id"], "something else")  # named already: nothing more
    assert len(names(k)) == 1


def test_another_process_renaming_the_file_is_not_reported(start, workspace):
    first = start([[text("one")]])
    s = first.request("sessions/create", {"workspaceRoot": str(workspace), "name": "mine"})
    second = start([[text("one")]])
    theirs = second.request("sessions/resume", {"path": s["path"]})
    second.request("sessions/rename", {"sessionId": theirs["id"], "name": "theirs"})
    assert names(second) == [(theirs["id"], {"name": "theirs", "path": s["path"]})]
    assert first.request("runtime/state", {"sessionId": s["id"]})["sessionName"] == "theirs"  # seen, not reported
    first.request("sessions/rename", {"sessionId": s["id"], "name": "mine again"})
    assert wait_names(first, 1) == [(s["id"], {"name": "mine again", "path": s["path"]})]


def test_usage_after_each_model_call_never_goes_down_across_a_compaction_and_a_resume(kward, isolated_home):
    write_compaction_config(isolated_home, keep_recent_tokens=60)
    k = kward([step(text("one"), tool("read_file", {"path": "a.txt"}), usage=usage(100, 10, cost=0.25)),
               step(text("read it"), usage=usage(150, 15, cost=0.25)),
               step(text("two"), usage=usage(200, 20, cost=0.5)),
               step(text("three"), usage=usage(300, 30, cost=1.0, cache_read_tokens=50, reasoning_tokens=5))],
              compaction=[text(SUMMARY)], files={"a.txt": "a\n"})
    s = k.session()
    _, events = k.run(s["id"], LONG + "1")
    check_turn_events(events, "completed")
    first = usages(k, s["id"])
    assert [u["tokens"]["input"] for u in first] == [100, 250]  # one per model call, cumulative
    assert [u["cost"] for u in first] == [0.25, 0.5]
    assert first[-1]["tokens"] == {"input": 250, "output": 25, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0,
                                   "total": 275}
    # each comes before the assistantMessage that reports its call
    order = [(n["method"], n["params"]["type"]) for n in list(k.notifications)
             if n["method"] in ("turn/event", "session/event")]
    assert order.index(("session/event", "usageUpdated")) < order.index(("turn/event", "assistantMessage"))
    k.run(s["id"], LONG + "2")

    before = len(usages(k))
    k.request("sessions/compact", {"sessionId": s["id"]}, timeout=20)
    wait_session_events(k, 2, s["id"])  # its compactionEnd comes after the usageUpdated of its summarizer
    compacted = usages(k)[before:]
    summarizer = compacted[0]["tokens"]["input"] - 450
    assert len(compacted) == 1 and summarizer > 0 and compacted[0]["cost"] == 1.0  # estimated: no cost
    stats = k.request("runtime/stats", {"sessionId": s["id"]})
    assert (stats["tokens"], stats["cost"]) == (compacted[0]["tokens"], compacted[0]["cost"])
    k.close()

    other = RpcClient(isolated_home, cwd=k.ws, env=k.env)  # a new process starts from what the file holds
    with other:
        resumed = other.request("sessions/resume", {"path": s["path"]})
        assert updates(other, "usageUpdated") == []  # resuming changes nothing
        turn = other.request("turns/start", {"sessionId": resumed["id"], "input": "and on"})
        other.wait_notification(lambda n: n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]
                                and n["params"]["type"] == "turnFinished")
        [after] = usages(other, resumed["id"])
        assert after["tokens"]["input"] == 750 + summarizer and after["cost"] == 2.0
        assert after["tokens"]["cacheRead"] == 50 and after["tokens"]["reasoning"] == 5
        assert other.request("runtime/stats", {"sessionId": resumed["id"]})["tokens"] == after["tokens"]
        other.close()
    assert_never_down(usages(k) + [after])


def test_usage_is_told_to_every_id_on_the_file(kward):
    k = kward([step(text("one"), usage=usage(10, 1))])
    s = k.session()
    other = k.resume(s["path"])
    k.run(s["id"], "go")
    assert [u["sessionId"] for u in updates(k, "usageUpdated")] == [s["id"], other["id"]]
    assert usages(k, s["id"]) == usages(k, other["id"]) == [
        {"tokens": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0, "total": 11},
         "cost": None}]


def test_each_session_update_can_be_opted_out_of(kward):
    def run(opt_out):
        k = kward([step(text("one"), usage=usage(10, 1)), [text("two")]])
        k.request("initialize", {"capabilities": {"optOutNotificationMethods": opt_out}})
        s = k.session()
        _, events = k.run(s["id"], "name me")
        check_turn_events(events, "completed")
        k.request("sessions/rename", {"sessionId": s["id"], "name": "renamed"})
        k.run(s["id"], "after")  # its events come after whatever the rename sent
        return sorted({u["type"] for u in updates(k, "sessionUpdated") + updates(k, "usageUpdated")})

    assert run([]) == ["sessionUpdated", "usageUpdated"]
    assert run(["session/event:usageUpdated"]) == ["sessionUpdated"]
    assert run(["session/event:sessionUpdated"]) == ["usageUpdated"]
    assert run(["session/event"]) == []
