"""Prompt templates, skills and plugins over the real `kward rpc` (Scripted provider), with
temp config directories: commands/list, resources/startup, prompts/*, slash turns,
commands/run, broken and blocking plugins, and runtime/reload after edits."""

import json
import shutil

import pytest

from lib.config_files import write_config
from lib.resources_helpers import (
    BLOCKING, BLOCKS_AT_LOAD, HELLO, NO_REGISTER, RAISES_AT_LOAD, RAISING, SYNTAX_ERROR, read_lines,
    write_plugin, write_prompt, write_skill,
)
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events
from lib.waiting import wait_until


@pytest.fixture
def cfg(isolated_home):
    return isolated_home / ".kward"


def setup_everything(cfg):
    write_prompt(cfg, "plan", "Make a plan for: $ARGUMENTS", description="Plan a change", argument_hint="<what>")
    write_prompt(cfg, "review", "Review the last change.")
    write_prompt(cfg, "exit", "reserved")
    write_prompt(cfg, "bad.name", "bad")
    write_skill(cfg, "pdf", "Use pdftotext.", description="Work with PDFs")
    write_skill(cfg, "pdf-copy", "Again.", name="pdf", description="Duplicate")
    write_plugin(cfg, "hello", HELLO)
    write_plugin(cfg, "syntax", SYNTAX_ERROR)
    write_plugin(cfg, "raises", RAISES_AT_LOAD)
    write_plugin(cfg, "noreg", NO_REGISTER)
    (cfg / "AGENTS.md").write_text("Be kind.\n")


def test_listing_startup_and_capabilities(kward, cfg, isolated_home):
    setup_everything(cfg)
    k = kward(files={"AGENTS.md": "Project rules.\n"})
    caps = k.request("initialize")["capabilities"]
    assert caps["commands"]["supported"] is True and caps["commands"]["methods"] == ["commands/list", "commands/run"]
    assert caps["commands"]["executableSources"] == ["plugin"] and caps["startupResources"]["supported"] is True
    assert caps["prompts"] == {"supported": True, "methods": ["prompts/list", "prompts/expand"]}
    assert caps["skills"] == {"supported": True, "tool": "read_skill"}
    session = k.session()
    listed = k.request("commands/list", {"sessionId": session["id"]})["commands"]
    assert listed == [
        {"name": "plan", "description": "Plan a change", "argumentHint": "<what>", "source": "prompt",
         "location": "user", "path": str(cfg / "prompts" / "plan.md")},
        {"name": "review", "description": "", "source": "prompt", "location": "user",
         "path": str(cfg / "prompts" / "review.md")},
        {"name": "skill:pdf", "description": "Work with PDFs", "source": "skill", "location": "user",
         "path": str(cfg / "skills" / "pdf" / "SKILL.md")},
        *({"name": name, "description": description, "argumentHint": hint, "source": "plugin",
           "path": str(cfg / "plugins" / "hello.py"), "executable": True}
          for name, description, hint in [("hi", "Say hi", "[name]"), ("peek", "Describe the session", ""),
                                           ("quiet", "", "")]),
    ]
    assert k.request("commands/list")["commands"] == listed  # sessionId is optional
    assert k.request("prompts/list")["prompts"] == [
        {"command": "plan", "description": "Plan a change", "argumentHint": "<what>",
         "path": str(cfg / "prompts" / "plan.md")},
        {"command": "review", "description": "", "argumentHint": "", "path": str(cfg / "prompts" / "review.md")}]
    startup = k.request("resources/startup", {"sessionId": session["id"]})
    assert startup["sections"] == [{"name": "Context", "items": ["~/.kward/AGENTS.md", "AGENTS.md"]},
                                   {"name": "Skills", "items": ["pdf"]},
                                   {"name": "Prompts", "items": ["/plan", "/review"]},
                                   {"name": "Plugins", "items": ["/hi", "/peek", "/quiet"]}]
    warned = {(w["source"], w["path"].rsplit("/", 1)[-1]): w["message"] for w in startup["warnings"]}
    assert set(warned) == {("prompt", "exit.md"), ("prompt", "bad.name.md"), ("skill", "SKILL.md"),
                           ("plugin", "syntax.py"), ("plugin", "raises.py"), ("plugin", "noreg.py")}
    assert warned[("plugin", "raises.py")] == "Plugin raises failed to load: RuntimeError: no luck at import"
    assert warned[("plugin", "syntax.py")].startswith("Plugin syntax failed to load: SyntaxError: ")
    assert "/exit is a built-in command" in warned[("prompt", "exit.md")]
    log = (cfg / "logs" / "kward.log").read_text()
    assert "RuntimeError: no luck at import" in log and "Traceback" in log  # stderr stays quiet (the fixture checks)
    tools = [t["function"]["name"] for t in k.request("tools/list")["tools"]]
    assert tools[-2:] == ["read_skill", "web_search"]
    assert k.error("commands/list", {"sessionId": "nope"}).reason == "session_not_found"


