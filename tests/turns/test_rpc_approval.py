"""The approval policy over the real `kward rpc` (Scripted provider, real files, real shell
commands): the `tool/requestApproval` server request and each way it ends (approve,
decline, approveForSession, an invalid reply, timeout, a late answer, cancel, the client
gone), a client that did not declare it answers them, `readOnly`, the per-session
`runtime/updateSetting approvalMode`, and a config value that cannot be used."""

from __future__ import annotations

from lib.config_files import write_config
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, payload, payloads, types

REQUEST = "tool/requestApproval"
ANSWERS = {"capabilities": {"serverRequests": [REQUEST]}}


def write(path, content):
    return tool("write_file", {"path": path, "content": content})


def shell(command):
    return tool("run_shell_command", {"command": command})


def start(kward, home, steps, *, mode="ask", timeout=None, files=None, declare=True, config=None):  # noqa: F811
    """A kward with `security.approvalMode` `mode` (None: unset) whose client declared (or
    not) that it answers approval requests, and a session."""
    security = {} if mode is None else {"approvalMode": mode}
    if timeout is not None:
        security["approvalTimeoutSeconds"] = timeout
    write_config(home / ".kward", config if config is not None else {"security": security})
    k = kward(steps, files=files)
    k.security = k.request("initialize", ANSWERS if declare else {"capabilities": {}})["capabilities"]["security"]
    return k, k.session()


def tool_results(k, session):
    """The toolResult messages of the session file."""
    return [m for m in k.messages(session) if m.get("role") == "tool"]


def resolved_notes(k):
    return k.notified("serverRequest/resolved")


def test_approve_runs_the_call_after_the_request_with_its_diff_preview(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("new.txt", "hello\n")], [text("done")]])
    turn = k.start(s["id"], "write it")
    req = k.wait_server_request(REQUEST)
    # the observers' event came first, then the request; nothing written yet
    asked = payload(k.events(turn["id"]), "approvalRequested")
    assert not (k.ws / "new.txt").exists()
    p = req["params"]
    assert req["id"].startswith("srv-") and asked["requestId"] == req["id"]
    assert p["sessionId"] == s["id"] and p["turnId"] == turn["id"]
    assert p["toolName"] == "write" and p["tool"] == "write_file" and p["toolCallId"] == asked["toolCallId"]
    assert p["args"]["path"] == "new.txt"
    assert "+hello" in p["preview"]["diff"] and "new.txt" in p["preview"]["diff"]
    assert asked["preview"] == p["preview"]
    k.reply(req["id"], {"decision": "approve"})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert (k.ws / "new.txt").read_text() == "hello\n"
    done = payload(events, "approvalResolved")
    assert (done["decision"], done["outcome"], done["reason"]) == ("approve", "answered", None)
    assert payload(events, "toolResult")["result"]["isError"] is False
    assert resolved_notes(k) == []  # answered: no serverRequest/resolved
    # the approval events are in the turn's log and replay like the others
    replay = k.request("turns/events", {"turnId": turn["id"], "afterSequence": 0})["events"]
    assert [e["type"] for e in replay].count("approvalResolved") == 1


def test_decline_gives_the_model_a_declined_result_and_the_turn_goes_on(kward, isolated_home):
    k, s = start(kward, isolated_home, [[shell("touch made.txt")], [text("fine, I will not")]])
    turn = k.start(s["id"], "make a file")
    req = k.wait_server_request(REQUEST)
    assert req["params"]["preview"] == {"command": "touch made.txt", "cwd": str(k.ws.resolve())}
    k.reply(req["id"], {"decision": "decline", "reason": "not in my repo"})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert not (k.ws / "made.txt").exists()
    result = payload(events, "toolResult")
    assert result["content"] == "Declined: not in my repo" and result["result"]["isError"] is True
    assert payload(events, "answer")["content"] == "fine, I will not"
    assert [m["content"] for m in tool_results(k, s)] == ["Declined: not in my repo"]  # what the model read


