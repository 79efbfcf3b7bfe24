"""The terminal asks before a tool call that may change something (approval mode `ask`,
the interactive default): the real `kward` on a pseudo-terminal, the scripted model, real
files and real shell commands; y, n, a (always for this session), e (edit the command),
Ctrl-C at the question; `--yes`; one-shot mode (default off, and `ask` with no terminal
declining with how to allow it)."""

import json

from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.config_files import write_config
from lib.pty_term import PROMPT, PtyKward, term  # noqa: F401 - fixture
from lib.scripts import text, tool

QUESTION = "Allow? [y]es / [n]o / [a]lways this session / [e]dit command:"
WRITE_QUESTION = "Allow? [y]es / [n]o / [a]lways this session:"


def shell(command):
    return tool("run_shell_command", command=command)


def tool_results(cli):
    """The tool results of the one session file the terminal wrote."""
    files = [p for p in cli.session_files() if p.suffix == ".jsonl"]
    assert len(files) == 1
    results = []
    for line in files[0].read_text().splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        if message.get("role") in ("tool", "toolResult"):
            results.append(message)
    return results


def test_y_runs_a_shell_call_after_showing_the_command_and_its_directory(term, cli):
    k = term([[shell("echo hi > made.txt")], [text("made it")]])
    k.line("make a file")
    asked = k.expect(QUESTION)
    assert "Approve run_shell_command?" in asked and "$ echo hi > made.txt" in asked
    assert f"in {cli.ws.resolve()}" in asked
    assert not (cli.ws / "made.txt").exists()  # nothing ran before the answer
    k.line("y")
    out = k.expect(PROMPT)
    assert "made it" in out
    assert (cli.ws / "made.txt").read_text() == "hi\n"


def test_n_declines_and_the_model_reads_declined(term, cli):
    k = term([[shell("touch nope.txt")], [text("fine, I will not")]])
    k.line("make a file")
    k.expect(QUESTION)
    k.line("n")
    out = k.expect(PROMPT)
    assert "Declined: the user declined this tool call" in out and "fine, I will not" in out
    assert not (cli.ws / "nope.txt").exists()
    k.send("\x04")
    assert k.wait() == 0
    assert [m["content"] for m in tool_results(cli)] == ["Declined: the user declined this tool call"]


def test_a_write_shows_its_diff_and_a_always_approves_the_tool_for_the_session(term, cli):
    k = term([[tool("write_file", path="a.txt", content="first\n")], [tool("write_file", path="b.txt", content="2\n")],
              [text("wrote both")]])
    k.line("write")
    asked = k.expect(WRITE_QUESTION)
    assert "Approve write_file?" in asked and "a.txt" in asked and "+first" in asked
    assert "[e]dit" not in asked  # (only for the shell)
    k.line("a")
    out = k.expect(PROMPT)
    assert "wrote both" in out and "Allow?" not in out  # the second write was not asked
    assert (cli.ws / "a.txt").read_text() == "first\n" and (cli.ws / "b.txt").read_text() == "2\n"


def test_a_always_approves_that_exact_command_only(term, cli):
    k = term([[shell("echo a >> a.txt")], [shell("echo a >> a.txt")], [shell("echo b > b.txt")], [text("done")]])
    k.line("go")
    k.expect(QUESTION)
    k.line("a")
    asked = k.expect(QUESTION)  # the same command ran unasked; the next one is asked
    assert "$ echo b > b.txt" in asked
    assert (cli.ws / "a.txt").read_text() == "a\na\n"
    k.line("y")
    k.expect(PROMPT)
    assert (cli.ws / "b.txt").read_text() == "b\n"


def test_e_edits_the_command_in_the_line_editor_and_the_edited_one_runs(term, cli):
    k = term([[shell("echo model > m.txt")], [text("ok")]])
    k.line("go")
    k.expect(QUESTION)
    k.line("e")
    k.expect("$ echo model > m.txt")  # prefilled
    k.key(*["backspace"] * len("m.txt"))
    k.send("u.txt")
    k.key("enter")
    out = k.expect(PROMPT)
    assert "ok" in out
    assert not (cli.ws / "m.txt").exists() and (cli.ws / "u.txt").read_text() == "model\n"
    k.send("\x04")
    assert k.wait() == 0
    [result] = tool_results(cli)
    assert "what ran: echo model > u.txt" in result["content"]  # the model reads what ran


