"""`/skill:<name> args` turns over the real `kward rpc`: the model gets the skill's
instructions and the arguments, the transcript keeps what was typed, an unknown skill is
sent as typed; and the bounds of slash input (a prompt template's expansion held to the input
limit before it is built, symlinked templates and SKILL.md files refused alike at
discovery and when read)."""

import os

import pytest

from lib import fake_openrouter as fo
from lib.config_files import write_config
from lib.fake_http import served
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.resources_helpers import write_prompt, write_skill
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, failed_error, finished

KEY = "sk-or-v1-skills0123456789abcdef"
fake = served(FakeOpenRouter)


@pytest.fixture
def cfg(isolated_home):
    return isolated_home / ".kward"


def expansion(cfg, name, body, arguments):
    folder = os.path.realpath(cfg / "skills" / name)
    out = (f'<skill name="{name}" location="{folder}/SKILL.md">\n'
           f"References are relative to {folder}.\n\n{body}\n</skill>")
    return out + (f"\n\n{arguments}" if arguments else "")


def test_a_skill_command_sends_the_skill_and_the_arguments_to_the_model(isolated_home, fake, cfg):
    write_skill(cfg, "pdf", "Use pdftotext.\nSee forms.md.\n", description="Work with PDFs")
    fake.script("chat", fo.text(["done"]))
    with start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url, OPENROUTER_API_KEY=KEY) as client:
        session = create_session(client, isolated_home)
        assert finished(run_turn(client, session["id"], "/skill:pdf do X"))["status"] == "completed"
        [request] = fake.requests("chat")
        assert request.json["messages"][-1] == {
            "role": "user", "content": expansion(cfg, "pdf", "Use pdftotext.\nSee forms.md.", "do X")}
    assert client.protocol_errors == [] and client.stderr == ""


def test_skill_commands_are_stored_as_typed_and_unknown_skills_are_sent_as_typed(kward, cfg):
    write_skill(cfg, "pdf", "Use pdftotext.", description="Work with PDFs")
    k = kward([[text("zero")], [text("one")], [text("two")], [text("three")]])
    session = k.session()
    _, events = k.run(session["id"], "/skill:nope do Y")  # a fresh process: resolved when the turn runs
    check_turn_events(events, "completed")  # an unknown slash command is literal input
    assert k.messages(session)[0] == {"role": "user", "content": "/skill:nope do Y"}
    assert [e["name"] for e in k.request("commands/list")["commands"]] == ["skill:pdf"]  # the catalog is loaded
    k.request("sessions/delete", {"sessionId": session["id"]})
    session = k.session()
    _, events = k.run(session["id"], "/skill:pdf do X")  # resolved at start
    check_turn_events(events, "completed")
    _, events = k.run(session["id"], "/skill:pdf")  # no arguments
    check_turn_events(events, "completed")
    assert k.request("runtime/state", {"sessionId": session["id"]})["enableSkillCommands"] is True
    users = [m for m in k.messages(session) if m["role"] == "user"]
    assert users == [
        {"role": "user", "content": expansion(cfg, "pdf", "Use pdftotext.", "do X"), "display_content": "/skill:pdf do X"},
        {"role": "user", "content": expansion(cfg, "pdf", "Use pdftotext.", ""), "display_content": "/skill:pdf"}]
    transcript = k.transcript(session["id"])
    shown = [m for m in transcript["messages"] if m["role"] == "user"]
    assert [m["content"] for m in shown] == [[{"type": "text", "text": "/skill:pdf do X"}],
                                             [{"type": "text", "text": "/skill:pdf"}]]  # what was typed


