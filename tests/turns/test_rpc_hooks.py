"""Command hooks over the real `kward rpc` (Scripted provider, real files, real hook
processes): a beforeTool hook that blocks with exit 2 (before any approval question), the
context hooks add (tool results, the user's message, sessionStart, the next turn after
turnEnd), timeouts, a hook's background children ended with it, a cancel while a hook
runs, a planted secret kept out of the notifications, the log and the context, the order
of the notifications against the turn's events, the sandbox, and config that cannot be used."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from lib.config_files import write_config
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, payload
from lib.waiting import wait_until

SECRET = "sk-or-v1-" + "planted0123456789abcdef"
EXPERIMENTAL = {"experimentalApi": True}


def shell(command):
    return tool("run_shell_command", {"command": command})


def write(path, content):
    return tool("write_file", {"path": path, "content": content})


def start(kward, home, hooks, steps, *, config=None, **kw):  # noqa: F811
    write_config(home / ".kward", {"hooks": hooks, **(config or {})})
    k = kward(steps, **kw)
    k.request("initialize", {"capabilities": EXPERIMENTAL})  # (a run's exitStatus is experimental)
    return k, k.session()


def runs(k, method="hook/completed"):
    return [n["run"] for n in k.notified(method)]


def tool_results(k, session):
    return [m["content"] for m in k.messages(session) if m.get("role") == "tool"]


def test_a_before_tool_hook_that_exits_2_blocks_the_call_with_its_stderr(kward, isolated_home):
    hooks = {"beforeTool": [{"tool": "bash", "commandPattern": r"\brm\b",
                             "command": "cat > seen.json; echo 'no rm in this repo' >&2; exit 2"}]}
    k, s = start(kward, isolated_home, hooks, [[shell("rm -f keep.txt"), shell("echo hi > made.txt")],
                                               [text("understood")]], files={"keep.txt": "x"})
    _, events = k.run(s["id"], "clean up")
    check_turn_events(events, "completed")
    assert (k.ws / "keep.txt").exists()  # the blocked call never ran
    assert (k.ws / "made.txt").read_text() == "hi\n"  # the other one (no match) did
    blocked, ran = tool_results(k, s)
    assert blocked == "Declined: blocked by hooks.beforeTool[0]: no rm in this repo"
    assert ran.startswith("Exit status: 0")
    results = [p for p in (e["payload"] for e in events if e["type"] == "toolResult")]
    assert results[0]["result"]["isError"] is True
    (run,) = runs(k)  # only the matching call ran the hook
    assert (run["status"], run["exitStatus"], run["source"], run["event"]) == ("blocked", 2, "hooks.beforeTool[0]",
                                                                               "beforeTool")
    assert {"kind": "stderr", "text": "no rm in this repo\n"} in run["output"]
    event = json.loads((k.ws / "seen.json").read_text())  # the event on stdin
    assert event["event"] == "beforeTool" and event["toolName"] == "bash" and event["tool"] == "run_shell_command"
    assert event["args"]["command"] == "rm -f keep.txt" and event["sessionId"] == s["id"]
    assert event["cwd"] == str(k.ws.resolve()) and event["turnId"] == events[0]["turnId"]


def test_hooks_run_before_the_approval_question_so_a_blocked_call_is_never_asked(kward, isolated_home):
    hooks = {"beforeTool": [{"tool": "^write_file$", "command": "echo 'writes are reviewed elsewhere' >&2; exit 2"}]}
    k, s = start(kward, isolated_home, hooks, [[write("a.txt", "x"), shell("true")], [text("ok")]],
                 config={"security": {"approvalMode": "ask"}})
    k.request("initialize", {"capabilities": {"serverRequests": ["tool/requestApproval"], **EXPERIMENTAL}})
    turn = k.start(s["id"], "go")
    req = k.wait_server_request("tool/requestApproval")  # the shell call is asked; the write never was
    assert req["params"]["toolName"] == "bash"
    k.reply(req["id"], {"decision": "approve"})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    resolved = [e["payload"] for e in events if e["type"] == "approvalResolved"]
    assert len(resolved) == 1 and resolved[0]["toolName"] == "bash"
    assert not (k.ws / "a.txt").exists()
    assert tool_results(k, s)[0] == "Declined: blocked by hooks.beforeTool[0]: writes are reviewed elsewhere"


def test_what_hooks_print_is_added_to_the_context(kward, isolated_home):
    hooks = {"sessionStart": [{"command": "echo 'branch: main'"}],
             "userPromptSubmit": [{"command": "python3 -c 'import json,sys; print(\"len\", len(json.load(sys.stdin)[\"prompt\"]))'"}],
             "beforeTool": [{"tool": "write", "command": "echo 'style: tabs'"}],
             "afterTool": [{"tool": "write", "command": "echo formatted; echo 'unused' >&2"},
                           {"tool": "write", "command": "true"}],  # prints nothing: adds nothing
             "turnEnd": [{"command": "python3 -c 'import json,sys; print(\"previous turn:\", json.load(sys.stdin)[\"status\"])'"}]}
    k, s = start(kward, isolated_home, hooks, [[write("a.txt", "x")], [text("done")], [text("again")]])
    _, events = k.run(s["id"], "hello")
    check_turn_events(events, "completed")
    user = k.messages(s)[0]
    assert user["content"] == ('hello\n\n<hook-output source="hooks.sessionStart[0]">\nbranch: main\n</hook-output>'
                               '\n\n<hook-output source="hooks.userPromptSubmit[0]">\nlen 5\n</hook-output>')
    assert user["display_content"] == "hello"  # the transcript shows what was typed
    assert tool_results(k, s) == ['Wrote 1 bytes to a.txt\n\n<hook-output source="hooks.beforeTool[0]">\nstyle: tabs\n'
                                  '</hook-output>\n\n<hook-output source="hooks.afterTool[0]">\nformatted\n</hook-output>']
    assert payload(events, "toolResult")["result"]["content"].endswith("formatted\n</hook-output>")
    # the turnEnd context goes to the next turn; sessionStart does not run again
    _, events = k.run(s["id"], "more")
    check_turn_events(events, "completed")
    second = [m for m in k.messages(s) if m.get("role") == "user"][1]
    assert second["content"] == ('more\n\n<hook-output source="hooks.turnEnd[0]">\nprevious turn: completed\n'
                                 '</hook-output>\n\n<hook-output source="hooks.userPromptSubmit[0]">\nlen 4\n'
                                 '</hook-output>')
    assert [r["event"] for r in runs(k)].count("sessionStart") == 1
    transcript = k.transcript(s["id"])
    shown = [m for m in transcript["messages"] if m.get("role") == "user"]
    assert "hook-output" not in json.dumps(shown[0].get("content"))


def test_a_before_tool_hook_that_times_out_blocks_and_other_timeouts_and_failures_change_nothing(kward,
                                                                                                isolated_home):
    hooks = {"beforeTool": [{"tool": "bash", "commandPattern": "slow", "command": "sleep 30", "timeoutSeconds": 0.3},
                            {"tool": "bash", "commandPattern": "fails", "command": "echo broken >&2; exit 1"}],
             "afterTool": [{"tool": "bash", "command": "sleep 30", "timeoutSeconds": 0.3}]}
    k, s = start(kward, isolated_home, hooks, [[shell("echo slow > slow.txt"), shell("echo fails > fails.txt")],
                                               [text("ok")]])
    _, events = k.run(s["id"], "go", timeout=20)
    check_turn_events(events, "completed")
    assert not (k.ws / "slow.txt").exists()
    assert (k.ws / "fails.txt").read_text() == "fails\n"  # exit 1 is reported, the call runs
    blocked, ran = tool_results(k, s)
    assert blocked == "Declined: blocked by hooks.beforeTool[0]: the hook did not finish within 0.3 s"
    assert ran.startswith("Exit status: 0") and "hook-output" not in ran
    statuses = [(r["source"], r["status"], r["exitStatus"]) for r in runs(k)]
    assert statuses == [("hooks.beforeTool[0]", "blocked", None), ("hooks.beforeTool[1]", "failed", 1),
                        ("hooks.afterTool[0]", "timedOut", None)]
    failed = runs(k)[1]
    assert {"kind": "error", "text": "exit status 1"} in failed["output"]
    assert all(r["durationMs"] >= 0 for r in runs(k)) and runs(k)[0]["durationMs"] >= 300


def _gone(pid: int) -> bool:
    """The process no longer exists (or is a zombie nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_what_a_hook_leaves_running_is_ended_with_it(kward, isolated_home):
    # a child in the hook's group and one that left it (setsid): both are ended when it exits
    hooks = {"userPromptSubmit": [{"command": "sleep 60 & echo $! > group.pid; "
                                              "setsid sleep 60 & echo $! > setsid.pid; exit 0"}]}
    k, s = start(kward, isolated_home, hooks, [[text("ok")]])
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    for name in ("group.pid", "setsid.pid"):
        pid = int((k.ws / name).read_text())
        wait_until(lambda: _gone(pid), timeout=10, what=f"{name} {pid} ended")
    assert runs(k)[0]["status"] == "completed"


def test_cancel_while_a_hook_runs_ends_its_processes_and_the_turn(kward, isolated_home):
    hooks = {"beforeTool": [{"command": "echo $$ > hook.pid; sleep 60"}]}
    k, s = start(kward, isolated_home, hooks, [[shell("echo ran > ran.txt")], [text("never")]])
    turn = k.start(s["id"], "go")
    k.wait_notification(lambda n: n["method"] == "hook/started", 10, "hook/started")
    wait_until(lambda: (k.ws / "hook.pid").exists() and (k.ws / "hook.pid").read_text().strip(), timeout=10,
               what="the hook's pid")
    pid = int((k.ws / "hook.pid").read_text())
    k.request("turns/cancel", {"sessionId": s["id"], "turnId": turn["id"]})
    events = k.finish(turn["id"], timeout=15)
    check_turn_events(events, "canceled")
    wait_until(lambda: _gone(pid), timeout=10, what="the hook ended")
    assert not (k.ws / "ran.txt").exists()
    (run,) = runs(k)
    assert run["status"] == "failed" and {"kind": "error", "text": "canceled with the turn"} in run["output"]


def test_a_planted_secret_is_kept_out_of_the_notifications_the_log_and_the_context(kward, isolated_home):
    # the hook cannot read kward's credential from its environment; it finds it in a file
    hooks = {"afterTool": [{"command": f"cat secret.txt; echo 'Authorization: Bearer abcdefghijkl' >&2; exit 1"},
                           {"command": "cat secret.txt"}]}
    k, s = start(kward, isolated_home, hooks, [[shell("env | grep -c OPENROUTER_API_KEY || true")], [text("ok")]],
                 files={"secret.txt": SECRET + "\n"}, env={"OPENROUTER_API_KEY": SECRET})
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    everything = json.dumps(list(k.notifications))
    assert SECRET not in everything and "abcdefghijkl" not in everything
    failed, ok = runs(k)
    assert failed["status"] == "failed" and "[REDACTED]" in failed["output"][0]["text"]
    assert "Bearer [REDACTED]" in failed["output"][1]["text"]
    content = tool_results(k, s)[0]
    assert SECRET not in content and '<hook-output source="hooks.afterTool[1]">' in content
    log = (isolated_home / ".kward" / "logs" / "kward.log").read_text()
    assert "hooks.afterTool[0]" in log and SECRET not in log and "abcdefghijkl" not in log
    records = json.dumps(k.records(s))
    assert SECRET not in records


def test_the_notifications_come_in_order_with_the_turn_events(kward, isolated_home):
    hooks = {"userPromptSubmit": [{"command": "true"}], "beforeTool": [{"command": "true"}],
             "afterTool": [{"command": "true"}], "turnEnd": [{"command": "true"}]}
    k, s = start(kward, isolated_home, hooks, [[write("a.txt", "x")], [text("ok")]],
                 config={"security": {"approvalMode": "ask"}})
    k.request("initialize", {"capabilities": {"serverRequests": ["tool/requestApproval"], **EXPERIMENTAL}})
    turn = k.start(s["id"], "go")
    req = k.wait_server_request("tool/requestApproval")
    k.reply(req["id"], {"decision": "approve"})
    k.finish(turn["id"])
    seen = []
    for n in list(k.notifications):
        if n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]:
            if n["params"]["type"] not in ("assistantDelta", "turnQueued"):
                seen.append(n["params"]["type"])
        elif n["method"].startswith("hook/"):
            seen.append(f'{n["method"]} {n["params"]["run"]["event"]}')
            assert n["params"]["turnId"] == turn["id"] and n["params"]["sessionId"] == s["id"]
    assert seen == ["turnStarted", "hook/started userPromptSubmit", "hook/completed userPromptSubmit",
                    "assistantMessage", "toolCall", "hook/started beforeTool", "hook/completed beforeTool",
                    "approvalRequested", "approvalResolved", "hook/started afterTool", "hook/completed afterTool",
                    "toolResult", "assistantMessage", "answer", "hook/started turnEnd", "hook/completed turnEnd",
                    "turnDiff", "turnFinished"]
    started, completed = runs(k, "hook/started"), runs(k)
    assert [r["id"] for r in started] == [r["id"] for r in completed]
    assert all(r["status"] == "running" and r["durationMs"] is None and r["output"] == [] for r in started)