def test_approve_for_session_skips_the_question_for_that_exact_command_only(kward, isolated_home):
    k, s = start(kward, isolated_home, [[shell("echo a > a.txt")], [shell("echo a > a.txt"), shell("echo b > b.txt")],
                                        [text("done")]])
    turn = k.start(s["id"], "go")
    first = k.wait_server_request(REQUEST)
    k.reply(first["id"], {"decision": "approveForSession"})
    second = k.wait_server_request(REQUEST, 2)
    assert second["params"]["args"]["command"] == "echo b > b.txt"  # the same command was not asked again
    k.reply(second["id"], {"decision": "approve"})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert len(k.server_requests) == 2
    assert [(p["decision"], p["outcome"]) for p in payloads(events, "approvalResolved")] == [
        ("approveForSession", "answered"), ("approve", "session"), ("approve", "answered")]
    assert len(payloads(events, "approvalRequested")) == 2
    assert (k.ws / "a.txt").read_text() == "a\n" and (k.ws / "b.txt").read_text() == "b\n"


def test_no_answer_in_time_declines_and_says_so_and_a_late_answer_changes_nothing(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("late.txt", "x")], [text("ok")]], timeout=0.5)
    turn = k.start(s["id"], "go")
    req = k.wait_server_request(REQUEST)
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert resolved_notes(k) == [{"id": req["id"], "outcome": "timedOut"}]
    result = payload(events, "toolResult")
    assert result["content"].startswith("Declined: no answer to the approval request in time")
    assert payload(events, "approvalResolved")["outcome"] == "timedOut"
    # the late answer: ignored, never answered, nothing written, the server still serves
    k.reply(req["id"], {"decision": "approve"})
    assert k.request("sessions/list", {})["sessions"]
    assert not (k.ws / "late.txt").exists()
    assert k.null_id_errors == [] and k.protocol_errors == []
    assert len(k.events(turn["id"])) == len(events)


def test_an_answer_to_an_id_never_asked_is_ignored(kward, isolated_home):
    k, s = start(kward, isolated_home, [[text("hi")]])
    k.reply("srv-99", {"decision": "approve"})
    k.reply(12345, {"decision": "approve"})
    _, events = k.run(s["id"], "still serving")
    check_turn_events(events, "completed")
    assert k.null_id_errors == [] and k.protocol_errors == []


def test_cancel_while_waiting_declines_and_ends_the_turn_canceled(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("c.txt", "x")], [text("never")]])
    turn = k.start(s["id"], "go")
    req = k.wait_server_request(REQUEST)
    k.request("turns/cancel", {"turnId": turn["id"]})
    events = k.finish(turn["id"])
    check_turn_events(events, "canceled")
    assert resolved_notes(k) == [{"id": req["id"], "outcome": "canceled"}]
    assert payload(events, "approvalResolved")["outcome"] == "canceled"
    assert payload(events, "toolResult")["content"] == "Declined: the turn was canceled while waiting for approval"
    assert not (k.ws / "c.txt").exists()
    k.reply(req["id"], {"decision": "approve"})  # too late
    assert k.request("sessions/list", {})["sessions"] and not (k.ws / "c.txt").exists()


def test_client_gone_while_waiting_declines_and_the_server_exits_cleanly(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("g.txt", "x")], [text("never")]])
    k.start(s["id"], "go")
    k.wait_server_request(REQUEST)
    k.close_stdin()
    assert k.wait_exit() == 0
    assert not (k.ws / "g.txt").exists()
    assert [m["content"] for m in tool_results(k, s)] == [
        "Declined: the client went away before answering the approval request"]


def test_a_client_that_did_not_declare_support_is_never_asked_and_the_turn_completes(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("n.txt", "x")], [text("ok")]], declare=False)
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    assert k.server_requests == [] and "approvalRequested" not in types(events)
    done = payload(events, "approvalResolved")
    assert (done["decision"], done["outcome"]) == ("decline", "unsupported")
    content = payload(events, "toolResult")["content"]
    assert content.startswith("Declined: approval mode is ask and the client cannot answer approval requests")
    assert "serverRequests" in content and not (k.ws / "n.txt").exists()


def test_read_only_declines_mutating_calls_without_asking_and_runs_reading_ones(kward, isolated_home):
    k, s = start(kward, isolated_home, [[tool("read_file", {"path": "r.txt"}), write("r.txt", "new"),
                                         shell("touch s.txt")], [text("ok")]], mode="readOnly", files={"r.txt": "old"})
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "completed")
    assert k.server_requests == []
    results = payloads(events, "toolResult")
    assert results[0]["result"]["isError"] is False and "old" in results[0]["content"]
    assert [r["content"].split(":")[0] for r in results[1:]] == ["Declined", "Declined"]
    assert "readOnly" in results[1]["content"]
    assert (k.ws / "r.txt").read_text() == "old" and not (k.ws / "s.txt").exists()
    assert [p["outcome"] for p in payloads(events, "approvalResolved")] == ["readOnly", "readOnly"]


