"""The pieces of kward/resources on their own: front matter, capped and cached reads, slash
parsing, template and skill discovery, read_skill confinement, bounded plugin calls,
read-only copies, observers that misbehave, and the names the catalog refuses."""

import os
import threading
from pathlib import Path

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled, PluginFailed, PluginTimeout
from kward.resources import bounded, catalog, observers, plugins, prompts, skills, system_prompt, text
from lib.resources_helpers import (
    HELLO, NO_REGISTER, RAISES_AT_LOAD, SYNTAX_ERROR, write_plugin, write_prompt, write_skill,
)
from lib.waiting import wait_until


def test_front_matter_fields_and_body():
    doc = text.decode(b'\xef\xbb\xbf---\r\ndescription: "Plan it: well"\r\nargument-hint: <what> # a comment\r\n'
                      b"  nested: ignored\r\nlist:\r\n  - a\r\n---\r\nBody $ARGUMENTS\r\n")
    fields, body = text.split_front_matter(doc)
    assert fields == {"description": "Plan it: well", "argument-hint": "<what>", "list": ""}
    assert body == "Body $ARGUMENTS\n"
    assert text.split_front_matter("---\nno end\n") == ({}, "---\nno end\n")
    assert text.split_front_matter("plain\n---\n") == ({}, "plain\n---\n")


def test_capped_reads_and_the_stat_keyed_cache(tmp_path):
    small = tmp_path / "a.md"
    small.write_text("  hello  \n")
    assert text.read_capped(small) == "hello"
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * text.MAX_PROMPT_FILE + b"TAIL")
    got = text.read_capped(big)
    assert got.startswith("x" * 100) and "TAIL" not in got and got.endswith(text.truncation_note())
    exact = tmp_path / "exact.md"
    exact.write_bytes(b"y" * text.MAX_PROMPT_FILE)
    assert text.read_capped(exact) == "y" * text.MAX_PROMPT_FILE
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    assert text.read_capped(fifo) is None  # refused without blocking on the FIFO
    assert text.read_capped(tmp_path / "missing.md") is None and text.read_capped(tmp_path) is None

    cache = text.FileCache()
    assert cache.read(small) == "hello"
    small.write_text("  world  \n")  # same size: the mtime/ctime change says it changed
    os.utime(small, ns=(1, 1))
    assert cache.read(small) == "world"
    small.unlink()
    assert cache.read(small) is None


@pytest.mark.parametrize("typed, parsed", [
    ("/plan fix the bug", ("plan", "fix the bug")), ("/plan", ("plan", "")), ("/plan\nline two", ("plan", "line two")),
    ("/a_b-1  x ", ("a_b-1", "x")), ("/usr/bin/env", None), ("/", None), ("/-x", None), ("plan", None),
    (" /plan", None), ("/skill:pdf", None),
])
def test_slash_input(typed, parsed):
    assert prompts.parse_slash(typed) == parsed


def test_prompt_discovery_skips_bad_reserved_empty_and_oversized_templates(tmp_path):
    write_prompt(tmp_path, "plan", "Plan: $ARGUMENTS\n\n", description="Plan a change", argument_hint="<what>")
    write_prompt(tmp_path, "plain", "Just text")
    write_prompt(tmp_path, "-dash", "x")
    write_prompt(tmp_path, "exit", "x")
    write_prompt(tmp_path, "empty", "\n", description="nothing")
    (tmp_path / "prompts" / "huge.md").write_text("x" * (prompts.MAX_TEMPLATE_BYTES + 1))
    (tmp_path / "prompts" / "dir.md").mkdir()
    (tmp_path / "prompts" / "notes.txt").write_text("not a template")
    taken: set[str] = set()
    found, warnings = prompts.discover_prompts(tmp_path / "prompts", taken)
    assert [(t.command, t.description, t.argument_hint) for t in found] == [
        ("plain", "", ""), ("plan", "Plan a change", "<what>")]
    assert found[1].expand("  fix it ") == "Plan: fix it" and taken == {"plain", "plan"}
    reasons = {Path(w.path).name: w.message for w in warnings}
    assert set(reasons) == {"-dash.md", "exit.md", "empty.md", "huge.md"}
    assert "built-in command" in reasons["exit.md"] and "64 KiB" in reasons["huge.md"]
    assert prompts.discover_prompts(tmp_path / "missing", set()) == ([], [])