def test_a_client_may_opt_out_of_the_hook_notifications(kward, isolated_home):
    k, s = start(kward, isolated_home, {"beforeTool": [{"command": "echo seen"}]}, [[shell("true")], [text("ok")]])
    k.request("initialize", {"capabilities": {"optOutNotificationMethods": ["hook/started", "hook/completed"],
                                              **EXPERIMENTAL}})
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    assert k.notified("hook/started") == [] and k.notified("hook/completed") == []
    assert "seen" in tool_results(k, s)[0]  # the hook still ran


@pytest.mark.skipif(not os.path.exists("/usr/bin/bwrap") and not os.environ.get("KWARD_CI"),
                    reason="bubblewrap is not installed")
def test_hooks_run_under_the_shell_sandbox_when_it_is_configured(kward, isolated_home, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    hooks = {"userPromptSubmit": [{"command": f"touch {outside}/x; touch inside.txt; ls ~/.kward | wc -l"}]}
    k, s = start(kward, isolated_home, hooks, [[text("ok")]],
                 config={"security": {"sandbox": "workspace-write"}})
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    assert (k.ws / "inside.txt").exists() and not (outside / "x").exists()
    (run,) = runs(k)
    assert run["status"] == "completed"
    assert k.messages(s)[0]["content"].endswith("\n0\n</hook-output>")  # the config directory is hidden


def test_hook_config_that_cannot_be_used_fails_the_turn_and_is_refused_by_config_update(kward, isolated_home):
    k, s = start(kward, isolated_home, {"beforeTool": [{"tool": "(", "command": "true"}]},
                 [[shell("touch x")], [text("ok")]])
    caps = k.request("initialize", {"capabilities": EXPERIMENTAL})["capabilities"]["hooks"]
    assert caps["invalid"] is True and caps["events"] == ["beforeTool", "afterTool", "userPromptSubmit", "turnEnd",
                                                          "sessionStart"]
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "failed")
    error = payload(events, "error")
    assert error["reason"] == "invalid_config" and "hooks.beforeTool" in error["message"], error
    assert not (k.ws / "x").exists()
    refused = k.error("config/update", {"values": {"hooks": {"userPromptSubmit": [{"command": "x", "tool": "y"}]}}})
    assert refused.data["reason"] == "invalid_config" and "do not take" in refused.message
    k.request("config/update", {"values": {"hooks": {"turnEnd": [{"command": "true"}],
                                                     "beforeTool": [{"command": "true"}]}}})
    caps = k.request("initialize", {"capabilities": EXPERIMENTAL})["capabilities"]["hooks"]
    assert (caps["configured"], caps["invalid"]) == (2, False)