def test_update_setting_approval_mode_applies_to_that_session_only(kward, isolated_home):
    k, s = start(kward, isolated_home, [[shell("echo 1 > one.txt")], [text("a")], [shell("echo 2 > two.txt")],
                                        [text("b")], [shell("echo 3 > three.txt")], [text("c")]], mode=None)
    assert k.security["toolApproval"] == "off"
    _, events = k.run(s["id"], "default: off")
    check_turn_events(events, "completed")
    assert (k.ws / "one.txt").exists() and "approvalResolved" not in types(events)
    bad = k.error("runtime/updateSetting", {"sessionId": s["id"], "settingId": "approvalMode", "value": "never"})
    assert bad.code == -32602 and bad.data["param"] == "value"
    result = k.request("runtime/updateSetting", {"sessionId": s["id"], "settingId": "approvalMode",
                                                  "value": "readOnly"})
    assert result["applied"] == "live"
    _, events = k.run(s["id"], "now read-only")
    check_turn_events(events, "completed")
    assert not (k.ws / "two.txt").exists() and payload(events, "approvalResolved")["outcome"] == "readOnly"
    other = k.session()
    _, events = k.run(other["id"], "another session is still off")
    check_turn_events(events, "completed")
    assert "approvalResolved" not in types(events) and k.server_requests == []
    assert payloads(events, "toolResult")[0]["result"]["isError"] is False  # the shell ran, unasked


def test_an_invalid_reply_declines_with_a_reason(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("i.txt", "x"), write("j.txt", "y")], [text("ok")]])
    turn = k.start(s["id"], "go")
    k.reply(k.wait_server_request(REQUEST)["id"], {"decision": "yes please"})
    k.reply(k.wait_server_request(REQUEST, 2)["id"], error={"code": -32601, "message": "no"})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    contents = [r["content"] for r in payloads(events, "toolResult")]
    assert contents[0].startswith("Declined: the client's approval reply was not valid")
    assert contents[1] == "Declined: the client answered the approval request with an error"
    assert [p["outcome"] for p in payloads(events, "approvalResolved")] == ["invalidReply", "invalidReply"]
    assert not (k.ws / "i.txt").exists() and not (k.ws / "j.txt").exists()


def test_an_unusable_approval_mode_fails_the_turn_and_runs_nothing(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("u.txt", "x")], [text("ok")]],
                 config={"security": {"approvalMode": "sometimes"}})
    assert k.security["toolApproval"] == "invalid"
    _, events = k.run(s["id"], "go")
    check_turn_events(events, "failed")
    err = payload(events, "error")
    assert err["code"] == "ConfigError" and "security.approvalMode" in err["message"]
    assert not (k.ws / "u.txt").exists()
    refused = k.error("config/update", {"values": {"security": {"approvalMode": "maybe"}}})
    assert refused.code == -32602


def test_capabilities_report_the_configured_mode(kward, isolated_home):
    k, _ = start(kward, isolated_home, [[text("hi")]], mode="ask")
    security = k.security
    assert security["toolApproval"] == "ask" and security["workspaceMutationGuard"] == "approval"
    assert security["serverRequests"] == [REQUEST]
    assert security["approvalEvents"] == ["approvalRequested", "approvalResolved"]


def test_an_edit_is_previewed_as_its_diff_and_reading_is_never_asked(kward, isolated_home):
    edit = tool("edit_file", {"path": "e.txt", "edits": [{"old_text": "two", "new_text": "TWO"}]})
    k, s = start(kward, isolated_home, [[tool("read_file", {"path": "e.txt"}), edit], [text("ok")]],
                 files={"e.txt": "one\ntwo\n"})
    turn = k.start(s["id"], "go")
    req = k.wait_server_request(REQUEST)
    assert req["params"]["tool"] == "edit_file"  # the read before it ran unasked
    # the diff the edit's own result carries (`result.diff`), made without writing
    assert req["params"]["preview"]["diff"] == "--- e.txt\n+++ e.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO"
    assert (k.ws / "e.txt").read_text() == "one\ntwo\n"
    k.reply(req["id"], {"decision": "decline"})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert payloads(events, "toolResult")[1]["content"] == "Declined: the user declined this tool call"
    assert (k.ws / "e.txt").read_text() == "one\ntwo\n" and len(k.server_requests) == 1