def test_an_empty_config_directory_lists_nothing_and_offers_no_read_skill(kward):
    k = kward()
    session = k.session()
    assert k.request("commands/list", {"sessionId": session["id"]}) == {"commands": []}
    assert k.request("resources/startup", {"sessionId": session["id"]}) == {"sections": [
        {"name": "Context", "items": []}, {"name": "Skills", "items": []}, {"name": "Prompts", "items": []},
        {"name": "Plugins", "items": []}]}
    assert "read_skill" not in [t["function"]["name"] for t in k.request("tools/list")["tools"]]


def test_prompt_expansion_and_slash_turns(kward, cfg):
    write_prompt(cfg, "plan", "Make a plan for: $ARGUMENTS\nThen stop.", description="Plan a change")
    k = kward([[text("planned")], [text("again")], [text("literal")], [text("x")]])
    session = k.session()
    _, events = k.run(session["id"], "/plan fix the bug")  # a fresh process: resolved when the turn runs
    check_turn_events(events, "completed")
    assert k.request("prompts/expand", {"command": "/plan", "arguments": "a b"}) == {
        "command": "plan", "text": "Make a plan for: a b\nThen stop."}
    assert k.request("prompts/expand", {"command": "plan"})["text"] == "Make a plan for: \nThen stop."
    _, events = k.run(session["id"], "/plan  second ")  # the catalog is loaded now: resolved at start
    check_turn_events(events, "completed")
    _, events = k.run(session["id"], "/nope keep me")  # unknown: literal input
    check_turn_events(events, "completed")
    users = [m for m in k.messages(session) if m["role"] == "user"]
    assert users == [
        {"role": "user", "content": "Make a plan for: fix the bug\nThen stop.", "display_content": "/plan fix the bug"},
        {"role": "user", "content": "Make a plan for: second\nThen stop.", "display_content": "/plan  second "},
        {"role": "user", "content": "/nope keep me"}]
    [listed] = k.request("sessions/list", {"workspaceRoot": str(k.ws)})["sessions"]
    assert listed["firstMessage"] == "/plan fix the bug" and listed["name"] == "/plan fix the bug"
    for params, reason in [({"command": "nope"}, "command_not_found"), ({"command": "hi"}, "command_not_found"),
                           ({}, "invalid_params"), ({"command": "plan", "arguments": 3}, "invalid_params")]:
        assert k.error("prompts/expand", params).reason == reason, params


def test_plugin_commands_as_turns_and_through_commands_run(kward, cfg):
    write_plugin(cfg, "hello", HELLO)
    k = kward([])  # an empty script: any model call would fail the turn
    session = k.session(name="Work")
    _, events = k.run(session["id"], "/hi Ann")
    check_turn_events(events, "completed")
    output = f"Hello Ann\nfrom {k.ws}"
    assert [(e["type"], e["payload"]) for e in events[2:]] == [
        ("assistantDelta", {"delta": output}), ("answer", {"content": output}),
        ("turnFinished", {"status": "completed"})]
    assert k.messages(session) == [{"role": "user", "content": "/hi Ann"}, {"role": "assistant", "content": output}]
    transcript = k.request("sessions/transcript", {"sessionId": session["id"]})["messages"]
    assert [m["role"] for m in transcript] == ["user", "assistant"]

    run = k.request("commands/run", {"sessionId": session["id"], "name": "/hi", "arguments": "Bob"})
    assert run == {"command": "hi", "output": ["Hello Bob"], "result": f"from {k.ws}"}
    peek = k.request("commands/run", {"sessionId": session["id"], "name": "peek", "arguments": "x y"})
    assert peek["output"] == [] and eval(peek["result"]) == {  # noqa: S307 - the plugin's repr of plain data
        "roles": ["user", "assistant"], "frozen": True, "session": session["id"], "path": session["path"],
        "name": "Work", "args": "x y"}
    assert k.request("commands/run", {"sessionId": session["id"], "name": "quiet"}) == {
        "command": "quiet", "output": [], "result": None}
    _, events = k.run(session["id"], "/quiet")  # no output: no assistantDelta
    check_turn_events(events, "completed")
    assert [e["type"] for e in events[2:]] == ["answer", "turnFinished"]
    assert len(k.messages(session)) == 4  # commands/run stores nothing; the /quiet turn stores two

    for params, reason in [({"sessionId": session["id"], "name": "nope"}, "command_not_found"),
                           ({"sessionId": session["id"]}, "invalid_params"),
                           ({"name": "hi"}, "invalid_params"),
                           ({"sessionId": "gone", "name": "hi"}, "session_not_found"),
                           ({"sessionId": session["id"], "name": "hi", "arguments": ["x"]}, "invalid_params")]:
        assert k.error("commands/run", params).reason == reason, params


