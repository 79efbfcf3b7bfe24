"""The pure parts of the terminal faces: colour decisions, event rendering, option
parsing, --model, the command table, inline answers."""

import io

import pytest

from kward import cli
from kward.terminal import commands
from kward.terminal.render import TurnView, diff_stats, tool_label
from kward.terminal.style import ColorSettingError, Style, check_color_setting, wants_color
from kward.terminal.turn import ask_inline


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("env, tty, expected", [
    ({}, True, True),
    ({}, False, False),
    ({"TERM": "dumb"}, True, False),
    ({"NO_COLOR": "1"}, True, False),
    ({"NO_COLOR": ""}, True, True),  # empty counts as unset
    ({"FORCE_COLOR": "1"}, False, True),
    ({"FORCE_COLOR": "0"}, True, True),  # not forced: the terminal decides
    ({"FORCE_COLOR": "false"}, False, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),
    ({"CLICOLOR": "0"}, True, False),
    ({"KWARD_COLOR": "always", "NO_COLOR": "1"}, False, True),
    ({"KWARD_COLOR": "Never", "FORCE_COLOR": "1"}, True, False),
    ({"KWARD_COLOR": "auto"}, False, False),
])
def test_colour_decision(env, tty, expected):
    assert wants_color(Tty() if tty else io.StringIO(), env) is expected


def test_a_bad_kward_color_is_refused():
    check_color_setting({"KWARD_COLOR": "AUTO"})
    with pytest.raises(ColorSettingError, match="KWARD_COLOR must be one of auto, always, never, not 'sometimes'"):
        check_color_setting({"KWARD_COLOR": "sometimes"})


def test_diff_stats_and_tool_labels():
    diff = "--- a.py\n+++ a.py\n@@ -1,2 +1,3 @@\n-old\n+new\n+more\n context\n"
    assert diff_stats(diff) == (2, 1)
    truncated = diff + "... diff truncated to 8192 bytes; full diff stats: +120|-7. Use read_file to inspect"
    assert diff_stats(truncated) == (120, 7)
    assert tool_label("bash", {"command": "npm test\nnpm run lint"}) == "bash npm test"
    assert tool_label("edit", {"path": "src/a.py", "edits": []}) == "edit src/a.py"
    assert tool_label("search_files", {"pattern": "TODO", "path": "src"}) == "search_files TODO src"
    assert len(tool_label("bash", {"command": "x" * 500})) == 80


def _view():
    out, err = io.StringIO(), io.StringIO()
    return TurnView(out, err, Style(False), Style(False)), out, err


def test_the_view_keeps_the_answer_on_out_and_the_rest_on_side():
    view, out, err = _view()
    events = [("reasoningDelta", {"delta": "think"}), ("assistantDelta", {"delta": "Hel"}),
              ("assistantDelta", {"delta": "lo"}),
              ("toolCall", {"toolName": "write", "args": {"path": "a"}}),
              ("toolResult", {"toolName": "write", "args": {"path": "a"},
                              "result": {"isError": False, "content": "Wrote", "diff": "--- a\n+++ a\n+x\n"}}),
              ("toolResult", {"toolName": "bash", "args": {"command": "false"},
                              "result": {"isError": False, "content": "Exit status: 1\n"}}),
              ("toolResult", {"toolName": "read", "args": {"path": "b"},
                              "result": {"isError": True, "content": "Error: no such file: b"}}),
              ("modelRetry", {"attempt": 2, "maxAttempts": 3, "delaySeconds": 1, "error": "429"}),
              ("assistantDelta", {"delta": "Done"}), ("answer", {"content": "HelloDone"}),
              ("turnFinished", {"status": "completed"})]
    for kind, payload in events:
        view.event({"type": kind, "payload": payload})
    assert out.getvalue() == "Hello\nDone\n"
    assert err.getvalue() == ("think\n  * write a  ok +1 -0\n  * bash false  exit 1\n"
                              "  * read b  failed: Error: no such file: b\nretrying (2/3) in 1s: 429\n")


def test_an_answer_that_was_not_streamed_is_shown_and_a_cancel_is_said():
    view, out, err = _view()
    view.event({"type": "answer", "payload": {"content": "whole"}})
    view.event({"type": "turnFinished", "payload": {"status": "canceled"}})
    assert (out.getvalue(), err.getvalue()) == ("whole\n", "(canceled)\n")


def test_on_a_terminal_a_running_tool_shows_a_provisional_line():
    side = Tty()
    view = TurnView(side, side, Style(False), Style(False))
    view.event({"type": "assistantDelta", "payload": {"delta": "Looking"}})
    view.event({"type": "toolCall", "payload": {"toolName": "read", "args": {"path": "a"}}})
    view.event({"type": "toolResult", "payload": {"toolName": "read", "args": {"path": "a"},
                                                  "result": {"isError": False, "content": "x"}}})
    assert side.getvalue() == "Looking\n  * read a ...\r\x1b[K  * read a  ok\n"