def test_a_config_change_of_the_mode_is_announced_and_applies_to_the_next_turn(kward, isolated_home):
    k, s = start(kward, isolated_home, [[write("a.txt", "x")], [text("ok")], [write("b.txt", "y")], [text("ok")]],
                 mode=None)
    _, events = k.run(s["id"], "off by default")
    check_turn_events(events, "completed")
    assert (k.ws / "a.txt").exists()
    k.request("config/update", {"values": {"security": {"approvalMode": "readOnly"}}})
    changed = k.wait_notification(lambda n: n["method"] == "runtime/capabilitiesChanged")["params"]
    assert changed["capabilities"]["security"]["toolApproval"] == "readOnly"
    _, events = k.run(s["id"], "now read-only")
    check_turn_events(events, "completed")
    assert not (k.ws / "b.txt").exists() and payload(events, "approvalResolved")["outcome"] == "readOnly"


def test_no_credential_kward_holds_reaches_the_client_in_a_preview(kward, isolated_home):
    secret = "compat-plain-secret-4242"  # config openai_compat_api_key: matches no pattern, known by value
    k, s = start(kward, isolated_home, [[tool("read_file", {"path": "s.txt"}), write("s.txt", "key=gone\n"), shell(f"echo {secret}")],
                                       [text("ok")]],
                 files={"s.txt": f"key={secret}\n"},
                 config={"security": {"approvalMode": "ask"}, "openai_compat_api_key": secret})
    turn = k.start(s["id"], "go")
    req = k.wait_server_request(REQUEST)
    assert "-key=" in req["params"]["preview"]["diff"] and "+key=gone" in req["params"]["preview"]["diff"]
    k.reply(req["id"], {"decision": "decline"})
    k.reply(k.wait_server_request(REQUEST, 2)["id"], {"decision": "decline"})
    check_turn_events(k.finish(turn["id"]), "completed")
    assert all(secret.encode() not in body for body in k.bodies)


def test_shutdown_while_waiting_declines_and_exits_cleanly(kward, isolated_home):
    k, s = start(kward, isolated_home, [[shell("touch sd.txt")], [text("never")]])
    k.start(s["id"], "go")
    req = k.wait_server_request(REQUEST)
    assert k.request("shutdown") == {"ok": True}
    assert k.wait_exit() == 0
    assert not (k.ws / "sd.txt").exists()
    assert [m["content"] for m in tool_results(k, s)] == [
        "Declined: the client went away before answering the approval request"]
    assert {"id": req["id"], "outcome": "clientGone"} in resolved_notes(k)


def test_an_approval_with_edited_args_runs_them_and_the_model_reads_what_ran(kward, isolated_home):
    k, s = start(kward, isolated_home, [[shell("echo model > m.txt")], [text("ok")]])
    turn = k.start(s["id"], "go")
    req = k.wait_server_request(REQUEST)
    k.reply(req["id"], {"decision": "approve", "args": {"command": "echo user > u.txt"}})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert not (k.ws / "m.txt").exists() and (k.ws / "u.txt").read_text() == "user\n"
    content = tool_results(k, s)[0]["content"]
    assert content.endswith("(The user edited the command before it ran; what ran: echo user > u.txt)")


def test_edited_args_that_are_not_an_object_or_come_with_a_decline_decline(kward, isolated_home):
    k, s = start(kward, isolated_home, [[shell("touch a.txt"), shell("touch b.txt")], [text("ok")]])
    turn = k.start(s["id"], "go")
    first = k.wait_server_request(REQUEST)
    k.reply(first["id"], {"decision": "approve", "args": "touch c.txt"})
    second = k.wait_server_request(REQUEST, 2)
    k.reply(second["id"], {"decision": "decline", "args": {"command": "touch c.txt"}})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert sorted(p.name for p in k.ws.iterdir()) == []
    assert [p["outcome"] for p in payloads(events, "approvalResolved")] == ["invalidReply", "invalidReply"]