def test_a_plugin_command_with_attachments_is_literal_input(kward, cfg):
    write_plugin(cfg, "hello", HELLO)
    k = kward([[text("seen")]])
    session = k.session()
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    _, events = k.run(session["id"], "/hi there", attachments=[image])
    check_turn_events(events, "completed")
    assert [e["payload"] for e in events if e["type"] == "answer"] == [{"content": "seen"}]  # the model answered


def test_a_raising_plugin_is_contained(kward, cfg):
    write_plugin(cfg, "hello", HELLO)
    write_plugin(cfg, "raising", RAISING)
    k = kward([])
    session = k.session()
    err = k.error("commands/run", {"sessionId": session["id"], "name": "boom", "arguments": "now"})
    assert (err.code, err.reason, err.error["message"]) == (-32004, "plugin_failed",
                                                           "Plugin command /boom failed: ValueError: boom now")
    assert err.error["data"] == {"reason": "plugin_failed", "errorClass": "PluginFailed", "plugin": "raising",
                                 "command": "boom", "exception": "ValueError"}
    _, events = k.run(session["id"], "/boom later")
    finished = check_turn_events(events, "failed")
    assert finished["error"]["reason"] == "plugin_failed"
    assert finished["error"]["message"] == "Plugin command /boom failed: ValueError: boom later"
    assert k.messages(session) == [{"role": "user", "content": "/boom later"}]
    _, events = k.run(session["id"], "/hi")  # the server and the other plugins go on
    check_turn_events(events, "completed")
    assert "ValueError: boom now" in (k.home / ".kward" / "logs" / "kward.log").read_text()


@pytest.mark.slow
def test_a_blocking_plugin_times_out_while_every_other_request_is_answered(kward, cfg, isolated_home):
    out = isolated_home / "blocked.jsonl"
    write_plugin(cfg, "hello", HELLO)
    write_plugin(cfg, "blocking", BLOCKING, out=out)
    write_plugin(cfg, "slowload", BLOCKS_AT_LOAD)  # never finishes loading: skipped after the timeout
    write_config(cfg, {"plugins": {"command_timeout_seconds": 1}})
    k = kward([])
    first, second = k.session(name="one"), k.session(name="two")  # named: an unused one is not cleaned up
    blocked = k.client.send("commands/run", {"sessionId": first["id"], "name": "block", "arguments": "run"})
    turn = k.start(second["id"], "/block turn")
    wait_until(lambda: len(read_lines(out)) == 2, what="both calls of /block to start")
    # both block now; the server answers everything else meanwhile
    assert k.request("workspace/info")["root"] == str(k.ws)
    assert k.request("commands/run", {"sessionId": first["id"], "name": "hi"})["output"] == ["Hello you"]
    _, events = k.run(k.session(name="three")["id"], "/hi third")
    check_turn_events(events, "completed")
    assert k.client.response_counts[json.dumps(blocked)] == 0 and k.request("turns/status", {"turnId": turn["id"]})[
        "status"] == "running"

    err = k.client.response(blocked, timeout=30)["error"]
    assert (err["code"], err["data"]["reason"]) == (-32004, "plugin_timeout")
    assert err["message"] == ("Plugin command /block did not finish within 1 s; it was abandoned (its thread may "
                              "still be running)")
    assert err["data"]["timeoutSeconds"] == 1 and err["data"]["plugin"] == "blocking"
    finished = check_turn_events(k.finish(turn["id"], timeout=30), "failed")
    assert finished["error"]["reason"] == "plugin_timeout"
    warnings = k.request("resources/startup")["warnings"]
    assert [w["message"] for w in warnings] == [
        "Plugin slowload did not finish loading within 1 s; it was skipped (its thread may still be running)"]
    assert k.request("commands/run", {"sessionId": first["id"], "name": "hi", "arguments": "again"})["output"] == [
        "Hello again"]
    assert k.close() == 0  # the abandoned threads do not hold up the exit


