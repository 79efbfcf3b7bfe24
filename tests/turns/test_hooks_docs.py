"""The worked examples of docs/hooks.md, run exactly as the doc shows them: each example's
script (the ```sh block after `<!-- example: <name> script <path> -->`) is saved at its
path in the workspace of a real `kward rpc` (Scripted provider) and made executable, its
config (the ```json block after `<!-- example: <name> config -->`) is config.json, and
real turns make the calls the example is about: the files on disk, the results the model
read (the session file) and the `hook/completed` notifications say it did what the doc
says."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lib.config_files import write_config
from lib.paths import REPO
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import text, tool

DOC = REPO / "docs" / "hooks.md"
MARKED = re.compile(r"^<!-- example: (\S+) (script|config)(?: (\S+))? -->\n```(\w+)\n(.*?)^```$", re.M | re.S)


def examples() -> dict[str, dict]:
    """{name: {"config": dict, "script": (relative path, text)}} as the doc marks them."""
    found: dict[str, dict] = {}
    for name, kind, path, language, body in MARKED.findall(DOC.read_text(encoding="utf-8")):
        example = found.setdefault(name, {})
        assert kind not in example, f"two {kind} blocks for example {name}"
        if kind == "config":
            assert language == "json" and not path, name
            example["config"] = json.loads(body)
        else:
            assert language == "sh" and path and body.startswith("#!/bin/sh\n"), name
            example["script"] = (path, body)
    return found


def start(kward, home, name, steps, files=None):  # noqa: F811
    """A kward whose config.json is example `name`'s config and whose workspace holds its
    script (executable) and `files`, and a session."""
    example = examples()[name]
    write_config(home / ".kward", example["config"])
    path, script = example["script"]
    k = kward(steps, files={path: script, **(files or {})})
    (k.ws / path).chmod(0o755)
    k.request("initialize", {"capabilities": {"experimentalApi": True}})  # (a run's exitStatus is experimental)
    return k, k.session()


def shell(command):
    return tool("run_shell_command", {"command": command})


def tool_results(k, session) -> list[str]:
    """The results the model read, from the session file."""
    return [m["content"] for m in k.messages(session) if m.get("role") == "tool"]


def completed(k) -> list[tuple[str, str, int | None]]:
    """(source, status, exit status) of every hook/completed, in order; each run was
    reported started first with the same id."""
    started = [n["run"]["id"] for n in k.notified("hook/started")]
    done = [n["run"] for n in k.notified("hook/completed")]
    assert [run["id"] for run in done] == started
    return [(run["source"], run["status"], run["exitStatus"]) for run in done]


def test_the_doc_marks_three_examples_each_with_its_script_and_the_combined_config_is_theirs():
    found = examples()
    assert sorted(found) == ["all", "block-rm", "format", "log-prompt"]
    merged: dict = {}
    for name in ("block-rm", "format", "log-prompt"):
        assert set(found[name]) == {"config", "script"}, name
        assert found[name]["script"][0].startswith(".kward-hooks/"), name
        for event, hooks in found[name]["config"]["hooks"].items():
            merged.setdefault(event, []).extend(hooks)
    assert found["all"] == {"config": {"hooks": merged}}


def test_block_rm_declines_rm_rf_outside_the_workspace_and_lets_rm_rf_build_run(kward, isolated_home, tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    k, s = start(kward, isolated_home, "block-rm",
                 [[shell(f"rm -rf {outside}")], [shell("rm -rf build")], [text("done")]],
                 files={"build/out.o": "object\n"})
    _, events = k.run(s["id"], "clean up")
    assert events[-1]["payload"]["status"] == "completed"
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert not (k.ws / "build").exists()
    declined, ran = tool_results(k, s)
    assert declined == ("Declined: blocked by hooks.beforeTool[0]: rm -r outside the workspace "
                        f"{k.ws.resolve()} is not allowed: {outside.resolve()}")
    assert not ran.startswith("Declined") and "hook-output" not in ran  # it printed nothing
    assert completed(k) == [("hooks.beforeTool[0]", "blocked", 2), ("hooks.beforeTool[0]", "completed", 0)]


def test_format_strips_trailing_blanks_after_a_write_and_an_edit_and_the_model_reads_what_it_did(
        kward, isolated_home):
    k, s = start(kward, isolated_home, "format", [
        [tool("write_file", {"path": "notes.txt", "content": "one  \ntwo\t\nthree\n"})],
        [tool("edit_file", {"path": "notes.txt", "edits": [{"old_text": "three", "new_text": "three   "}]})],
        [shell("echo untouched > plain.txt")],
        [text("done")]])
    _, events = k.run(s["id"], "write notes")
    assert events[-1]["payload"]["status"] == "completed"
    assert (k.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"
    wrote, edited, ran = tool_results(k, s)
    assert wrote.endswith('\n\n<hook-output source="hooks.afterTool[0]">\n'
                          "format.sh: removed trailing blanks from 2 line(s) of notes.txt\n</hook-output>")
    assert edited.endswith("format.sh: removed trailing blanks from 1 line(s) of notes.txt\n</hook-output>")
    assert "hook-output" not in ran  # a shell call: the hook's `tool` does not match
    assert completed(k) == [("hooks.afterTool[0]", "completed", 0)] * 2


def test_log_prompt_appends_each_prompt_and_adds_nothing_to_the_context(kward, isolated_home):
    k, s = start(kward, isolated_home, "log-prompt", [[text("one")], [text("two")]])
    prompts = ["first prompt", 'a "quoted" prompt\non two lines']
    for prompt in prompts:
        _, events = k.run(s["id"], prompt)
        assert events[-1]["payload"]["status"] == "completed"
    lines = (k.ws / ".kward-hooks" / "prompts.log").read_text().splitlines()
    assert len(lines) == 2
    for line, prompt in zip(lines, prompts):
        m = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (\S+) (.+)", line)
        assert m and m.group(1) == s["id"] and json.loads(m.group(2)) == prompt, line
    users = [m["content"] for m in k.messages(s) if m.get("role") == "user"]
    assert users == prompts  # what the model read: the input alone
    assert completed(k) == [("hooks.userPromptSubmit[0]", "completed", 0)] * 2
