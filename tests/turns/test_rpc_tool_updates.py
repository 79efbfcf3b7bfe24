"""Live tool output over the real `kward rpc`: the `toolUpdate` events of a running shell
command (coalesced: the rate bound, whole output, order against toolCall/toolResult,
the byte budget and `omittedBytes`), the opt-out, UTF-8 split between writes, credentials
scrubbed, a cancelled command, and plugin command progress."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

import pytest

from kward.tools.live import BUDGET_BYTES, CONTENT_BYTES, INTERVAL
from kward.tools.process import MAX_STREAM_BYTES
from lib.resources_helpers import write_plugin
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, is_event, payload, payloads, types
from lib.waiting import wait_until

LINES = 100_000
#: 100,000 lines on stdout in 100 writes over about a second, a few lines on stderr
EMIT = f"""
import sys, time
for block in range(100):
    sys.stdout.write("".join(f"{{i}}\\n" for i in range(block * 1000 + 1, block * 1000 + 1001)))
    sys.stdout.flush()
    if block % 25 == 0:
        sys.stderr.write(f"warning {{block}}\\n")
        sys.stderr.flush()
    time.sleep(0.01)
"""
STDOUT = "".join(f"{i}\n" for i in range(1, LINES + 1))
STDERR = "".join(f"warning {b}\n" for b in (0, 25, 50, 75))


def shell_turn(kward, command, *, files=None, env=None, opt_out=None, timeout=20.0):
    """One turn running `command`, then answering; returns (k, events)."""
    k = kward([[tool("run_shell_command", {"command": command, "timeout_seconds": 60}, id="sh")], [text("done")]],
              files=files, env=env)
    if opt_out is not None:
        k.request("initialize", {"capabilities": {"optOutNotificationMethods": opt_out}})
    s = k.session()
    _, events = k.run(s["id"], "run it", timeout=timeout)
    check_turn_events(events, "completed")
    return k, events


def updates_of(events):
    """The toolUpdate payloads, after checking they all lie between the call's toolCall and
    its toolResult and carry the call's fields."""
    kinds = types(events)
    call, result = kinds.index("toolCall"), kinds.index("toolResult")
    assert all(call < i < result for i, t in enumerate(kinds) if t == "toolUpdate"), kinds
    updates = payloads(events, "toolUpdate")
    fields = {k: v for k, v in payload(events, "toolCall").items() if k in ("toolCallId", "toolName", "args",
                                                                           "metadata")}
    for u in updates:
        assert {k: u[k] for k in fields} == fields
        assert set(u) - set(fields) <= {"stream", "delta", "content", "omittedBytes"} and u["stream"] in (
            "stdout", "stderr")
    assert all("omittedBytes" not in u for u in updates[:-1])
    return updates


def joined(updates, stream):
    return "".join(u["delta"] for u in updates if u["stream"] == stream)


def seconds(events, type_):
    (stamp,) = [e["timestamp"] for e in events if e["type"] == type_]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_a_command_printing_100000_lines_streams_coalesced_updates(kward):
    k, events = shell_turn(kward, f"{sys.executable} emit.py", files={"emit.py": EMIT})
    updates = updates_of(events)
    duration = seconds(events, "toolResult") - seconds(events, "toolCall")
    assert 2 <= len(updates) <= duration / INTERVAL + 4, (len(updates), duration)
    assert joined(updates, "stdout") == STDOUT and joined(updates, "stderr") == STDERR
    assert all("omittedBytes" not in u for u in updates)
    sent = ""  # what a client appending the deltas shows: `content` is its tail
    for u in updates:
        sent += u["delta"]
        assert sent.endswith(u["content"]) and len(u["content"].encode()) <= CONTENT_BYTES
        start = len(sent) - len(u["content"])
        assert start == 0 or sent[start - 1] == "\n"  # from a line start (the lines are short)
    assert updates[-1]["content"].endswith("100000\n") or updates[-1]["content"].endswith(STDERR.splitlines()[-1])
    result = payload(events, "toolResult")
    assert result["result"]["content"] == (f"Exit status: 0\n\nSTDOUT:\n{STDOUT[:MAX_STREAM_BYTES]}\n"
                                           f"... truncated to {MAX_STREAM_BYTES} bytes\nSTDERR:\n{STDERR}")
    replay = k.request("turns/events", {"turnId": events[0]["turnId"]})["events"]
    assert [e["type"] for e in replay] == types(events)  # replayed like any other event