def test_a_template_expansion_over_the_input_limit_is_refused_before_it_is_built(kward, cfg):
    write_prompt(cfg, "many", "Do: " + "$ARGUMENTS " * 10)
    k = kward([[text("ok")]], env={"KWARD_MAX_INPUT_CHARS": "1000"})
    session = k.session()
    arguments = "x" * 200  # 113 (the body) + 10 * (200 - 10) = 2,013 characters once expanded
    _, events = k.run(session["id"], f"/many {arguments}")  # a fresh process: resolved when the turn runs
    error = failed_error(events)
    assert error["reason"] == "input_too_large" and error["data"]["max_chars"] == 1000
    assert error["data"]["actual_chars"] == 2013 and "/many expands to 2013 characters" in error["message"]
    assert k.messages(session) == []
    err = k.error("prompts/expand", {"command": "many", "arguments": arguments})  # the catalog is loaded now
    assert (err.code, err.reason) == (-32602, "input_too_large") and err.data["actual_chars"] == 2013
    err = k.error("turns/start", {"sessionId": session["id"], "input": f"/many {arguments}"})
    assert (err.code, err.reason) == (-32602, "input_too_large")
    assert err.data == {"input_error_code": "input_too_large", "max_chars": 1000, "actual_chars": 2013,
                        "errorClass": "InputTooLarge", "reason": "input_too_large"}
    assert k.request("prompts/expand", {"command": "many", "arguments": "y" * 80})["text"] == "Do: " + "y" * 80 + \
        (" " + "y" * 80) * 9  # within the limit: expanded
    _, events = k.run(session["id"], "/many " + "y" * 80)
    check_turn_events(events, "completed")
    assert [m["display_content"] for m in k.messages(session) if m["role"] == "user"] == ["/many " + "y" * 80]


def test_a_skill_expansion_over_the_input_limit_is_refused(kward, cfg):
    write_skill(cfg, "big", "B" * 900, description="d")
    k = kward([[text("ok")]], env={"KWARD_MAX_INPUT_CHARS": "1000"})
    session = k.session()
    k.request("commands/list")
    err = k.error("turns/start", {"sessionId": session["id"], "input": "/skill:big " + "a" * 300})
    assert (err.code, err.reason) == (-32602, "input_too_large") and "/skill:big expands to" in err.message
    assert err.data["actual_chars"] > 1000 and k.messages(session) == []


def test_symlinked_templates_and_skill_files_are_refused_at_discovery_and_when_read(kward, cfg, isolated_home):
    elsewhere = isolated_home / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "t.md").write_text("Linked template $ARGUMENTS")
    (elsewhere / "SKILL.md").write_text("---\ndescription: linked\n---\nLinked skill.")
    write_prompt(cfg, "plain", "Plain $ARGUMENTS")
    os.symlink(elsewhere / "t.md", cfg / "prompts" / "linked.md")
    write_skill(cfg, "real", "Real skill.", description="real")
    (cfg / "skills" / "linked").mkdir()
    os.symlink(elsewhere / "SKILL.md", cfg / "skills" / "linked" / "SKILL.md")
    write_skill(cfg, "inside", "Inside.", description="a link that stays inside its folder")
    os.replace(cfg / "skills" / "inside" / "SKILL.md", cfg / "skills" / "inside" / "main.md")
    os.symlink("main.md", cfg / "skills" / "inside" / "SKILL.md")
    skill_dir = isolated_home / "shared-skills" / "pdf"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\ndescription: a linked folder\n---\nUse pdftotext.")
    os.symlink(skill_dir, cfg / "skills" / "pdf")  # a linked folder is followed (at discovery and when read)
    k = kward([[tool("read_skill", {"name": "real"}, id="a")], [text("read")], [text("pdf")]])
    session = k.session()
    startup = k.request("resources/startup", {"sessionId": session["id"]})
    assert startup["sections"][1:3] == [{"name": "Skills", "items": ["pdf", "real"]},
                                        {"name": "Prompts", "items": ["/plain"]}]
    warned = {w["path"]: w["message"] for w in startup["warnings"]}
    assert set(warned) == {str(cfg / "prompts" / "linked.md"), str(cfg / "skills" / "linked" / "SKILL.md"),
                           str(cfg / "skills" / "inside" / "SKILL.md")}
    assert all("symbolic link" in message for message in warned.values()), warned
    # SKILL.md swapped for a link after discovery: refused when read, by read_skill and by /skill:
    os.replace(cfg / "skills" / "real" / "SKILL.md", elsewhere / "real.md")
    os.symlink(elsewhere / "real.md", cfg / "skills" / "real" / "SKILL.md")
    _, events = k.run(session["id"], "read it")
    [result] = [e["payload"] for e in events if e["type"] == "toolResult"]
    assert result["result"]["isError"] is True and "symbolic link" in result["content"]
    err = k.error("turns/start", {"sessionId": session["id"], "input": "/skill:real go"})
    assert (err.code, err.reason) == (-32003, "unusable_file") and "symbolic link" in err.message
    _, events = k.run(session["id"], "/skill:pdf go")
    check_turn_events(events, "completed")
    [*_, last] = [m for m in k.messages(session) if m["role"] == "user"]
    assert last["content"].startswith(f'<skill name="pdf" location="{os.path.realpath(skill_dir)}/SKILL.md">')
