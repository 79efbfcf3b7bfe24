"""docs/plugins.md's complete example plugin, loaded as written by a real `kward rpc`:
its commands (through commands/run and as turns), its prompt context in the request the
model gets (fake OpenRouter), and its observer counting the tools of a turn."""

import json
import re

import pytest

from lib import fake_openrouter as fo
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import create_session, run_turn, start_kward
from lib.paths import REPO
from lib.turn_events import finished, payload
from lib.waiting import wait_until

DOC = REPO / "docs" / "plugins.md"


def example_plugin() -> str:
    text = DOC.read_text()
    section = text[text.index("## A complete example"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_the_documented_example_plugin_works_as_described(isolated_home):
    plugins = isolated_home / ".kward" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "notes.py").write_text(example_plugin())
    with FakeOpenRouter() as fake, start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url,
                                               OPENROUTER_API_KEY="sk-or-v1-doc0123456789abcdef") as k:
        session = create_session(k, isolated_home)
        listed = k.request("commands/list", {"sessionId": session["id"]})["commands"]
        assert [(c["name"], c["argumentHint"], c["executable"]) for c in listed] == [
            ("note", "<text>", True), ("notes", "", True)]
        assert k.request("resources/startup", {"sessionId": session["id"]})["sections"][3] == {
            "name": "Plugins", "items": ["/note", "/notes"]}
        assert k.request("commands/run", {"sessionId": session["id"], "name": "notes"})["result"] == "No notes yet."
        noted = k.request("commands/run", {"sessionId": session["id"], "name": "note",
                                           "arguments": "the tests run with `make check`"})
        assert noted == {"command": "note", "output": [], "result": "Noted. This workspace has 1 note(s)."}
        events = run_turn(k, session["id"], "/notes")
        assert finished(events)["status"] == "completed"
        assert payload(events, "answer") == {"content": "- the tests run with `make check`"}
        assert fake.requests("chat") == []  # plugin commands never ask the model

        fake.script("chat", fo.tool_call("read_file", json.dumps({"path": "a.txt"}), call_id="r"), fo.text(["ok"]))
        assert finished(run_turn(k, session["id"], "run the tests"))["status"] == "completed"
        system = fake.requests("chat")[0].json["messages"][0]["content"]
        assert "Notes the user asked you to keep in mind:\n- the tests run with `make check`" in system
        log = plugins / "notes-tools.log"
        wait_until(lambda: log.exists() and log.read_text() == "read\n", what="the observer to count the tool")
        stored = json.loads((plugins / "notes.json").read_text())
        assert stored == [{"workspace": str(isolated_home / "ws"), "text": "the tests run with `make check`"}]
        assert k.protocol_errors == [] and k.stderr == ""
