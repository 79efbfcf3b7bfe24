"""The system prompt a real model request carries (the real `kward rpc` against the fake
OpenRouter server): the order of its parts, caps, AGENTS.md read again after an edit (by
hand between turns, by the agent within one); the memory hook; read_skill and plugin
observers in real turns (Scripted provider)."""

import json
from pathlib import Path

import pytest

from kward.resources import Resources
from kward.resources.skills import discover_skills, skills_prompt
from kward.resources.text import MAX_PROMPT_FILE, truncation_note
from lib import fake_openrouter as fo
from lib.fake_http import served
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.paths import REPO
from lib.resources_helpers import read_lines, write_plugin, write_skill
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events, finished
from lib.waiting import wait_until

KEY = "sk-or-v1-prompt0123456789abcdef"
BASE = (REPO / "kward" / "resources" / "base_prompt.md").read_text().strip()
CONTEXT_PLUGIN = '''
    def register(kward):
        @kward.prompt_context
        def first(ctx):
            return "Plugin context for " + ctx.workspace_root

        @kward.prompt_context
        def nothing(ctx):
            return None

        @kward.prompt_context
        def broken(ctx):
            raise RuntimeError("context bug")
'''


fake = served(FakeOpenRouter)


@pytest.fixture
def client(isolated_home, fake):
    cfg = isolated_home / ".kward"
    (cfg / "AGENTS.md").parent.mkdir(parents=True, exist_ok=True)
    (cfg / "AGENTS.md").write_text("User rule.\n")
    write_skill(cfg, "pdf", "Use pdftotext.", description="Work with PDFs")
    write_plugin(cfg, "extras", CONTEXT_PLUGIN)
    with start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url, OPENROUTER_API_KEY=KEY) as c:
        c.session = create_session(c, isolated_home)
        yield c
    assert c.protocol_errors == [] and c.stderr == ""


def system_of(request) -> str:
    [first, *_] = request.json["messages"]
    assert first["role"] == "system"
    return first["content"]


@pytest.mark.slow
def test_the_parts_come_in_order(client, fake, isolated_home):
    ws = isolated_home / "ws"
    (ws / "AGENTS.md").write_text("Project rule.\n")
    fake.script("chat", fo.text(["ok"]))
    assert finished(run_turn(client, client.session["id"], "hi"))["status"] == "completed"
    skills, _ = discover_skills(isolated_home / ".kward" / "skills")
    assert system_of(fake.requests("chat")[0]) == "\n\n".join([
        BASE, "User instructions (AGENTS.md):\nUser rule.", f"Plugin context for {ws}", skills_prompt(skills),
        f"Project instructions ({ws}/AGENTS.md):\nProject rule."])
    assert "read_skill" in [t["function"]["name"] for t in fake.requests("chat")[0].json["tools"]]
    warnings = client.request("resources/startup", {"sessionId": client.session["id"]})["warnings"]
    assert [w["message"] for w in warnings] == ["Plugin extras prompt context failed: RuntimeError: context bug"]


@pytest.mark.slow
def test_agents_files_are_capped_and_read_again_after_edits(client, fake, isolated_home):
    ws, cfg = isolated_home / "ws", isolated_home / ".kward"
    (ws / "AGENTS.md").write_text("P" * (MAX_PROMPT_FILE + 10) + "TAIL")
    fake.script("chat", fo.text(["one"]))
    assert finished(run_turn(client, client.session["id"], "first"))["status"] == "completed"
    first = system_of(fake.requests("chat")[0])
    assert first.endswith("P" * 100 + "\n" + truncation_note()) and "TAIL" not in first

    (cfg / "AGENTS.md").write_text("User rule, edited by hand.\n")  # between turns
    fake.script("chat", fo.tool_call("read_file", json.dumps({"path": "AGENTS.md"}), call_id="r"),
                fo.tool_call("write_file", json.dumps({"path": "AGENTS.md", "content": "Edited by the agent.\n"}),
                             call_id="w"),
                fo.text(["done"]))
    assert finished(run_turn(client, client.session["id"], "edit it"))["status"] == "completed"
    before_read, before_write, after_write = [system_of(r) for r in fake.requests("chat")[1:]]
    assert "User rule, edited by hand." in before_read and "User rule.\n" not in before_read
    assert before_read == before_write and "TAIL" not in before_write
    assert after_write.endswith(f"Project instructions ({ws}/AGENTS.md):\nEdited by the agent.")  # within the turn


class Session:
    """What Resources needs of a session (kward.sessions.SessionHandle has more)."""

    def __init__(self, root: Path):
        self.workspace_root, self.id, self.name, self.path, self.persistent_id = str(root), "s1", None, "/p", "p"

    def entry_messages(self):
        return [{"role": "user", "content": "remember the colour"}]


