"""memory/* over the real `kward rpc`: every method, the shapes Tauren's memory panel reads,
bad params, the memory block in the system prompt the provider receives (normal turns
only: not a one-shot prompt, not a session opened with memory off), auto-summary, and
concurrent adds from several processes."""

import json
import os
import stat

import pytest

from lib import fake_openrouter as fo
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.config_files import read_config
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.rpc_client import RpcClient
from lib.scripted_kward import kward  # noqa: F401 - fixture
from lib.scripts import text
from lib.turn_events import check_turn_events

KEY = "sk-or-v1-memory0123456789abcdef"


def memory_dir(home):
    return home / ".kward" / "memory"


def soft_records(home):
    path = memory_dir(home) / "soft.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events(home):
    return [json.loads(line)["type"] for line in (memory_dir(home) / "events.jsonl").read_text().splitlines()]


def test_memory_is_off_by_default_and_the_switches_write_config_and_answer_the_status(kward, isolated_home):
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"memory": {"other": 1}, "keep": True}))
    k = kward()
    caps = k.request("initialize")["capabilities"]["memory"]
    assert caps["supported"] is True and "memory/relax" in caps["methods"] and caps["hierarchy"] is True
    status = k.request("memory/status")
    paths = {name: str(memory_dir(isolated_home) / f) for name, f in
             (("core", "core.json"), ("soft", "soft.jsonl"), ("events", "events.jsonl"))}
    assert status == {"enabled": False, "autoSummary": False, "paths": paths}
    assert not memory_dir(isolated_home).exists()
    assert k.request("memory/enable") == {"enabled": True, "autoSummary": False, "paths": paths}
    assert read_config(isolated_home) == {"memory": {"other": 1, "enabled": True}, "keep": True}
    for path in paths.values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(open(paths["core"]).read()) == []
    assert stat.S_IMODE(os.stat(memory_dir(isolated_home)).st_mode) == 0o700
    assert k.request("memory/autoSummary/enable") == {"enabled": True, "autoSummary": True, "paths": paths}
    assert k.request("memory/status")["autoSummary"] is True
    assert k.request("memory/disable") == {"enabled": False, "autoSummary": True, "paths": paths}
    assert k.request("memory/autoSummary/disable") == {"enabled": False, "autoSummary": False, "paths": paths}
    assert k.request("memory/enable") == k.request("memory/status") == {"enabled": True, "autoSummary": False,
                                                                         "paths": paths}
    assert k.request("memory/disable") == {"enabled": False, "autoSummary": False, "paths": paths}
    assert read_config(isolated_home)["memory"] == {"other": 1, "enabled": False, "auto_summary": False}
    assert events(isolated_home) == ["enable", "auto_summary_enable", "disable", "auto_summary_disable", "enable",
                                     "disable"]
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"memory": {"enabled": "yes"}}))
    assert k.request("memory/status")["enabled"] is False  # only a literal true switches it on


def test_the_tauren_memory_panel_flow(kward, isolated_home):
    k = kward()
    ws = os.path.realpath(k.ws)
    soft = k.request("memory/add", {"text": "We run tests with pytest -q", "scope": "workspace", "tags": ["tests"]})
    assert soft["memory"]["id"] == "soft_001" and soft["memory"]["scope"] == f"workspace:{ws}"  # the launch dir
    core = k.request("memory/addCore", {"text": "Answer in English", "scope": "global"})["memory"]
    assert (core["id"], core["scope"], core["source"], core["pinned"]) == ("core_001", "global",
                                                                         "explicit_user_instruction", True)
    listed = k.request("memory/list", {"workspaceRoot": str(k.ws), "currentSessionPath": "ignored"})
    assert [m["id"] for m in listed["global_core"]] == ["core_001"] and listed["workspace_core"] == []
    assert [m["id"] for m in listed["workspace_soft"]] == ["soft_001"] and listed["global_soft"] == []
    assert [m["id"] for m in listed["core"]] == ["core_001"] and [m["id"] for m in listed["soft"]] == ["soft_001"]
    elsewhere = isolated_home / "other"
    elsewhere.mkdir()
    assert k.request("memory/list", {"workspaceRoot": str(elsewhere)})["workspace_soft"] == []
    promoted = k.request("memory/promote", {"id": "soft_001"})["memory"]
    assert (promoted["id"], promoted["scope"], promoted["source"]) == ("core_002", f"workspace:{ws}",
                                                                      "promoted_soft_memory")
    listed = k.request("memory/list", {"workspaceRoot": str(k.ws)})
    assert [m["id"] for m in listed["workspace_core"]] == ["core_002"] and listed["workspace_soft"] == []
    inactive = k.request("memory/list", {"workspaceRoot": str(k.ws), "includeInactive": True})["workspace_soft"]
    assert [(m["id"], m["status"], m["text"]) for m in inactive] == [("soft_001", "forgotten", "[forgotten]")]
    relaxed = k.request("memory/relax", {"id": "core_001", "workspaceRoot": str(k.ws)})["memory"]
    assert relaxed["scope"] == f"workspace:{ws}"
    assert k.request("memory/promote", {"id": "core_001"})["memory"]["scope"] == "global"
    assert k.request("memory/forget", {"id": "core_002"}) == {"forgotten": True}
    assert k.request("memory/forget", {"id": "core_002"}) == {"forgotten": False}
    inspected = k.request("memory/inspect")
    assert set(inspected) == {"enabled", "autoSummary", "paths", "core", "soft"}
    assert [m["id"] for m in inspected["core"]] == ["core_001"] and [m["id"] for m in inspected["soft"]] == ["soft_001"]
    scoped = k.request("memory/add", {"text": "pinned elsewhere", "scope": f"workspace:{elsewhere}"})["memory"]
    assert scoped["scope"] == f"workspace:{os.path.realpath(elsewhere)}"


