"""Interactive mode on a pseudo-terminal: `python -m kward` with the pty as its terminal,
driven as a user would (typed lines, Ctrl-C as \\x03 through the line discipline)."""

import json
import os
import stat

from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.pty_term import PROMPT, term  # noqa: F401 - fixture
from lib.scripts import delay, reasoning, text, tool


def test_a_turn_streams_with_reasoning_tool_lines_and_a_status_line(term, cli):
    (cli.ws / "a.txt").write_text("alpha\n")
    k = term([[reasoning("Let me read it."), tool("read_file", path="a.txt")],
              [tool("edit_file", path="a.txt", edits=[{"old_text": "alpha", "new_text": "beta\ngamma"}])],
              [text("Changed "), text("it.")]], "--yes")  # (run without asking)
    k.line("change a.txt")
    out = k.expect(PROMPT)
    assert "Let me read it." in out and "read a.txt  ok" in out and "edit a.txt  ok +2 -1" in out
    assert "Changed it.\n" in out
    assert "Scripted/scripted | reasoning off | context " in out
    assert (cli.ws / "a.txt").read_text() == "beta\ngamma\n"
    k.send("\x04")  # Ctrl-D at the prompt exits
    assert k.wait() == 0
    history = cli.config_dir / "history"
    assert "change a.txt" in history.read_text()
    assert stat.S_IMODE(os.stat(history).st_mode) == 0o600


def test_slash_commands_and_an_unknown_one(term, cli):
    k = term([[text("first answer")]])
    k.line("hello there")
    k.expect(PROMPT)
    k.line("/name My work")
    assert "session named: My work" in k.expect(PROMPT)
    k.line("/status")
    out = k.expect(PROMPT)
    assert "session    My work" in out and "model      Scripted/scripted (KWARD_PROVIDER)" in out
    assert "messages   2" in out
    k.line("/help")
    out = k.expect(PROMPT)
    assert "/resume [path]" in out and "/fork" in out and "/exit" in out
    k.line("/frobnicate now")
    assert "unknown command: /frobnicate (type /help for the commands)" in k.expect(PROMPT)
    k.line("/export")
    out = k.expect(PROMPT)
    [path] = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("exported (markdown): ")]
    assert "## User\n\nhello there" in open(path).read()
    k.line("/exit")
    assert k.wait() == 0
    [session] = [p for p in cli.session_files() if p.suffix == ".jsonl"]  # the same files the RPC uses
    records = [json.loads(line) for line in session.read_text().splitlines()]
    assert [r.get("name") for r in records if r["type"] == "session_info"][-1] == "My work"


def test_ctrl_c_cancels_a_running_turn_and_twice_at_the_prompt_exits(term):
    k = term([[text("tick "), delay(30), text("never")], [text("after")]])
    k.line("slow one")
    k.expect("tick")
    k.send("\x03")
    out = k.expect(PROMPT)
    assert "canceling..." in out and "(canceled)" in out and "never" not in out
    k.line("next")  # the session goes on
    assert "after" in k.expect(PROMPT)
    k.send("\x03")
    assert "(Ctrl-C again to exit)" in k.expect(PROMPT)
    k.send("\x03")
    assert k.wait() == 0


def test_resume_offers_a_numbered_list_and_fork_prefills_the_message(term, cli):
    k = term([[text("one")], [text("two")], [text("three")]])
    k.line("first question")
    k.expect(PROMPT)
    k.line("/new")
    assert "new session: " in k.expect(PROMPT)
    k.line("/resume")
    out = k.expect("empty to cancel]: ")
    assert " 1. first question  (2 messages, " in out
    k.line("1")
    out = k.expect(PROMPT)
    assert "resumed: first question (2 messages)" in out and "assistant: one" in out
    k.line("second question")
    k.expect(PROMPT)
    k.line("/fork")
    out = k.expect("empty to cancel]: ")
    assert " 1. first question" in out and " 2. second question" in out
    k.line("2")
    k.expect("forked: ")
    k.expect(PROMPT + "second question")  # pre-filled, editable
    k.send(" again\r")
    assert "two" in k.expect(PROMPT)  # the fork has one answer: the script plays its second step again
    k.line("/exit")
    assert k.wait() == 0
    records = [json.loads(line) for p in cli.session_files() if p.suffix == ".jsonl"
               for line in p.read_text().splitlines()]
    users = [r["message"]["content"] for r in records if r["type"] == "message" and r["message"]["role"] == "user"]
    assert "second question again" in users


