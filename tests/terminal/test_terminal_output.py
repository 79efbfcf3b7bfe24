"""What a turn looks like on a pseudo-terminal: the answer's Markdown rendered as it
streams (and written as the model wrote it without colours), an edit's diff, a shell
call's last lines of output (and its output live while it runs), and the reasoning collapsed by `/reasoning hide`."""

import re

from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.pty_term import PROMPT, term  # noqa: F401 - fixture
from lib.scripts import delay, reasoning, text, tool

ANSWER = ("## Steps\n"
          "Read [the guide](https://example.org/guide) first.\n"
          "\n"
          "- install it\n"
          "  - with **pip**\n"
          "\n"
          "| tool | time |\n"
          "|------|-----:|\n"
          "| pytest | 3s |\n"
          "| mypy | 12s |\n"
          "\n"
          "```python\n"
          "print(\"hi\")  # **as is**\n"
          "```\n"
          "Done.\n")


def _streamed(answer, size=5):
    return [text(answer[i:i + size]) for i in range(0, len(answer), size)]


def test_a_streamed_markdown_answer_is_rendered_for_the_terminal(term):
    k = term([_streamed(ANSWER)], loop=True, NO_COLOR="")
    k.line("explain")
    out = k.expect(PROMPT).split("explain\n", 1)[1].split("Scripted/scripted |", 1)[0]  # the answer
    assert "```" not in out and "##" not in out and "|" not in out
    assert "Steps\n" in out and "Read the guide (https://example.org/guide) first." in out
    assert "\u2022 install it\n  \u25e6 with pip\n" in out
    assert "tool    time\n" + "\u2500" * 6 + "  " + "\u2500" * 4 + "\npytest    3s\nmypy     12s\n" in out  # aligned
    assert "\u2500\u2500 python\n  print(\"hi\")  # **as is**\nDone.\n" in out
    raw = k.raw.decode()
    assert "\x1b[36mprint(\"hi\")  # **as is**\x1b[0m" in raw  # the code style
    assert "\x1b[1;35mSteps\x1b[0m" in raw and "\x1b[2;4mhttps://example.org/guide\x1b[0m" in raw


def test_a_paragraph_is_on_screen_before_its_line_ends(term):
    k = term([[text("Streaming **works** now, word by word, "), delay(30), text("and never ends.\n")]], NO_COLOR="")
    k.line("stream")
    k.expect("Streaming works now, word by word,")  # while the delay holds the rest of the line
    assert "\x1b[1mworks\x1b[0m" in k.raw.decode("utf-8", "replace")  # rendered
    k.send("\x03")
    assert "(canceled)" in k.expect(PROMPT) and "never ends" not in k.text


def test_without_colours_the_answer_is_written_as_the_model_wrote_it(term):
    k = term([_streamed(ANSWER)], loop=True)  # NO_COLOR=1
    k.line("explain")
    out = k.expect(PROMPT)
    assert ANSWER in out
    assert "\x1b[36m" not in k.raw.decode()


def test_an_edit_shows_its_diff_capped_with_the_rest_counted(term, cli):
    (cli.ws / "a.txt").write_text("".join(f"keep {n}\n" for n in range(6)) + "alpha\n" + "tail\n")
    new = "\n".join(f"new {n}" for n in range(50))
    k = term([[tool("read_file", path="a.txt")],
              [tool("edit_file", path="a.txt", edits=[{"old_text": "alpha", "new_text": new}])], [text("edited")]],
             "--yes", NO_COLOR="")
    k.line("change it")
    out = k.expect(PROMPT)
    assert "edit a.txt  ok +50 -1\n    @@ -4,5 +4,54 @@\n     keep 3\n     keep 4\n     keep 5\n    -alpha\n" in out
    assert "    +new 0\n" in out and "    +new 34\n" in out and "new 35" not in out
    assert "    \u2026 16 more lines\n" in out and "--- a.txt" not in out and "+++ " not in out
    raw = k.raw.decode()
    assert "\x1b[32m+new 0\x1b[0m" in raw and "\x1b[31m-alpha\x1b[0m" in raw


def test_a_shell_call_shows_its_command_and_last_lines_of_output(term):
    command = "printf 'line %s\\n' 1 2 3 4 5 6 7 8 9 10 11 12; echo oops >&2; exit 3"
    k = term([[tool("run_shell_command", command=command)], [text("ran")]], "--yes")
    k.line("run it")
    out = k.expect(PROMPT)
    shown = re.search(r"bash printf .*  exit 3\n((?:    .*\n)+)", out)
    assert shown, out
    assert shown.group(1) == "".join(f"    line {n}\n" for n in range(7, 13)) + "    STDERR:\n    oops\n"


def test_a_running_command_shows_its_output_live(term):
    k = term([[tool("run_shell_command", command="printf 'live-%s\\n' one two; sleep 30", timeout_seconds=60)],
              [text("unreached")]], NO_COLOR="")
    k.line("run it")
    k.expect("[e]dit command: ")  # (asked first: the approval mode is ask)
    k.line("y")
    shown = k.expect("live-two")  # under the tool line while the command still runs (toolUpdate)
    assert "bash printf" in shown and "live-one" in shown
    k.send("\x03")
    assert "(canceled)" in k.expect(PROMPT)


def test_reasoning_hide_collapses_the_reasoning_to_one_line(term):
    k = term([[reasoning("I should "), reasoning("look at the files first."), text("Answer.")]], loop=True)
    k.line("/reasoning hide")
    assert "reasoning: hidden, one line per turn (/reasoning show to see it)" in k.expect(PROMPT)
    k.line("think")
    out = k.expect(PROMPT)
    assert "thinking\u2026 (7 words)\n\nAnswer.\n" in out and "look at the files" not in out
    k.line("/reasoning show")
    assert "reasoning: shown in full" in k.expect(PROMPT)
    k.line("again")
    assert "I should look at the files first.\n\nAnswer." in k.expect(PROMPT)


def test_one_shot_into_pipes_keeps_the_answer_byte_for_byte_and_the_tool_lines_plain(cli):
    (cli.ws / "a.txt").write_text("one\n")
    cli.script([[tool("read_file", path="a.txt")],
                [tool("edit_file", path="a.txt", edits=[{"old_text": "one", "new_text": "\x1b[31mtwo"}])],
                [tool("run_shell_command", command="printf 'a\\rb\\033[1mc\\n'")],
                _streamed(ANSWER)])
    proc = cli.run("go")
    assert (proc.returncode, proc.stdout.decode()) == (0, ANSWER), proc.stderr
    err = proc.stderr.decode()
    assert "  \u2022 edit a.txt  ok +1 -1\n    @@ -1,1 +1,1 @@\n    -one\n    +two\n" in err
    assert "  \u2022 bash printf 'a\\rb\\033[1mc\\n'  ok\n    bc\n" in err
    assert "\x1b" not in err and "\r" not in err  # neither kward's escapes nor those of the file or command