def test_reload_reads_prompts_skills_plugins_and_agents_again(kward, cfg):
    write_prompt(cfg, "plan", "Plan: $ARGUMENTS")
    write_skill(cfg, "pdf", "Use pdftotext.", description="PDFs")
    write_plugin(cfg, "hello", HELLO)
    write_plugin(cfg, "broken", SYNTAX_ERROR)
    k = kward()
    session = k.session()
    names = lambda: [c["name"] for c in k.request("commands/list", {"sessionId": session["id"]})["commands"]]  # noqa
    assert names() == ["plan", "skill:pdf", "hi", "peek", "quiet"]
    assert len(k.request("resources/startup", {"sessionId": session["id"]})["warnings"]) == 1

    write_prompt(cfg, "plan", "Plan better: $ARGUMENTS", description="now described")
    write_prompt(cfg, "ship", "Ship it.")
    shutil.rmtree(cfg / "skills" / "pdf")
    write_skill(cfg, "sql", "Write SQL.", description="SQL")
    write_plugin(cfg, "broken", 'def register(kward):\n    kward.command("fixed")(lambda a, c: "works now")\n')
    (cfg / "plugins" / "hello.py").unlink()
    (cfg / "AGENTS.md").write_text("New rules.\n")
    assert names() == ["plan", "skill:pdf", "hi", "peek", "quiet"]  # nothing is re-read until a reload
    assert k.request("runtime/reload", {"sessionId": session["id"]}) == {"ok": True, "message": "Resources reloaded."}
    assert names() == ["plan", "ship", "skill:sql", "fixed"]
    startup = k.request("resources/startup", {"sessionId": session["id"]})
    assert "warnings" not in startup and startup["sections"][0]["items"] == ["~/.kward/AGENTS.md"]
    assert k.request("prompts/expand", {"command": "plan", "arguments": "x"})["text"] == "Plan better: x"
    assert k.request("commands/run", {"sessionId": session["id"], "name": "fixed"})["result"] == "works now"
    assert k.error("commands/run", {"sessionId": session["id"], "name": "hi"}).reason == "command_not_found"


@pytest.mark.slow
def test_slash_input_while_a_turn_runs_steers_a_template_and_queues_a_plugin_command(kward, cfg):
    write_prompt(cfg, "plan", "Plan: $ARGUMENTS")
    write_plugin(cfg, "hello", HELLO)
    question = {"question": "Which color?", "header": "Color",
                "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}
    k = kward([[text("noted"), tool("ask_user_question", {"questions": [question]}, id="ask")], [text("planned")]])
    session = k.session()
    k.request("commands/list")  # loaded before the turn: resolved when turns/start arrives
    turn = k.start(session["id"], "start")
    q = k.question()  # the turn runs until the question is answered
    steered = k.start(session["id"], "/plan the tests")  # omitted behavior on a steering provider: steer
    assert steered["id"] == turn["id"]
    queued = k.start(session["id"], "/hi Ann")  # a plugin command is never steered into the turn
    assert queued["id"] != turn["id"] and queued["status"] == "queued"
    k.request("ui/answerQuestion", {"sessionId": session["id"], "questionRequestId": q["questionRequestId"],
                                    "answers": ["Red"]})
    events = k.finish(turn["id"])
    check_turn_events(events, "completed")
    assert [e["payload"]["input"] for e in events if e["type"] == "turnSteered"] == ["Plan: the tests"]
    check_turn_events(k.finish(queued["id"]), "completed")
    assert [(m["role"], m["content"]) for m in k.messages(session)] == [
        ("user", "start"), ("assistant", "noted"), ("tool", "Which color?: Red"), ("user", "Plan: the tests"),
        ("assistant", "planned"), ("user", "/hi Ann"), ("assistant", f"Hello Ann\nfrom {k.ws}")]