@pytest.mark.parametrize("method, params, code, reason, param", [
    ("memory/add", {}, -32602, "invalid_params", "text"),
    ("memory/add", {"text": "  \n "}, -32602, "invalid_params", "text"),
    ("memory/add", {"text": 5}, -32602, "invalid_params", "text"),
    ("memory/add", {"text": "x", "scope": "team"}, -32602, "invalid_params", "scope"),
    ("memory/add", {"text": "x", "scope": "workspace:not/absolute"}, -32602, "invalid_params", "scope"),
    ("memory/addCore", {"text": "x", "tags": [1]}, -32602, "invalid_params", "tags[0]"),
    ("memory/addCore", {"text": "x", "tags": ["t"] * 101}, -32602, "invalid_params", "tags"),
    ("memory/add", {"text": "x" * 20_001}, -32602, "invalid_params", "text"),
    ("memory/forget", {}, -32602, "invalid_params", "id"),
    ("memory/promote", {"id": "soft_404"}, -32602, "memory_not_found", None),
    ("memory/relax", {"id": "core_404"}, -32602, "memory_not_found", None),
    ("memory/list", {"workspaceRoot": "/no/such/dir"}, -32602, "workspace_not_found", None),
    ("memory/list", {"includeInactive": "yes"}, -32602, "invalid_params", "includeInactive"),
    ("memory/why", {"sessionId": "nope"}, -32602, "session_not_found", None),
    ("memory/summarize", {}, -32602, "invalid_params", "sessionId"),
])
def test_bad_params_are_refused_and_change_nothing(kward, isolated_home, method, params, code, reason, param):
    k = kward()
    err = k.error(method, params)
    assert (err.code, err.reason) == (code, reason), err.error
    if param:
        assert err.error["data"]["param"] == param
    assert not (memory_dir(isolated_home) / "soft.jsonl").exists() and not (memory_dir(isolated_home) / "core.json").exists()


@pytest.mark.slow
def test_an_invalid_core_file_is_reported_and_not_overwritten(kward, isolated_home):
    memory_dir(isolated_home).mkdir(parents=True)
    (memory_dir(isolated_home) / "core.json").write_text("{broken")
    k = kward()
    for method, params in (("memory/list", {}), ("memory/addCore", {"text": "x"}), ("memory/inspect", {})):
        err = k.error(method, params)
        assert (err.code, err.reason) == (-32002, "invalid_memory_store")
    assert (memory_dir(isolated_home) / "core.json").read_text() == "{broken"
    k.request("memory/enable")
    _, evs = k.run(k.session()["id"], "a turn still runs")  # retrieval fails quietly: no memory this turn
    check_turn_events(evs, "completed")