def test_every_terminal_command_is_reserved():
    from kward.terminal.commands import table

    assert set(table()) <= prompts.RESERVED


def test_skill_discovery_names_duplicates_and_missing_files(tmp_path):
    write_skill(tmp_path, "a-pdf", "Use pdftotext.", name="pdf", description="Work with PDFs")
    write_skill(tmp_path, "b-pdf", "Other.", name="pdf", description="Duplicate")
    write_skill(tmp_path, "sql", "Write SQL.")
    write_skill(tmp_path, "weird", "x", name="bad name")
    (tmp_path / "skills" / "empty").mkdir()
    found, warnings = skills.discover_skills(tmp_path / "skills")
    assert [(s.name, s.description) for s in found] == [("pdf", "Work with PDFs"), ("sql", "")]
    assert sorted(Path(w.path).parent.name for w in warnings) == ["b-pdf", "empty", "weird"]
    text_ = skills.skills_prompt(found)
    assert text_.startswith("Configured skills") and "read_skill" in text_
    assert text_.endswith("Available skills:\n- pdf: Work with PDFs\n- sql")


def test_read_skill_stays_inside_the_skill_folder(tmp_path):
    write_skill(tmp_path, "pdf", "Main text.", description="d")
    folder = tmp_path / "skills" / "pdf"
    (folder / "ref").mkdir()
    (folder / "ref" / "notes.md").write_text("Notes.")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", folder / "leak.txt")
    os.symlink(tmp_path, folder / "up")
    os.symlink("ref/notes.md", folder / "alias.md")
    (folder / "big.md").write_bytes(b"x" * (skills.MAX_SKILL_FILE + 1))
    (folder / "bin.dat").write_bytes(b"a\0b")
    [skill], _ = skills.discover_skills(tmp_path / "skills")
    assert skills.read_skill_file(skill, "SKILL.md").endswith("Main text.")
    assert skills.read_skill_file(skill, "ref/../ref/notes.md") == "Notes."
    assert skills.read_skill_file(skill, "alias.md") == "Notes."  # a link that stays inside
    assert skills.read_skill_file(skill, str(folder / "ref" / "notes.md")) == "Notes."
    for path, words in [("../../secret.txt", "outside the skill folder"), ("leak.txt", "outside the skill folder"),
                        ("up/secret.txt", "outside the skill folder"), (str(tmp_path / "secret.txt"), "outside"),
                        ("ref", "not a file"), ("big.md", "too large"), ("bin.dat", "binary"),
                        ("nope.md", "no such file"), ("", "not a file")]:
        with pytest.raises(ValueError, match=words):
            skills.read_skill_file(skill, path)


def test_read_skill_as_a_tool(tmp_path):
    from kward.tools.base import ToolContext
    from kward.tools.registry import default_registry

    write_skill(tmp_path, "pdf", "Main text.", description="d")
    found, _ = skills.discover_skills(tmp_path / "skills")
    registry = default_registry().with_specs(skills.read_skill_spec(lambda: {s.name: s for s in found}))
    ctx = ToolContext(workspace_root=tmp_path)
    assert registry.run("read_skill", {"name": "pdf"}, ctx).content.endswith("Main text.")
    missing = registry.run("read_skill", {"name": "nope"}, ctx)
    assert missing.is_error and missing.content == "Error: unknown skill: nope (available: pdf)"
    assert registry.run("read_skill", {"name": "pdf", "path": "../x"}, ctx).content == \
        "Error: path outside the skill folder: ../x"
    assert registry.run("read_skill", {}, ctx).content == "Error: name is required"
    assert "read_skill" not in default_registry().names(True)


