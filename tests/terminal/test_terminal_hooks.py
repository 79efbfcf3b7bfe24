"""The terminal shows each command hook run of a turn as one line (`hook/completed`): the
real `kward` on a pseudo-terminal and in one-shot mode, the scripted model, real hook
commands (a `beforeTool` one blocking a shell call with a reason on stderr that carries an
escape sequence, an `afterTool` one that succeeds); and the line of each status over
in-memory streams."""

import io
import re

from kward.terminal.render import TurnView
from kward.terminal.style import Style
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.config_files import write_config
from lib.pty_term import PROMPT, term  # noqa: F401 - fixture
from lib.scripts import text, tool

BLOCK = "printf '\\033[31mno shell here\\033[0m\\nsecond line\\n' >&2; exit 2"
HOOKS = {"hooks": {"beforeTool": [{"tool": "bash", "command": BLOCK}],
                   "afterTool": [{"tool": "write", "command": "echo formatted"}],
                   "turnEnd": [{"command": "echo bye >&2; exit 3"}]}}
STEPS = [[tool("run_shell_command", command="touch ran.txt")], [tool("write_file", path="w.txt", content="w\n")],
         [text("all done")]]
BLOCKED = "hook hooks.beforeTool[0]  blocked ("
REASON = "ms): no shell here"
OK = "hook hooks.afterTool[0]  ok ("
FAILED = re.compile(r"hook hooks\.turnEnd\[0\]  failed \(exit status 3, \d+ ms\): bye\n")


def test_each_run_is_one_line_on_the_terminal_and_the_hook_s_escapes_are_not_passed_through(term, cli):
    write_config(cli.config_dir, HOOKS)
    k = term(STEPS, "--yes")
    k.line("go")
    out = k.expect(PROMPT)
    assert "all done" in out
    assert out.count(BLOCKED) == 1 and out.count(REASON) == 1 and out.count(OK) == 1
    assert out.index(BLOCKED) < out.index("bash touch ran.txt  failed") < out.index(OK) \
        < out.index("write w.txt  ok") < out.index("all done")  # each in order with the tool lines
    assert len(FAILED.findall(out.split("all done")[1])) == 1
    assert "second line" not in out.split(BLOCKED)[1].split("\n")[0]  # one line
    assert b"\x1b[31m" not in k.raw and b"\x1b[0m" not in k.raw  # (NO_COLOR: kward writes no colour either)
    assert "kward: warning: hook" not in out  # (the run's log record goes to the log file only)
    assert not (cli.ws / "ran.txt").exists() and (cli.ws / "w.txt").read_text() == "w\n"


def test_one_shot_mode_shows_the_lines_on_stderr(cli):
    write_config(cli.config_dir, HOOKS)
    cli.script(STEPS)
    proc = cli.run("go")
    assert (proc.returncode, proc.stdout) == (0, b"all done\n"), proc.stderr
    err = proc.stderr.decode()
    assert err.count(BLOCKED) == 1 and err.count(REASON) == 1 and err.count(OK) == 1
    assert len(FAILED.findall(err)) == 1 and err.endswith("bye\n")  # (the answer on stdout ended first)
    assert "\x1b" not in err and "kward: warning: hook" not in err  # (its log record goes to the file only)
    assert "hook hooks.beforeTool[0] (hook-1) blocked in " in (cli.config_dir / "logs" / "kward.log").read_text()


def _line(run):
    side = io.StringIO()
    TurnView(io.StringIO(), side, Style(False), Style(False)).hook(
        {"sessionId": "s", "turnId": "t", "run": {"id": "hook-1", "startedAt": "", **run}})
    return side.getvalue()


def test_the_line_of_each_status():
    assert _line({"event": "afterTool", "source": "hooks.afterTool[0]", "status": "completed", "durationMs": 40,
                  "exitStatus": 0, "output": [{"kind": "stdout", "text": "context\n"}]}) == \
        "  * hook hooks.afterTool[0]  ok (40 ms)\n"
    assert _line({"event": "turnEnd", "source": "hooks.turnEnd[1]", "status": "failed", "durationMs": 1500,
                  "exitStatus": 1, "output": [{"kind": "stderr", "text": "\n  bad \x1b]52;c;eA==\x07thing\nmore"},
                                              {"kind": "error", "text": "exit status 1"}]}) == \
        "  * hook hooks.turnEnd[1]  failed (exit status 1, 1.5 s): bad thing\n"
    assert _line({"event": "turnEnd", "source": "hooks.turnEnd[0]", "status": "failed", "durationMs": 3,
                  "exitStatus": 1, "output": [{"kind": "error", "text": "exit status 1"}]}) == \
        "  * hook hooks.turnEnd[0]  failed (exit status 1, 3 ms)\n"
    assert _line({"event": "sessionStart", "source": "hooks.sessionStart[0]", "status": "failed", "durationMs": 2,
                  "exitStatus": None, "output": [{"kind": "error", "text": "could not start the hook: x"}]}) == \
        "  * hook hooks.sessionStart[0]  failed (2 ms): could not start the hook: x\n"
    assert _line({"event": "userPromptSubmit", "source": "hooks.userPromptSubmit[0]", "status": "timedOut",
                  "durationMs": 60012, "exitStatus": None,
                  "output": [{"kind": "error", "text": "did not finish within 60 s"}]}) == \
        "  * hook hooks.userPromptSubmit[0]  timed out (60.0 s): did not finish within 60 s\n"
    long = _line({"event": "beforeTool", "source": "hooks.beforeTool[0]", "status": "blocked", "durationMs": 12,
                  "exitStatus": 2, "output": [{"kind": "stderr", "text": "x" * 300}]})
    assert long.startswith("  * hook hooks.beforeTool[0]  blocked (12 ms): xxx") and long.endswith("...\n")
    assert long.count("\n") == 1 and len(long) < 160