@pytest.mark.slow
def test_why_and_summarize_and_the_session_record(kward, isolated_home):
    k = kward([[text("noted")], [text("again")]])
    k.request("memory/enable")
    k.request("memory/addCore", {"text": "Answer briefly"})
    k.request("memory/add", {"text": "the deploy target is make ship", "tags": ["release"]})
    assert k.request("memory/why")["message"] == "No memory retrieval has run yet."
    session = k.session()
    _, evs = k.run(session["id"], "Remember this: releases go out on Tuesdays. How do I deploy a release?")
    check_turn_events(evs, "completed")
    why = k.request("memory/why", {"sessionId": session["id"]})
    assert [r["id"] for r in why["reasons"]] == ["core_001", "soft_001"]
    assert [m["id"] for m in why["memories"]] == ["core_001", "soft_001"] and why["enabled"] is True
    assert why["reasons"][1]["reasons"] == ["scope match", "text overlap: deploy", "tag overlap: release",
                                            "confidence 0.65"]
    assert why["explanation"].startswith("Memory retrieval reasons:\n- core_001 (core, score 1.0)")
    assert k.request("memory/why") == why  # the process's latest is the same retrieval
    learned = k.request("memory/summarize", {"sessionId": session["id"]})["memories"]
    assert [(m["id"], m["text"], m["source"], m["confidence"], m["tags"]) for m in learned] == \
        [("soft_002", "Releases go out on Tuesdays", "inferred", 0.55, ["workflow"])]
    assert learned[0]["scope"] == f"workspace:{os.path.realpath(k.ws)}"
    assert k.request("memory/summarize", {"sessionId": session["id"]}) == {"memories": []}  # known already
    states = [r for r in k.records(session) if r["type"] == "memory_state"]
    assert states[0]["lastRetrieval"]["coreIds"] == ["core_001"] and states[0]["lastRetrieval"]["softIds"] == ["soft_001"]
    assert states[-1]["sessionMemories"] == [{k_: learned[0][k_] for k_ in ("id", "text", "scope", "tags")}]
    assert "Answer briefly" not in json.dumps(states[0])  # ids and reasons, never texts
    resumed = k.request("sessions/resume", {"path": session["path"]})
    assert k.request("memory/why", {"sessionId": resumed["id"]})["reasons"] == why["reasons"]  # kept in the file
    assert soft_records(isolated_home)[0]["hits"] == 0  # counted in memory until the next flush ...
    assert k.request("memory/list")["soft"][0]["hits"] == 1  # ... but this process sees it at once
    assert k.close() == 0
    assert soft_records(isolated_home)[0]["hits"] == 1  # written when the process stopped


@pytest.mark.slow
def test_the_memory_block_reaches_the_system_prompt_of_normal_turns_only(isolated_home):
    with FakeOpenRouter() as fake, \
            start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url, OPENROUTER_API_KEY=KEY) as c:
        (isolated_home / ".kward").mkdir(exist_ok=True)
        (isolated_home / ".kward" / "AGENTS.md").write_text("Global rules.\n")
        c.request("memory/addCore", {"text": "Answer in English."})
        c.request("memory/add", {"text": "The project uses pytest fixtures", "scope": "workspace",
                                 "workspaceRoot": str(isolated_home / "ws")})
        c.request("memory/add", {"text": "Something unrelated entirely"})
        session = create_session(c, isolated_home)
        fake.script("chat", fo.text(["one"]), fo.text(["two"]), fo.text(["three"]), fo.text(["four"]))
        run_turn(c, session["id"], "How do I run the pytest suite?")  # memory is still off
        c.request("memory/enable")
        run_turn(c, session["id"], "How do I run the pytest suite?")
        no_memory = c.request("sessions/create", {"workspaceRoot": str(isolated_home / "ws"), "memory": False})
        run_turn(c, no_memory["id"], "How do I run the pytest suite?")
        c.request("memory/disable")
        run_turn(c, session["id"], "How do I run the pytest suite?")
        systems = [r.json["messages"][0]["content"] for r in fake.requests("chat")]
    block = ("<kward_memory>\nCore Memories:\n- [core_001] Answer in English.\n\n"
             "Relevant Soft Memories:\n- [soft_001] The project uses pytest fixtures\n\n"
             "Rules:\n- Core memories override soft memories.\n"
             "- Soft memories are contextual hints, not guaranteed facts.\n</kward_memory>")
    assert block in systems[1]
    assert systems[1].index("Global rules.") < systems[1].index("<kward_memory>")  # after the user's AGENTS.md
    assert "Something unrelated" not in systems[1]
    assert [("<kward_memory>" in s) for s in systems] == [False, True, False, False]


def test_auto_summary_learns_after_a_completed_turn_quietly(kward, isolated_home):
    k = kward([[text("ok")]], loop=True)
    session = k.session()
    k.request("memory/enable")
    _, plain = k.run(session["id"], "We always indent with tabs")
    assert soft_records(isolated_home) == []  # auto-summary is off
    k.request("memory/autoSummary/enable")
    _, evs = k.run(session["id"], "I prefer short commit messages")
    check_turn_events(evs, "completed")
    assert [e["type"] for e in evs] == [e["type"] for e in plain]  # nothing reported to the client
    assert [(m["text"], m["source"]) for m in soft_records(isolated_home)] == \
        [("We always indent with tabs", "inferred"), ("I prefer short commit messages", "inferred")]
    k.request("memory/forget", {"id": "soft_001"})
    k.run(session["id"], "thanks")
    assert [m["status"] for m in soft_records(isolated_home)] == ["forgotten", "active"]  # not learned again