@pytest.mark.parametrize("args, options, command, rest", [
    ([], {}, None, []),
    (["fix", "it"], {}, None, ["fix", "it"]),
    (["--model", "codex/gpt-5.4", "hi"], {"--model": "codex/gpt-5.4"}, None, ["hi"]),
    (["--working-directory=/tmp", "rpc"], {"--working-directory": "/tmp"}, "rpc", []),
    (["--", "--help", "me"], {}, None, ["--help", "me"]),
    (["-", "x"], {}, None, ["-", "x"]),
    (["fix", "--model", "x", "now"], {"--model": "x"}, None, ["fix", "now"]),  # options after the prompt too
    (["fix", "--", "--model", "x"], {}, None, ["fix", "--model", "x"]),
    (["-v", "ignored"], {"version": ""}, None, []),
    (["doctor", "--frob"], {}, "doctor", ["--frob"]),  # the command's own: parse_command
])
def test_option_parsing(args, options, command, rest):
    assert cli.parse(args) == cli.CommandLine(options, command, rest)


@pytest.mark.parametrize("command, args, parsed", [
    ("memory", ["list", "--all"], ["list", "--all"]),
    ("memory", ["add", "--", "--help", "x"], ["add", "--help", "x"]),
    ("memory", ["add", "x", "--help"], None),
    ("stats", ["tokens", "--bucket", "day", "--output=o.csv"], ["tokens", "--bucket", "day", "--output=o.csv"]),
    ("doctor", [], []),
    ("help", ["doctor"], ["doctor"]),
])
def test_command_parsing(command, args, parsed):
    assert cli.parse_command(command, args) == parsed


def test_model_maps_to_the_environment_of_the_server():
    assert cli.model_env("codex/gpt-5.4") == {"KWARD_PROVIDER": "codex", "OPENAI_MODEL": "gpt-5.4"}
    assert cli.model_env("OpenRouter/anthropic/claude") == {"KWARD_PROVIDER": "openrouter",
                                                           "OPENROUTER_MODEL": "anthropic/claude"}
    assert cli.model_env("OpenAICompatible") == {"KWARD_PROVIDER": "openai-compatible"}
    with pytest.raises(cli.UsageError, match="set openai_compat_model in config.json"):
        cli.model_env("openai-compatible/llama")
    with pytest.raises(cli.UsageError, match="unknown provider 'gpt-5.5'"):
        cli.model_env("gpt-5.5")


def test_the_command_table_is_one_place_that_features_extend():
    table = commands.table()
    assert list(table)[:4] == ["help", "exit", "quit", "new"]
    with pytest.raises(ValueError, match="/new is already registered"):
        commands.register("new")(lambda shell, arg: None)
    assert {line.split()[0] for line in commands.help_lines()} == {f"/{n}" for n in table}
    called = []
    commands.register("probe-x", "[what]", "a test command", available=lambda s: None if s.ok else "not now")(
        lambda shell, arg: called.append(arg))
    try:
        class Shell:
            ok = False
            errors: list = []
            server_commands: dict = {}  # commands/list, as fetched (none here)

            def error(self, text):
                self.errors.append(text)

        shell = Shell()
        commands.dispatch(shell, "/probe-x  some  thing ")
        shell.ok = True
        commands.dispatch(shell, "/probe-x  some  thing ")
        commands.dispatch(shell, "/nope")
        assert called == ["some  thing"]
        assert shell.errors == ["/probe-x is not available: not now",
                                "unknown command: /nope (type /help for the commands)"]
        assert "/probe-x [what]" in cli.help_text()
    finally:
        del commands.TABLE["probe-x"]


def test_inline_answers_by_number_text_or_dismissal():
    questions = [{"question": "Q1?", "header": "One", "options": [{"label": "a"}, {"label": "b"}]},
                 {"question": "Q2?", "header": "", "options": [{"label": "c"}, {"label": "d"}]}]
    written = []

    def reader(replies):
        it = iter(replies)
        return lambda prompt: next(it)

    assert ask_inline(questions, written.append, reader(["2", "my own"])) == [
        {"question": "Q1?", "answer": "b"}, {"question": "Q2?", "answer": "my own"}]
    assert "One: Q1?" in "".join(written) and "  1. a\n" in "".join(written)
    assert ask_inline(questions, written.append, reader(["1", "  "])) is None
    assert ask_inline(questions[:1], written.append, reader(["9"])) == [{"question": "Q1?", "answer": "9"}]


def test_skill_commands_of_the_server_run_as_turns_in_the_terminal():
    listed = {"commands": [{"name": "skill:pdf", "description": "PDFs", "source": "skill"},
                           {"name": "plan", "description": "", "source": "prompt"}]}

    class Client:
        def request(self, method, params, timeout=None):
            assert method == "commands/list"
            return listed

    class Shell:
        client, session_id, server_commands = Client(), "s", None
        turns: list = []
        errors: list = []

        def turn(self, text):
            self.turns.append(text)

        def error(self, text):
            self.errors.append(text)

    shell = Shell()
    commands.dispatch(shell, "/skill:pdf do X")
    assert shell.turns == ["/skill:pdf do X"] and shell.errors == []
    assert commands.server_help_lines(shell) == ["  /skill:pdf           PDFs (skill)", "  /plan                (prompt)"]