def test_no_hooks_no_notifications(kward, isolated_home):
    k, s = start(kward, isolated_home, {}, [[shell("true")], [text("ok")]])
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    assert k.notified("hook/completed") == [] and k.notified("hook/started") == []


def test_a_canceled_turn_still_runs_its_turn_end_hooks_with_its_status(kward, isolated_home):
    hooks = {"beforeTool": [{"command": "echo $$ > hook.pid; sleep 60"}],
             "turnEnd": [{"command": "cat > end.json"}]}
    k, s = start(kward, isolated_home, hooks, [[shell("true")], [text("never")]])
    turn = k.start(s["id"], "go")
    k.wait_notification(lambda n: n["method"] == "hook/started", 10, "hook/started")
    k.request("turns/cancel", {"sessionId": s["id"], "turnId": turn["id"]})
    check_turn_events(k.finish(turn["id"], timeout=15), "canceled")
    end = json.loads((k.ws / "end.json").read_text())
    assert (end["event"], end["status"], end["answer"]) == ("turnEnd", "canceled", None)
    assert [(r["event"], r["status"]) for r in runs(k)] == [("beforeTool", "failed"), ("turnEnd", "completed")]


def test_an_event_that_is_no_valid_utf8_still_reaches_the_hook_as_json(kward, isolated_home):
    # a lone surrogate in the model's arguments: the hook gets JSON's own escape for it
    hooks = {"beforeTool": [{"command": "python3 -c 'import json,sys; print(ascii(json.load(sys.stdin)[\"args\"]))'"}]}
    k, s = start(kward, isolated_home, hooks, [[tool("list_directory", {"path": ".", "x": "a\ud800b"})],
                                               [text("ok")]])
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    (run,) = runs(k)
    assert run["status"] == "completed" and "\\ud800" in run["output"][0]["text"]


def test_a_runs_exit_status_is_experimental(kward, isolated_home):
    # the notifications go to every client; the run's exitStatus only to one that asked for
    # experimental parts
    k, s = start(kward, isolated_home, {"beforeTool": [{"command": "echo seen"}]}, [[shell("true")], [text("ok")],
                                                                                  [shell("true")], [text("ok")]])
    caps = k.request("initialize", {})["capabilities"]
    assert caps["hooks"]["notifications"] == ["hook/started", "hook/completed"]
    assert caps["rpc"]["experimentalApi"]["enabled"] is False
    assert "hook/completed params.run.exitStatus" in caps["rpc"]["experimentalApi"]["fields"]
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    (plain,) = runs(k)
    assert plain["status"] == "completed" and "exitStatus" not in plain
    assert all("exitStatus" not in r for r in runs(k, "hook/started"))
    k.request("initialize", {"capabilities": EXPERIMENTAL})
    _, events = k.run(s["id"], "again")
    check_turn_events(events, "completed")
    assert runs(k)[1]["exitStatus"] == 0 and runs(k, "hook/started")[1]["exitStatus"] is None
