"""/memory and /stats RANGE in interactive mode on a pseudo-terminal, and `kward memory`."""

import json

import pytest

from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.pty_term import PROMPT, term  # noqa: F401 - fixture
from lib.scripts import text


def test_memory_commands_in_an_interactive_session(term, cli):
    k = term([[text("sure")]], loop=True)
    k.line("/memory")
    assert "Memory: disabled; auto-summary: disabled" in k.expect(PROMPT)
    k.line("/memory enable")
    assert "Memory enabled." in k.expect(PROMPT)
    k.line('/memory core "Answer in English"')
    assert "Added core memory core_001." in k.expect(PROMPT)
    k.line("/memory add we deploy with make ship")
    assert "Added soft memory soft_001." in k.expect(PROMPT)
    k.line("/memory list")
    out = k.expect(PROMPT)
    assert "Global Core Memories:\n- core_001 [global] Answer in English" in out
    assert "Workspace Core Memories:\n- none" in out and "- soft_001 [workspace:" in out
    k.line("how do we deploy?")
    k.expect(PROMPT)
    k.line("/memory why")
    out = k.expect(PROMPT)
    assert "- core_001 (core, score 1.0)" in out and "- soft_001 (soft, score 0.8): scope match; text overlap: deploy" in out
    k.line("Remember this: staging is on port 8443")
    k.expect(PROMPT)
    k.line("/memory summarize")
    assert "Learned 1 soft memory." in k.expect(PROMPT)
    k.line("/memory forget soft_001")
    assert "Forgot soft_001." in k.expect(PROMPT)
    k.line("/memory promote soft_404")
    assert "Unknown active soft memory or workspace core memory: soft_404" in k.expect(PROMPT)
    k.line("/memory frobnicate")
    assert "Usage: /memory enable|disable|auto-summary" in k.expect(PROMPT)
    k.line("/exit")
    assert k.wait() == 0
    soft = [json.loads(line) for line in (cli.config_dir / "memory" / "soft.jsonl").read_text().splitlines()]
    assert [(m["text"], m["status"]) for m in soft] == [("[forgotten]", "forgotten"),
                                                       ("Staging is on port 8443", "active")]


def test_stats_with_a_range_shows_telemetry_and_without_one_the_session(term):
    k = term([[text("hello")]], loop=True, KWARD_LOGGING="1", KWARD_LOGGING_TOKENS="1", KWARD_LOGGING_PERFORMANCE="1")
    k.line("hi")
    k.expect(PROMPT)
    k.line("/stats")
    assert "messages   1 from you, 1 answers" in k.expect(PROMPT)
    k.line("/stats 1 day")
    out = k.expect(PROMPT)
    assert "Stats for 1 day (" in out and "Enabled categories: tokens, performance" in out
    assert "model usage events: 1" in out and "  turn: count=1" in out
    k.line("/stats 3 eons")
    assert "Invalid range: '3 eons'. Usage: [N minutes" in k.expect(PROMPT)
    k.line("/exit")
    assert k.wait() == 0


@pytest.mark.slow
def test_kward_memory_on_the_command_line(cli):
    assert cli.run("memory", "enable").stdout == b"Memory enabled.\n"
    assert cli.run("memory", "add", "we", "use", "uv").stdout == b"Added soft memory soft_001.\n"
    listed = cli.run("memory", "list").stdout.decode()
    assert "Workspace Soft Memories:\n- soft_001 [workspace:" in listed and listed.endswith("] We use uv\n")
    assert json.loads(cli.run("memory", "inspect").stdout)["soft"][0]["id"] == "soft_001"
    assert cli.run("memory", "why").stdout == b"No memory retrieval has run yet.\n"
    assert cli.run("memory", "forget", "soft_001").stdout == b"Forgot soft_001.\n"
    assert cli.run("memory", "forget", "soft_001").stdout == b"No memory found for soft_001.\n"
    for args, code in ((["memory", "frob"], 2), (["memory", "add"], 2), (["memory", "summarize"], 2),
                       (["memory", "relax", "core_404"], 1)):
        proc = cli.run(*args)
        assert proc.returncode == code and proc.stdout == b"" and proc.stderr, args