def test_bounded_calls_return_raise_time_out_and_cancel():
    assert bounded.run_bounded(lambda a, b: a + b, (1, 2), timeout=5, what="add") == 3
    with pytest.raises(PluginFailed, match="Plugin x failed: KeyError: 'k'") as failed:
        bounded.run_bounded(lambda: {}["k"], timeout=5, what="Plugin x", data={"plugin": "x"})
    assert failed.value.reason == "plugin_failed" and isinstance(failed.value.__cause__, KeyError)
    assert failed.value.data == {"plugin": "x", "exception": "KeyError"}
    with pytest.raises(PluginFailed, match="SystemExit"):
        bounded.run_bounded(lambda: exit(3), timeout=5, what="exit")
    release = threading.Event()
    stuck = bounded.Stuck()
    for _ in range(bounded.MAX_STUCK):
        with pytest.raises(PluginTimeout, match="did not finish within 0.05 s") as late:
            bounded.run_bounded(release.wait, timeout=0.05, what="w", stuck=stuck)
        assert late.value.reason == "plugin_timeout" and late.value.data["timeoutSeconds"] == 0.05
    assert stuck.count == bounded.MAX_STUCK
    with pytest.raises(PluginTimeout, match="4 earlier calls of its plugin never returned"):
        bounded.run_bounded(lambda: 1, timeout=5, what="w", stuck=stuck)
    release.set()  # the abandoned calls end: the plugin may run again
    wait_until(lambda: stuck.count == 0, what="abandoned calls to end")
    assert bounded.run_bounded(lambda: 1, timeout=5, what="w", stuck=stuck) == 1
    token = CancelToken()
    threading.Timer(0.05, token.cancel).start()
    with pytest.raises(Canceled):
        bounded.run_bounded(threading.Event().wait, timeout=30, what="c", cancel=token)