def test_the_memory_block_goes_after_the_user_instructions(tmp_path):
    cfg = tmp_path / "cfg"
    (cfg / "AGENTS.md").parent.mkdir()
    (cfg / "AGENTS.md").write_text("User rule.")
    write_plugin(cfg, "context", 'def register(kward):\n    kward.prompt_context(lambda ctx: "From a plugin.")\n')
    calls = []

    def memory(session):
        calls.append(session.entry_messages()[-1]["content"])
        return "<kward_memory>\nCore Memories:\n- blue\n</kward_memory>"

    resources = Resources(cfg)
    session = Session(tmp_path)
    build = resources.instructions(session, lambda: memory(session))
    assert build() == "\n\n".join([BASE, "User instructions (AGENTS.md):\nUser rule.",
                                   "<kward_memory>\nCore Memories:\n- blue\n</kward_memory>", "From a plugin."])
    assert build() == build() and calls == ["remember the colour"]  # once per turn, with the turn's input
    assert "kward_memory" not in resources.instructions(session, lambda: 1 / 0)()  # a failing block is left out
    resources.shutdown()


@pytest.mark.slow
def test_read_skill_in_a_turn_reads_inside_the_skill_folder_only(kward, isolated_home):
    cfg = isolated_home / ".kward"
    write_skill(cfg, "pdf", "Use pdftotext.", description="PDFs")
    (cfg / "skills" / "pdf" / "forms.md").write_text("Forms guide.")
    (cfg / "AGENTS.md").write_text("secret user rules")
    k = kward([[tool("read_skill", {"name": "pdf"}, id="a"), tool("read_skill", {"name": "pdf", "path": "forms.md"},
                                                                  id="b"),
                tool("read_skill", {"name": "pdf", "path": "../../AGENTS.md"}, id="c"),
                tool("read_skill", {"name": "nope"}, id="d")], [text("read")]])
    _, events = k.run(k.session()["id"], "use the skill")
    check_turn_events(events, "completed")
    results = [e["payload"]["result"] for e in events if e["type"] == "toolResult"]
    assert [r["content"] for r in results] == [
        "---\ndescription: PDFs\n---\nUse pdftotext.", "Forms guide.",
        "Error: path outside the skill folder: ../../AGENTS.md", "Error: unknown skill: nope (available: pdf)"]
    assert [r["isError"] for r in results] == [False, False, True, True]


OBSERVER = '''
    import json, threading

    def register(kward):
        @kward.on_transcript_event
        def seen(event, ctx):
            with open("{out}", "a") as f:
                f.write(json.dumps({"event": event, "workspace": ctx.workspace_root}) + "\\n")

        @kward.on_transcript_event
        def broken(event, ctx):
            raise RuntimeError("observer bug")

        @kward.on_transcript_event
        def stuck(event, ctx):
            threading.Event().wait()
'''
OBSERVED = {"reasoningDelta": "reasoning_delta", "assistantDelta": "assistant_delta",
            "assistantMessage": "assistant_message", "toolCall": "tool_call", "toolResult": "tool_result",
            "answer": "answer"}


@pytest.mark.slow
def test_plugin_observers_see_the_turn_events_and_cannot_hold_it_up(kward, isolated_home):
    out = isolated_home / "observed.jsonl"
    write_plugin(isolated_home / ".kward", "watch", OBSERVER, out=out)
    from lib.scripts import reasoning

    k = kward([[reasoning("Think."), text("Reading "), tool("read_file", {"path": "a.txt"}, id="r")],
               [text("Done.")], [text("Again.")]], files={"a.txt": "alpha\n"})
    session = k.session()
    _, events = k.run(session["id"], "read a.txt")
    check_turn_events(events, "completed")
    expected = [(OBSERVED[e["type"]], e["payload"]) for e in events if e["type"] in OBSERVED]
    seen = wait_until(lambda: (lines := read_lines(out)) and lines[-1]["event"]["type"] == "answer" and lines,
                      what="the observer to see the answer")
    assert [(s["event"]["type"], {k_: v for k_, v in s["event"].items() if k_ not in ("type", "sessionId", "turnId")})
            for s in seen] == expected
    assert {(s["event"]["sessionId"], s["event"]["turnId"], s["workspace"]) for s in seen} == {
        (session["id"], events[0]["turnId"], str(k.ws))}
    _, again = k.run(session["id"], "again")  # the stuck observer stalls nothing
    check_turn_events(again, "completed")
    assert "observer bug" in (isolated_home / ".kward" / "logs" / "kward.log").read_text()