def test_another_answer_asks_again(term, cli):
    k = term([[shell("touch again.txt")], [text("ok")]])
    k.line("go")
    k.expect(QUESTION)
    k.line("maybe")
    assert "(answer y, n, a, e)" in k.expect(QUESTION)
    assert not (cli.ws / "again.txt").exists()
    k.line("yes")
    k.expect(PROMPT)
    assert (cli.ws / "again.txt").exists()


def test_ctrl_c_at_the_question_declines_and_the_turn_goes_on(term, cli):
    k = term([[shell("touch c.txt")], [text("not done")]])
    k.line("go")
    k.expect(QUESTION)
    k.send("\x03")
    out = k.expect(PROMPT)
    assert "Declined: the user declined this tool call (Ctrl-C)" in out and "not done" in out
    assert "(canceled)" not in out
    assert not (cli.ws / "c.txt").exists()


def test_reading_is_never_asked_and_yes_runs_without_asking(term, cli):
    (cli.ws / "r.txt").write_text("x\n")
    k = term([[tool("read_file", path="r.txt")], [shell("touch y.txt")], [text("all done")]], "--yes")
    k.line("go")
    out = k.expect(PROMPT)
    assert "all done" in out and "Allow?" not in out
    assert (cli.ws / "y.txt").exists()


def test_a_configured_off_is_kept_by_the_interactive_terminal(term, cli):
    write_config(cli.config_dir, {"security": {"approvalMode": "off"}})
    k = term([[shell("touch off.txt")], [text("ran")]])
    k.line("go")
    out = k.expect(PROMPT)
    assert "ran" in out and "Allow?" not in out and (cli.ws / "off.txt").exists()


def test_one_shot_runs_unasked_by_default(cli):
    cli.script([[shell("touch one.txt")], [text("done")]])
    proc = cli.run("go")
    assert proc.returncode == 0 and proc.stdout == b"done\n"
    assert (cli.ws / "one.txt").exists()


def test_one_shot_with_ask_and_no_terminal_declines_saying_how_to_allow_it(cli):
    write_config(cli.config_dir, {"security": {"approvalMode": "ask"}})
    cli.script([[shell("touch ask.txt"), tool("write_file", path="w.txt", content="w\n")], [text("could not")]])
    proc = cli.run("go")
    assert proc.returncode == 0 and proc.stdout == b"could not\n"
    assert not (cli.ws / "ask.txt").exists() and not (cli.ws / "w.txt").exists()
    err = proc.stderr.decode()
    # (the tool line shows the reason's start; the model reads all of it: approve.NO_TERMINAL)
    assert err.count("failed: Declined: approval mode is ask and there is no terminal to ask on; give kward "
                     "--yes") == 2
    cli.script([[shell("touch ask.txt")], [text("did")]])
    proc = cli.run("--yes", "go")
    assert proc.returncode == 0 and proc.stdout == b"did\n" and (cli.ws / "ask.txt").exists()


def test_one_shot_with_ask_on_a_terminal_asks_there(cli):
    write_config(cli.config_dir, {"security": {"approvalMode": "ask"}})
    cli.script([[shell("echo yes > t.txt")], [shell("touch no.txt")], [text("asked twice")]])
    with PtyKward(["go"], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws)) as k:
        assert "$ echo yes > t.txt" in k.expect(QUESTION)
        k.line("y")
        assert "$ touch no.txt" in k.expect(QUESTION)
        k.line("n")
        assert "asked twice" in k.expect("asked twice")
        assert k.wait() == 0
    assert (cli.ws / "t.txt").read_text() == "yes\n" and not (cli.ws / "no.txt").exists()