def test_output_over_the_budget_is_cut_and_counted_in_the_last_update(kward):
    line = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    k, events = shell_turn(kward, f"yes {line.strip()} | head -n 60000")
    updates = updates_of(events)
    total = len(line) * 60_000
    assert total > 2 * BUDGET_BYTES
    stdout = joined(updates, "stdout")
    assert stdout and (line * 60_000).startswith(stdout) and stdout.endswith("\n")
    assert updates[-1]["omittedBytes"] == total - len(stdout.encode())
    assert sum(len(u["delta"].encode()) + len(u["content"].encode()) for u in updates) <= BUDGET_BYTES
    result = payload(events, "toolResult")["result"]["content"]
    assert result.startswith("Exit status: 0\n\nSTDOUT:\n" + line) and result.endswith(
        f"... truncated to {MAX_STREAM_BYTES} bytes")


@pytest.mark.parametrize("opt_out", [["turn/event:toolUpdate"], ["session/event", "turn/event:toolUpdate"]])
def test_a_client_that_opts_out_of_tool_updates_gets_none_and_the_same_result(kward, opt_out):
    k, events = shell_turn(kward, "seq 1000; echo err >&2", opt_out=opt_out)
    assert "toolUpdate" not in types(events)
    assert types(events)[2:] == ["assistantMessage", "toolCall", "toolResult", "assistantDelta", "assistantMessage",
                                 "answer", "turnDiff", "turnFinished"]
    assert payload(events, "toolResult")["content"] == (
        "Exit status: 0\n\nSTDOUT:\n" + "".join(f"{i}\n" for i in range(1, 1001)) + "\nSTDERR:\nerr\n")
    replay = k.request("turns/events", {"turnId": events[0]["turnId"]})["events"]
    assert "toolUpdate" not in [e["type"] for e in replay]  # none was made, not just none sent


def test_capabilities_claim_tool_updates(kward):
    k, events = shell_turn(kward, "echo hi")
    tools = k.request("initialize")["capabilities"]["events"]["tools"]
    assert tools["update"] is True and tools["updateEvent"] == "toolUpdate"
    assert [(u["stream"], u["delta"]) for u in updates_of(events)] == [("stdout", "hi\n")]
    assert "toolUpdate" in types(events)  # the event the capability names


def test_a_character_split_between_writes_arrives_whole(kward):
    # dash's printf: octal escapes; the snowman's three bytes come in two writes
    k, events = shell_turn(kward, r"printf 'a\342'; sleep 0.05; printf '\230\203b\n\377\n'")
    updates = updates_of(events)
    assert joined(updates, "stdout") == "a\u2603b\n\ufffd\n"
    assert payload(events, "toolResult")["content"] == "Exit status: 0\n\nSTDOUT:\na\u2603b\n\ufffd\n"


SECRET = "kw-live-secret-0123456789abcdef"


def test_a_known_credential_never_appears_in_an_update(kward):
    words = "word " * 1000  # a line over the 4 KiB hold: sent in pieces, never cut inside the credential
    command = (f"echo 'key is {SECRET} ok'; printf '{words}{SECRET[:10]}'; sleep 0.05; "
               f"printf '{SECRET[10:]} end\\n'")
    k, events = shell_turn(kward, command, env={"KWARD_LIVE_TEST_API_KEY": SECRET})
    updates = updates_of(events)
    assert updates and all(SECRET not in u["delta"] and SECRET not in u["content"] for u in updates)
    assert all(SECRET[:10] not in u["delta"] and SECRET[10:] not in u["delta"] for u in updates)
    assert joined(updates, "stdout") == f"key is [REDACTED] ok\n{words}[REDACTED] end\n"
    assert SECRET not in payload(events, "toolResult")["content"]


def test_a_cancelled_command_ends_with_its_last_update_before_the_result(kward):
    k = kward([[tool("run_shell_command", {"command": "echo started; printf partial; sleep 30",
                                           "timeout_seconds": 60}, id="sh")], [text("unreached")]])
    s = k.session()
    turn = k.start(s["id"], "run it")
    k.wait_event(turn["id"], "toolUpdate")
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"], timeout=10)
    check_turn_events(events, "canceled")
    updates = updates_of(events)
    assert joined(updates, "stdout") == "started\npartial"  # the held-back partial line too
    assert [t for t in types(events) if t != "turnCancelRequested"][-4:] == ["toolUpdate", "toolResult",
                                                                              "turnDiff", "turnFinished"]
    assert payload(events, "toolResult")["content"] == "Cancelled."