def test_a_question_of_the_model_is_asked_inline(term, cli):
    question = {"question": "Which colour?", "header": "Colour",
                "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cool"}]}
    k = term([[tool("ask_user_question", questions=[question])], [text("noted")],
              [tool("ask_user_question", questions=[question])], [text("dismissed")]])
    k.line("ask me")
    out = k.expect("empty to dismiss]: ")
    assert "Colour: Which colour?" in out and "1. red - warm" in out and "2. blue - cool" in out
    k.line("2")
    assert "ask_user_question Colour  ok" in k.expect(PROMPT)
    k.line("again")
    k.expect("empty to dismiss]: ")
    k.line("")
    assert "ask_user_question Colour  failed: Cancelled." in k.expect(PROMPT)
    k.line("/exit")
    assert k.wait() == 0
    [session] = [p for p in cli.session_files() if p.suffix == ".jsonl"]
    records = [json.loads(line) for line in session.read_text().splitlines()]
    tools = [r["message"] for r in records if r["type"] == "message" and r["message"]["role"] == "tool"]
    assert [t["content"] for t in tools] == ["Which colour?: blue", "Cancelled."]


def test_model_and_reasoning_commands_go_through_the_protocol(term, cli):
    k = term([[text("x")]])
    k.line("/reasoning high")
    assert "reasoning: high" in k.expect(PROMPT)
    k.line("/model")
    out = k.expect("empty to cancel]: ")
    assert "* Scripted/scripted" in out
    k.line("")
    k.expect(PROMPT)
    k.line("/settings")
    out = k.expect(PROMPT)
    assert '"reasoning_effort": "high"' in out and str(cli.config_dir / "config.json") in out
    k.line("/exit")
    assert k.wait() == 0


def test_prompt_templates_and_plugin_commands_are_listed_and_run(term, cli):
    from lib.resources_helpers import HELLO, write_plugin, write_prompt

    write_prompt(cli.config_dir, "plan", "Make a plan for: $ARGUMENTS", description="Plan a change",
                 argument_hint="<what>")
    write_plugin(cli.config_dir, "hello", HELLO)
    # the Scripted provider plays step n for a conversation holding n assistant messages: the
    # plugin's answer is one, so the model's first call plays the second step
    k = term([[text("(not played)")], [text("Here is the plan.")]])
    k.line("/help")
    out = k.expect(PROMPT)
    assert "Prompt templates and plugin commands:" in out
    assert "/plan <what>" in out and "Plan a change (prompt)" in out and "Say hi (plugin)" in out
    k.line("/hi Ann")
    out = k.expect(PROMPT)
    assert f"Hello Ann\nfrom {cli.ws}" in out.replace("\r\n", "\n")
    k.line("/plan fix the bug")
    assert "Here is the plan." in k.expect(PROMPT)
    write_plugin(cli.config_dir, "hello", 'def register(kward):\n    kward.command("bye")(lambda a, c: "Bye!")\n')
    k.line("/reload")
    k.expect(PROMPT)
    k.line("/hi")
    assert "unknown command: /hi" in k.expect(PROMPT)
    k.line("/bye")
    assert "Bye!" in k.expect(PROMPT)
    k.line("/exit")
    assert k.wait() == 0
    [session] = [p for p in cli.session_files() if p.suffix == ".jsonl"]
    users = [json.loads(line)["message"] for line in session.read_text().splitlines()
             if json.loads(line)["type"] == "message" and json.loads(line)["message"]["role"] == "user"]
    assert [u["content"] for u in users] == ["/hi Ann", "Make a plan for: fix the bug", "/bye"]


def test_a_history_file_that_is_a_fifo_or_a_link_is_neither_read_nor_written(term, cli):
    cli.config_dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(cli.config_dir / "history")  # a blocking read of it would never return
    k = term([[text("one")]])  # at its first prompt
    start = k.text
    assert "history not used" in start and "not a regular file" in start
    k.line("hello")
    assert "one" in k.expect(PROMPT)
    k.send("\x04")
    assert k.wait() == 0
    assert stat.S_ISFIFO(os.lstat(cli.config_dir / "history").st_mode)
    os.unlink(cli.config_dir / "history")
    target = cli.ws / "elsewhere"
    target.write_text("kept\n")
    (cli.config_dir / "history").symlink_to(target)
    k = term([[text("two")]])
    start = k.text
    assert "history not used" in start and "symbolic link" in start
    k.line("hello again")
    assert "two" in k.expect(PROMPT)
    k.send("\x04")
    assert k.wait() == 0
    assert target.read_text() == "kept\n"


def test_a_history_file_too_big_to_read_is_written_anew_trimmed(term, cli):
    cli.config_dir.mkdir(parents=True, exist_ok=True)
    history = cli.config_dir / "history"
    with open(history, "wb") as f:
        f.truncate(5 << 20)  # over the 4 MiB it reads
    k = term([[text("one")]])
    k.line("first line")
    assert "one" in k.expect(PROMPT)
    k.send("\x04")
    assert k.wait() == 0
    assert history.stat().st_size < 1000 and "first line" in history.read_text()
