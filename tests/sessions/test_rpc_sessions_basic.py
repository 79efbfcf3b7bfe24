"""sessions/create, resume, list, rename and transcript over the real `kward rpc`: result
shapes, what lands in the file, and every error path."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from lib.rpc_sessions import NOTES, start, workspace  # noqa: F401 (fixtures)
from lib.session_records import messages_of, names_of, strict_records

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FILE_NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z_[0-9a-f-]{36}\.jsonl$")
SESSION_KEYS = {"id", "persistentId", "path", "workspaceRoot", "cwd", "createdAt", "modifiedAt"}

NEEDS_SESSION_ID = ["sessions/rename", "sessions/clone", "sessions/forkMessages", "sessions/fork",
                    "sessions/export", "sessions/delete", "sessions/close", "sessions/transcript"]


def check_payload(p: dict, workspace: Path, *, name: str | None = None) -> None:
    assert SESSION_KEYS <= set(p), p
    assert p["id"] != p["persistentId"]
    assert p["workspaceRoot"] == p["cwd"] == str(workspace)
    assert os.path.isabs(p["path"]) and os.path.isfile(p["path"])
    assert ISO.match(p["createdAt"]) and ISO.match(p["modifiedAt"]) and p["createdAt"] <= p["modifiedAt"]
    assert p.get("name") == name
    assert "parentId" not in p and "parentPath" not in p


def test_create(start, workspace, isolated_home):
    k = start()
    (workspace / "sub").mkdir()
    p = k.create(name="  My chat  ", clientExtra={"ignored": True})
    check_payload(p, workspace, name="My chat")
    path = Path(p["path"])
    expected_dir = isolated_home / ".kward" / "sessions" / ("--" + str(workspace)[1:].replace("/", "-") + "--")
    assert path.parent == expected_dir and FILE_NAME.match(path.name) and p["persistentId"] in path.name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    head, info = strict_records(path)
    assert head == {"type": "session", "version": 1, "id": p["persistentId"], "timestamp": head["timestamp"],
                    "cwd": str(workspace)}
    assert ISO.match(head["timestamp"]) and info["type"] == "session_info" and info["name"] == "My chat"

    sub = k.create(workspaceRoot="sub", name="in sub")  # relative to the launch directory
    assert sub["workspaceRoot"] == sub["cwd"] == str(workspace / "sub")
    assert Path(sub["path"]).parent.name.endswith("-ws-sub--")
    unnamed = k.create()
    assert unnamed["workspaceRoot"] == str(workspace) and unnamed.get("name") is None
    assert len({p["id"], sub["id"], unnamed["id"]}) == 3

    for params, reason in [({"workspaceRoot": "missing"}, "workspace_not_found"),
                           ({"workspaceRoot": "notes.txt"}, "not_a_directory")]:
        err = k.error("sessions/create", params)
        assert err.code == -32602 and err.reason == reason and params["workspaceRoot"] in err.error["message"]
    for params, param in [({"workspaceRoot": 7}, "workspaceRoot"), ({"name": ["x"]}, "name")]:
        err = k.error("sessions/create", params)
        assert err.code == -32602 and param in err.error["message"] and err.error["data"]["param"] == param


@pytest.mark.slow
def test_resume_in_a_fresh_process(start, workspace):
    a = start()
    s = a.create()
    a.run_turn(s["id"], "first question")
    before = a.transcript(s["id"])
    assert a.close() == 0  # the session has content: closing keeps it

    b = start(cwd=workspace.parent)  # launched elsewhere: the relative path needs workspaceRoot
    rel = os.path.relpath(s["path"], workspace)
    r = b.resume(rel, workspaceRoot=str(workspace))
    check_payload(r, workspace, name="first question")  # the first turn named the session
    assert r["persistentId"] == s["persistentId"] and r["path"] == s["path"] and r["id"] != s["id"]
    assert r["createdAt"] == s["createdAt"]
    after = b.transcript(r["id"])
    assert after["messages"] == before["messages"] and after["session"]["id"] == r["id"]
    # the resumed session goes on where it stopped, in the same file
    b.run_turn(r["id"], "second question")
    users = [m["content"] for m in messages_of(strict_records(s["path"])) if m["role"] == "user"]
    assert users == ["first question", "second question"]
    # closed, it may be resumed again in the same process (a new RPC id)
    assert b.request("sessions/close", {"sessionId": r["id"]}) == {"closed": True}
    again = b.resume(s["path"])
    assert again["id"] not in (r["id"], s["id"]) and len(b.transcript(again["id"])["messages"]) == 8


def test_resume_errors(start, workspace, isolated_home):
    k = start()
    (workspace / "not-a-session.jsonl").write_text('{"hello": "world"}\n')
    (workspace / "empty.jsonl").write_text("")
    (workspace / "v2.jsonl").write_text(json.dumps({"type": "session", "version": 2, "id": "x", "cwd": "/"}) + "\n")
    for path in ["not-a-session.jsonl", "empty.jsonl", "notes.txt", "v2.jsonl"]:
        err = k.error("sessions/resume", {"path": path})
        assert err.code == -32602 and err.reason == "invalid_params", path
        assert "Not a Kward session file" in err.error["message"] and path in err.error["message"]
        assert "Traceback" not in json.dumps(err.error)
    err = k.error("sessions/resume", {"path": "missing.jsonl"})
    assert err.code == -32602 and "not found" in err.error["message"] and "missing.jsonl" in err.error["message"]
    for path in [".", "/dev/null"]:
        err = k.error("sessions/resume", {"path": path})
        assert err.code == -32602 and err.reason == "path_not_allowed", path
    for params in [{}, {"path": None}, {"path": ""}, {"path": "  "}, {"path": 3}]:
        err = k.error("sessions/resume", params)
        assert err.code == -32602 and "path" in err.error["message"] and err.error["data"]["param"] == "path"
    err = k.error("sessions/resume", {"path": "x.jsonl", "workspaceRoot": "nowhere"})
    assert err.code == -32602 and err.reason == "workspace_not_found"
    assert k.request("workspace/info")["writable"] is True  # still serving


def test_unknown_session_ids(start):
    k = start()
    s = k.create(name="soon gone")
    methods = NEEDS_SESSION_ID + ["turns/start", "runtime/state", "runtime/stats"]
    closed, deleted = k.create(name="closed"), k.create(name="deleted")
    k.request("sessions/close", {"sessionId": closed["id"]})
    k.request("sessions/delete", {"sessionId": deleted["id"]})
    for sid in ["no-such-session", s["persistentId"], closed["id"], deleted["id"]]:
        for method in methods:
            err = k.error(method, {"sessionId": sid, "input": "x", "entryId": "message:0", "name": "n"})
            assert err.code == -32602, method
            assert err.error["message"] == f"Unknown session: {sid}", method  # clients match this text
            assert err.reason == "session_not_found" and err.error["data"]["errorClass"] == "SessionNotFound"
    assert k.transcript(s["id"])["session"]["id"] == s["id"]  # the others still work


@pytest.mark.parametrize("params", [None, {}, {"sessionId": None}, {"sessionId": 42}])
@pytest.mark.slow
def test_missing_or_mistyped_session_id_names_the_param(start, params):
    k = start()
    for method in NEEDS_SESSION_ID + ["turns/start"]:
        err = k.error(method, params)
        assert err.code == -32602 and "'sessionId'" in err.error["message"], method
        assert err.reason == "invalid_params" and err.error["data"]["param"] == "sessionId"


@pytest.mark.slow
def test_list(start, workspace, tmp_path):
    k = start()
    made = [k.create(name=f"chat {i}") for i in range(22)]
    items = k.listing()
    assert len(items) == 20  # the default limit
    assert [i["path"] for i in items] == [m["path"] for m in reversed(made)][:20]  # newest first
    item = items[0]
    newest = made[-1]
    assert item == {
        "id": newest["persistentId"], "path": newest["path"], "cwd": str(workspace),
        "workspaceRoot": str(workspace), "createdAt": newest["createdAt"], "modifiedAt": item["modifiedAt"],
        "name": "chat 21", "firstMessage": "", "messageCount": 0, "depth": 0, "isLast": False,
        "ancestorContinues": [],
    }
    assert [i["isLast"] for i in items] == [False] * 19 + [True]  # 20 roots
    assert [i["path"] for i in k.listing(limit=3)] == [m["path"] for m in reversed(made)][:3]
    assert len(k.listing(limit=50)) == 22
    # a turn makes an older session the newest; messageCount and firstMessage follow it
    k.run_turn(made[0]["id"], "  what   is\nin the notes?  ")
    top = k.listing(limit=1)[0]
    assert top["path"] == made[0]["path"] and top["messageCount"] == 4
    assert top["firstMessage"] == "what is in the notes?"
    # another workspace lists its own sessions only
    other = tmp_path / "other"
    other.mkdir()
    assert k.listing(workspaceRoot=str(other)) == []
    o = k.create(workspaceRoot=str(other), name="elsewhere")
    assert [i["path"] for i in k.listing(workspaceRoot=str(other))] == [o["path"]]
    assert o["path"] not in [i["path"] for i in k.listing(limit=100)]
    for params, param in [({"limit": "5"}, "limit"), ({"workspaceRoot": 1}, "workspaceRoot")]:
        err = k.error("sessions/list", params)
        assert err.code == -32602 and err.error["data"]["param"] == param
    err = k.error("sessions/list", {"workspaceRoot": "missing"})
    assert err.code == -32602 and err.reason == "workspace_not_found"


@pytest.mark.slow
def test_list_tree(start):
    k = start()
    root = k.create(name="root")
    k.run_turn(root["id"], "hello")
    second = k.request("sessions/clone", {"sessionId": root["id"]})   # older child of root
    first = k.request("sessions/clone", {"sessionId": root["id"]})    # newer child of root
    grandchild = k.request("sessions/clone", {"sessionId": first["id"]})
    other = k.create(name="other root")                                 # the newest root
    rows = [(i["path"], i["depth"], i["isLast"], i["ancestorContinues"], i.get("parentId")) for i in k.listing()]
    assert rows == [
        (other["path"], 0, False, [], None),
        (root["path"], 0, True, [], None),
        (first["path"], 1, False, [], root["persistentId"]),
        (grandchild["path"], 2, True, [True], first["persistentId"]),
        (second["path"], 1, True, [], root["persistentId"]),
    ]
    by_path = {i["path"]: i for i in k.listing()}
    assert by_path[first["path"]]["parentPath"] == root["path"]
    assert by_path[grandchild["path"]]["messageCount"] == 4 and by_path[grandchild["path"]]["name"] == "root"
    # a child whose parent is not in the list is shown as a root
    assert [(i["path"], i["depth"], i["isLast"]) for i in k.listing(limit=2)] == [
        (other["path"], 0, False), (grandchild["path"], 0, True)]


@pytest.mark.slow
def test_rename(start, workspace):
    k = start()
    s = k.create()
    r = k.request("sessions/rename", {"sessionId": s["id"], "name": "  Plan  "})
    assert r["name"] == "Plan" and r["id"] == s["id"] and r["persistentId"] == s["persistentId"]
    assert r["path"] == s["path"] and r["workspaceRoot"] == str(workspace)
    assert k.listing()[0]["name"] == "Plan"
    assert k.request("runtime/state", {"sessionId": s["id"]})["sessionName"] == "Plan"
    for cleared in ["", "   ", None]:
        k.request("sessions/rename", {"sessionId": s["id"], "name": "again"})
        r = k.request("sessions/rename", {"sessionId": s["id"], "name": cleared})
        assert r.get("name") is None and r["id"] == s["id"], cleared
        assert k.transcript(s["id"])["session"].get("name") is None
    k.request("sessions/rename", {"sessionId": s["id"], "name": "final ✓"})
    assert names_of(strict_records(s["path"])) == ["Plan", "again", None, "again", None, "again", None, "final ✓"]
    err = k.error("sessions/rename", {"sessionId": s["id"], "name": 5})
    assert err.code == -32602 and err.error["data"]["param"] == "name"
    k.close()
    fresh = start()
    assert fresh.resume(s["path"])["name"] == "final ✓"


@pytest.mark.slow
def test_transcript(start, workspace):
    k = start()
    s = k.create(name="t")
    events = k.run_turn(s["id"], "read <notes> & tell me")
    call_id = next(e["payload"]["toolCallId"] for e in events if e["type"] == "toolResult")
    t = k.transcript(s["id"])
    assert t["session"]["id"] == s["id"] and t["session"]["persistentId"] == s["persistentId"]
    assert t["session"]["name"] == "t" and t["session"]["path"] == s["path"]
    user, call, result, answer = t["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "read <notes> & tell me"}]}
    assert call["role"] == "assistant"
    assert call["content"][0] == {"type": "thinking", "thinking": "Thinking about the notes."}  # reasoning first
    assert call["content"][1:] == [
        {"type": "text", "text": "Reading them."},
        {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "notes.txt"}},
    ]
    assert result == {"role": "toolResult", "toolCallId": call_id, "toolName": "read", "isError": False,
                      "content": [{"type": "text", "text": NOTES}]}
    assert answer == {"role": "assistant", "content": [{"type": "text", "text": "The notes say hello."}]}
    # the file holds exactly what the transcript shows, plus the audit record of the tool
    records = strict_records(s["path"])
    assert [m["role"] for m in messages_of(records)] == ["user", "assistant", "tool", "assistant"]
    [end] = [r for r in records if r["type"] == "tool_execution_end"]
    assert end["toolCallId"] == call_id and end["toolName"] == "read" and end["isError"] is False
    # an empty session has an empty transcript
    e = k.create()
    assert k.transcript(e["id"])["messages"] == []


@pytest.mark.slow
def test_a_damaged_file_resumes_and_the_damage_goes_to_the_log(start, workspace, isolated_home):
    head = {"type": "session", "version": 1, "id": "22222222-3333-4444-8555-666666666666",
            "timestamp": "2025-05-05T05:05:05.5Z", "cwd": str(workspace)}
    lines = [json.dumps(head), "",
             json.dumps({"type": "message", "message": {"role": "user", "content": "kept 1"}}),
             "{not json", json.dumps({"type": "branch_summary", "summary": "from a newer kward"}), "   ",
             json.dumps({"type": "message", "message": {"role": "assistant", "content": "kept 2"}}),
             json.dumps({"type": "session_info", "name": "damaged"}),
             '{"type":"message","message":{"role":"user","content":"torn']
    path = workspace / "damaged.jsonl"
    path.write_text("\n".join(lines))  # the last line has no newline: a writer died mid-line
    k = start()
    r = k.resume("damaged.jsonl")
    assert r["name"] == "damaged" and r["createdAt"] == "2025-05-05T05:05:05.500Z"
    assert [m["content"] for m in k.transcript(r["id"])["messages"]] == [
        [{"type": "text", "text": "kept 1"}], [{"type": "text", "text": "kept 2"}]]
    log_text = (isolated_home / ".kward" / "logs" / "kward.log").read_text()
    assert "Skipped 3 line(s) of session" in log_text and str(path) in log_text and "torn last line" in log_text
    k.run_turn(r["id"], "appended after the torn line")
    data = path.read_bytes()
    assert b'"content":"torn\n{"type":"message"' in data  # the torn fragment stays a line of its own
    assert k.close() == 0 and k.stderr == ""  # nothing on stderr: the damage is in the log only
    again = start().resume(str(path))
    assert again["name"] == "damaged"


def test_capabilities_list_the_session_methods(start):
    caps = start().request("initialize")["capabilities"]["sessions"]
    assert caps["supported"] is True and caps["persistence"] == "jsonl"
    assert set(caps["methods"]) == {f"sessions/{m}" for m in (
        "create", "resume", "list", "rename", "clone", "compact", "forkMessages", "fork", "export", "delete", "close",
        "transcript", "diff")}
    assert caps["list"]["supported"] is True and caps["list"]["treeFields"] is True
    assert caps["compact"]["supported"] is True
    assert caps["import"]["supported"] is False and caps["tree"]["supported"] is False
    assert caps["updates"] == {"supported": True, "notification": "session/event",  # (kward's: issue 23)
                               "events": ["sessionUpdated", "usageUpdated"]}