@pytest.mark.slow
def test_a_one_shot_prompt_gets_no_memory(cli, isolated_home):
    with FakeOpenRouter() as fake:
        env = {"KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": fake.base_url, "OPENROUTER_API_KEY": KEY}
        assert cli.run("memory", "enable", env=env).returncode == 0
        assert cli.run("memory", "core", "Answer in English.", env=env).returncode == 0
        fake.script("chat", fo.text(["fine"]))
        proc = cli.run("Answer me", env=env)
        assert (proc.returncode, proc.stdout) == (0, b"fine\n"), proc.stderr
        [request] = fake.requests("chat")
    assert "<kward_memory>" not in request.json["messages"][0]["content"]
    assert events(isolated_home) == ["enable", "add"]  # no retrieval at all


@pytest.mark.slow
def test_concurrent_adds_from_several_processes_lose_nothing(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    clients = [RpcClient(isolated_home, cwd=ws) for _ in range(3)]
    try:
        pending = []
        for n, c in enumerate(clients):
            for i in range(30):
                pending.append((c, c.send("memory/add", {"text": f"soft {n}-{i}", "scope": "workspace"})))
                if i % 3 == 0:
                    pending.append((c, c.send("memory/addCore", {"text": f"core {n}-{i}"})))
        results = [c.response(rid, timeout=60) for c, rid in pending]
        assert all("result" in r for r in results), [r for r in results if "error" in r][:3]
        listed = clients[0].request("memory/list", {"workspaceRoot": str(ws)})
    finally:
        codes = [c.close() for c in clients]
    assert codes == [0, 0, 0]
    soft_ids = sorted(m["id"] for m in listed["workspace_soft"])
    assert soft_ids == [f"soft_{i:03d}" for i in range(1, 91)]
    assert sorted(m["text"] for m in listed["soft"]) == sorted(f"Soft {n}-{i}" for n in range(3) for i in range(30))
    assert sorted(m["id"] for m in listed["core"]) == [f"core_{i:03d}" for i in range(1, 31)]
    returned = sorted(r["result"]["memory"]["id"] for r in results)
    assert returned == sorted(soft_ids + [f"core_{i:03d}" for i in range(1, 31)])  # each id handed out once


def test_memory_follows_the_workspace_of_the_clients_current_session(kward, isolated_home):
    k = kward([[text("ok")]], loop=True)  # launched in k.ws (A), as Tauren launches kward from its own folder
    launch = os.path.realpath(k.ws)
    b, c = isolated_home / "project-b", isolated_home / "project-c"
    b.mkdir()
    c.mkdir()
    before = k.request("memory/add", {"text": "Before any session", "scope": "workspace"})["memory"]
    assert before["scope"] == f"workspace:{launch}"  # no session yet: the launch directory
    k.request("memory/enable")
    session_b = k.request("sessions/create", {"workspaceRoot": str(b)})
    soft = k.request("memory/add", {"text": "Deploys go through make ship", "scope": "workspace"})["memory"]
    core = k.request("memory/addCore", {"text": "Use tabs in project b", "scope": "workspace"})["memory"]
    assert soft["scope"] == core["scope"] == f"workspace:{os.path.realpath(b)}"
    listed = k.request("memory/list")
    assert [m["id"] for m in listed["workspace_soft"]] == [soft["id"]]
    assert [m["id"] for m in listed["workspace_core"]] == [core["id"]]
    at_launch = k.request("memory/list", {"workspaceRoot": str(k.ws)})
    assert [m["id"] for m in at_launch["workspace_soft"]] == [before["id"]] and at_launch["workspace_core"] == []
    k.run(session_b["id"], "How do deploys work here?")
    why = k.request("memory/why")
    assert [m["id"] for m in why["memories"]] == [core["id"], soft["id"]]
    k.request("sessions/create", {"workspaceRoot": str(c)})
    assert k.request("memory/list")["workspace_soft"] == []
    relaxed = k.request("memory/relax", {"id": k.request("memory/addCore", {"text": "Global rule"})["memory"]["id"]})
    assert relaxed["memory"]["scope"] == f"workspace:{os.path.realpath(c)}"
    k.request("sessions/resume", {"path": session_b["path"]})
    assert [m["id"] for m in k.request("memory/list")["workspace_soft"]] == [soft["id"]]
