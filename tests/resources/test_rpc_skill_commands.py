"""`/skill:<name> args` turns over the real `kward rpc`: the model gets the skill's
instructions and the arguments, the transcript keeps what was typed, an unknown skill is
refused; and the bounds of slash input (a prompt template's expansion held to the input
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
from lib.scripts import text
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


def test_skill_commands_are_stored_as_typed_and_unknown_skills_are_refused(kward, cfg):
    write_skill(cfg, "pdf", "Use pdftotext.", description="Work with PDFs")
    k = kward([[text("one")], [text("two")], [text("three")]])
    session = k.session()
    _, events = k.run(session["id"], "/skill:nope do Y")  # a fresh process: resolved when the turn runs
    check_turn_events(events, "failed")
    assert failed_error(events)["reason"] == "command_not_found"
    assert "Unknown skill: nope" in failed_error(events)["message"]
    assert k.messages(session) == []  # nothing stored
    assert [e["name"] for e in k.request("commands/list")["commands"]] == ["skill:pdf"]  # the catalog is loaded
    for typed in ["/skill:nope do Y", "/skill:", "/skill:bad.name x"]:
        err = k.error("turns/start", {"sessionId": session["id"], "input": typed})
        assert (err.code, err.reason) == (-32602, "command_not_found") and "Unknown skill" in err.message, typed
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