PROGRESS = '''
    def register(kward):
        @kward.command("work", description="Work in steps")
        def work(args, ctx):
            for step in range(1, 4):
                ctx.progress(f"step {step} of 3")
            ctx.say("worked")
            return "done"
'''


def test_plugin_command_progress_becomes_tool_updates_of_the_command(kward, isolated_home):
    write_plugin(isolated_home / ".kward", "work", PROGRESS)
    k = kward([])  # no model call
    s = k.session()
    _, events = k.run(s["id"], "/work now")
    check_turn_events(events, "completed")
    updates = payloads(events, "toolUpdate")
    assert updates and all(u["toolCallId"] == "command:work" and u["toolName"] == "command"
                           and u["args"] == {"command": "work", "arguments": "now"} and u["stream"] == "stdout"
                           for u in updates)
    assert joined(updates, "stdout") == "step 1 of 3\nstep 2 of 3\nstep 3 of 3\n"
    kinds = types(events)
    assert max(i for i, t in enumerate(kinds) if t == "toolUpdate") < kinds.index("assistantDelta")
    assert payload(events, "answer") == {"content": "worked\ndone"}  # progress is not output
    run = k.request("commands/run", {"sessionId": s["id"], "name": "work"})
    assert run == {"command": "work", "output": ["worked"], "result": "done"}  # outside a turn: a no-op


BLOCKING = '''
    import os

    def register(kward):
        @kward.command("slow", description="Reports progress, then waits for the test")
        def slow(args, ctx):
            for step in range(1, 4):
                ctx.progress(f"step {step} of 3")
            with open(os.path.join(ctx.workspace_root, "gate")) as gate:  # a FIFO: blocks until the test writes
                told = gate.read()
            ctx.progress(f"told {told}")
            return "done"
'''


def test_plugin_progress_reaches_the_client_while_the_command_still_runs(kward, isolated_home):
    write_plugin(isolated_home / ".kward", "slow", BLOCKING)
    k = kward([])
    s = k.session()
    gate = Path(s["workspaceRoot"]) / "gate"
    os.mkfifo(gate)
    turn = k.start(s["id"], "/slow")
    # the three lines come in one burst: the first goes at once, the other two wait for the
    # rate budget, and must go then, while the command is still blocked on the gate
    shown = k.wait_notification(lambda n: is_event(n, turn["id"], "toolUpdate")
                                and n["params"]["payload"]["content"].endswith("step 3 of 3\n"), 10,
                                "the progress of the blocked command")
    assert shown["params"]["payload"]["content"] == "step 1 of 3\nstep 2 of 3\nstep 3 of 3\n"
    with open(gate, "w") as w:  # release it
        w.write("go")
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert joined(payloads(events, "toolUpdate"), "stdout") == "step 1 of 3\nstep 2 of 3\nstep 3 of 3\ntold go\n"
    assert payload(events, "answer") == {"content": "done"}


def test_a_client_that_opts_out_of_all_turn_events_gets_a_replay_without_live_output_or_diff(kward):
    """What docs/protocol.md "Opting out" says: opted-out events are kept for `turns/events`,
    except `toolUpdate` and `turnDiff`, which are not produced at all (no gap either)."""
    k = kward([[tool("run_shell_command", {"command": "seq 3", "timeout_seconds": 60}, id="sh")], [text("done")]])
    k.request("initialize", {"capabilities": {"optOutNotificationMethods": ["turn/event"]}})
    s = k.session()
    turn = k.start(s["id"], "run it")
    replay = wait_until(lambda: (r := k.request("turns/events", {"turnId": turn["id"]}))["turn"]["status"]
                        == "completed" and r["events"], 20, "the turn to complete")
    check_turn_events(replay, "completed")  # sequence numbers without a gap
    assert types(replay)[2:] == ["assistantMessage", "toolCall", "toolResult", "assistantDelta", "assistantMessage",
                                 "answer", "turnFinished"]
    assert not [n for n in k.notifications if n["method"] == "turn/event"]