def test_freeze_makes_a_read_only_deep_copy():
    original = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    frozen = bounded.freeze(original)
    assert frozen["content"][0]["text"] == "hi"
    with pytest.raises(TypeError):
        frozen["role"] = "x"
    with pytest.raises(TypeError):
        frozen["content"][0]["text"] = "x"
    with pytest.raises(TypeError):
        frozen.update(role="x")
    original["content"][0]["text"] = "changed"
    assert frozen["content"][0]["text"] == "hi"
    import copy
    import json

    assert json.loads(json.dumps(frozen)) == {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    thawed = copy.deepcopy(frozen)
    thawed["content"][0]["text"] = "mine"  # a deep copy is the plugin's own, plain data
    assert type(thawed) is dict and frozen["content"][0]["text"] == "hi"


def test_observers_that_raise_or_block_never_hold_up_the_emitter():
    seen, emitted = [], []
    gate = threading.Event()

    def good(event, ctx):
        seen.append(event["type"])

    def bad(event, ctx):
        raise RuntimeError("observer bug")

    def stuck(event, ctx):
        gate.wait()

    watchers = [observers.Observer("p", good), observers.Observer("p", bad), observers.Observer("p", stuck, 5)]
    emit = observers.observing(lambda t, p: emitted.append(t), watchers, ctx=None, session_id="s", turn_id="t",
                               fields=lambda type_, payload: payload)  # the payloads are the fields already
    for _ in range(20):  # more than the stuck observer's queue holds
        emit("assistantDelta", {"delta": "x"})
    emit("turnQueued", {})  # not an observed type
    emit("answer", {"content": "done"})
    assert len(emitted) == 22  # every event was emitted, none waited for an observer
    wait_until(lambda: len(seen) == 21, what="the good observer")
    assert seen == ["assistant_delta"] * 20 + ["answer"]
    wait_until(lambda: watchers[1].failures == 21, what="the raising observer")
    assert watchers[2].dropped >= 21 - 5 - 1  # its queue filled up while it was stuck
    gate.set()
    for w in watchers:
        w.stop()


def test_plugin_commands_with_bad_reserved_or_taken_names_are_skipped(tmp_path):
    write_prompt(tmp_path, "plan", "Plan it")
    write_plugin(tmp_path, "names", '''
        def register(kward):
            for name in ("ok", "plan", "exit", "bad name", "ok"):
                kward.command(name)(lambda args, ctx: name)
    ''')
    write_plugin(tmp_path, "later", 'def register(kward):\n    kward.command("ok")(lambda a, c: "later")\n')
    loaded = catalog.load_catalog(tmp_path, timeout=5)
    try:
        assert list(loaded.commands) == ["ok"] and loaded.commands["ok"].plugin.name == "later"  # name order
        messages = [w.message for w in loaded.warnings]
        assert messages[:2] == ["Plugin names: command /ok skipped: the name is already taken",
                                "Plugin names: command /plan skipped: the name is already taken"]
        assert messages[2] == "Plugin names: command /exit skipped: it is a built-in command"
        assert messages[3].startswith("Plugin names: command /bad name skipped: the name must")
        assert messages[4:] == ["Plugin names: command /ok skipped: the name is already taken"]
        assert loaded.resolve("/plan now").kind == "prompt" and loaded.resolve("/ok x").kind == "plugin"
        assert loaded.resolve("/ok x", has_attachments=True).kind == "literal"
        assert loaded.resolve("/unknown x") == catalog.Plan("literal", "/unknown x")
    finally:
        loaded.close()


def test_plugins_load_in_parallel_and_failures_become_warnings(tmp_path):
    write_plugin(tmp_path, "hello", HELLO)
    write_plugin(tmp_path, "syntax", SYNTAX_ERROR)
    write_plugin(tmp_path, "raises", RAISES_AT_LOAD)
    write_plugin(tmp_path, "noreg", NO_REGISTER)
    write_plugin(tmp_path, "pkg", "from . import helper\ndef register(kward):\n"
                                  "    kward.command('pkg')(lambda a, c: helper.VALUE)\n", folder=True)
    (tmp_path / "plugins" / "pkg" / "helper.py").write_text("VALUE = 'from the helper'\n")
    write_plugin(tmp_path, "_private", RAISES_AT_LOAD)
    loaded, warnings = plugins.load_plugins(tmp_path / "plugins", timeout=10)
    assert [p.name for p in loaded] == ["hello", "pkg"]
    assert [c[0] for c in loaded[0].commands] == ["hi", "peek", "quiet"]
    assert loaded[1].commands[0][3](None, None) == "from the helper"
    messages = {Path(w.path).stem: w.message for w in warnings}
    assert messages == {
        "noreg": "Plugin noreg failed to load: AttributeError: the plugin defines no register(kward) function",
        "raises": "Plugin raises failed to load: RuntimeError: no luck at import",
        "syntax": messages["syntax"]}
    assert messages["syntax"].startswith("Plugin syntax failed to load: SyntaxError:")
    import sys

    assert not [m for m in sys.modules if "noreg" in m or "_raises" in m]  # failed modules are forgotten
    for plugin in loaded:
        plugins.forget_module(plugin.module)


def test_the_registrar_closes_when_register_returns():
    registrar = plugins.Registrar("p")
    registrar.command("x")(lambda a, c: None)
    assert len(registrar.close()[0]) == 1
    with pytest.raises(RuntimeError, match="registration is over"):
        registrar.command("y")(lambda a, c: None)
    with pytest.raises(TypeError):
        plugins.Registrar("p").prompt_context("not callable")


def test_capped_parts_and_the_bundled_base_prompt():
    assert system_prompt.base_prompt().startswith("You are Kward")
    assert system_prompt.capped("  x  ") == "x" and system_prompt.capped("") is None
    long = "é" * text.MAX_PROMPT_FILE
    cut = system_prompt.capped(long)
    assert len(cut.split("\n")[0].encode()) <= text.MAX_PROMPT_FILE and cut.endswith(text.truncation_note())


@pytest.mark.slow
def test_a_blocking_plugin_load_is_bounded(tmp_path):
    write_plugin(tmp_path, "hello", HELLO)
    write_plugin(tmp_path, "stuck", "import threading\nthreading.Event().wait()\n")
    loaded, warnings = plugins.load_plugins(tmp_path / "plugins", timeout=0.3)
    assert [p.name for p in loaded] == ["hello"]
    [warning] = warnings
    assert warning.message.startswith("Plugin stuck did not finish loading within 0.3 s; it was skipped")
    plugins.forget_module(loaded[0].module)


def test_the_plugin_timeout_setting():
    from kward.config.store import validate_values
    from kward.errors import InvalidParams
    from kward.config.settings import resolve_settings

    assert resolve_settings({}, {}).plugins.command_timeout_seconds == 30.0
    assert resolve_settings({"plugins": {"command_timeout_seconds": 0.5}}, {}).plugins.command_timeout_seconds == 0.5
    bad = resolve_settings({"plugins": {"command_timeout_seconds": 0}}, {})
    assert bad.plugins.command_timeout_seconds == 30.0
    assert bad.warnings == ("config.json: ignoring plugins.command_timeout_seconds: must be a number of seconds "
                            "from 0.05 to 3600",)
    with pytest.raises(InvalidParams, match="command_timeout_seconds must be a number of seconds") as refused:
        validate_values({"plugins": {"command_timeout_seconds": "soon"}})
    assert refused.value.reason == "invalid_config"


def test_skill_names_are_at_most_64_characters_and_the_skills_list_is_capped(tmp_path):
    from kward.resources.catalog import Catalog
    from kward.resources.text import MAX_PROMPT_FILE, truncation_note

    write_skill(tmp_path, "a" * 64, "ok", description="longest name")
    write_skill(tmp_path, "b" * 65, "too long", description="over")
    found, warnings = skills.discover_skills(tmp_path / "skills")
    assert [s.name for s in found] == ["a" * 64]
    [warning] = warnings
    assert "at most 64 characters" in warning.message
    many = [skills.Skill(name=f"s{i:04}", description="d" * 300, folder="/f", path="/f/SKILL.md") for i in range(200)]
    listed = Catalog(skills=tuple(many)).skills_text
    assert listed is not None and len(listed.encode()) <= MAX_PROMPT_FILE + len(truncation_note()) + 1
    assert listed.endswith(truncation_note()) and listed.startswith("Configured skills")


def test_progress_goes_to_the_sink_as_lines_until_the_command_ended():
    from kward.resources.context import Output, PluginContext

    class Sink:
        def __init__(self):
            self.fed: list[tuple[str, str, bool]] = []

        def feed_text(self, stream, text, *, flush=True):
            self.fed.append((stream, text, flush))

        def poll(self):
            return None

    sink = Sink()
    output = Output(sink)
    ctx = PluginContext(workspace_root="/w", output=output)
    assert not output.arrived.is_set()
    ctx.progress("step 1")
    assert output.arrived.is_set()  # what wakes the waiting thread to publish it
    ctx.progress("step 2\n")
    ctx.progress(3)
    assert output.close() == ()  # progress is not output
    ctx.progress("late")
    # fed without publishing: the plugin's thread never waits for the client
    assert sink.fed == [("stdout", "step 1\n", False), ("stdout", "step 2\n", False), ("stdout", "3\n", False)]
    PluginContext(workspace_root="/w").progress("nowhere")  # outside a command: dropped
    silent = Output()
    PluginContext(workspace_root="/w", output=silent).progress("no sink")
    assert silent.close() == ()


def test_the_waiting_thread_polls_whenever_woken_and_when_poll_asks():
    """run_bounded calls `poll` on the caller's thread while the function runs: at once,
    each time `wake` is set (what `ctx.progress` does) and when the time it returned passed."""
    wake, release, seen = threading.Event(), threading.Event(), threading.Event()
    polled: list[str] = []
    fed: list[str] = []

    def poll():
        polled.append(threading.current_thread().name)
        if fed:
            seen.set()  # the fed text was looked at while the function still runs
        return None if fed else 30.0

    def fn():
        fed.append("line")
        wake.set()
        assert seen.wait(10)
        release.wait(10)
        return "done"

    result: list[str] = []
    waiter = threading.Thread(target=lambda: result.append(bounded.run_bounded(
        fn, timeout=30, what="p", poll=poll, wake=wake)), name="waiter")
    waiter.start()
    assert seen.wait(10) and not result  # polled before the function returned
    release.set()
    waiter.join(10)
    assert result == ["done"] and set(polled) == {"waiter"} and len(polled) >= 2


def test_poll_times_its_next_call():
    calls: list[int] = []
    release = threading.Event()

    def poll():
        calls.append(1)
        if len(calls) == 3:
            release.set()  # called again twice, on its own timing: the function is still blocked
        return 0.001

    assert bounded.run_bounded(lambda: release.wait(10) and "ok", timeout=30, what="p", poll=poll) == "ok"
    assert len(calls) >= 3
