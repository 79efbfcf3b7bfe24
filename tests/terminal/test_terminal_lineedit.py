"""kward's line editor on a pseudo-terminal: multi-line input, bracketed paste, the user's
editor, Ctrl-C and Ctrl-D, the history, and the terminal given back as it was found.

What was sent is read from the session files (the screen is redrawn as keys arrive, so
it shows an input several times over); the screen is checked for what only it shows."""

import json
import os
import select
import signal
import stat
import sys
import termios
import threading
import time

from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.pty_term import PROMPT, PtyKward, term  # noqa: F401 - fixture
from lib.scripts import delay, text

from kward.terminal.lineedit import LINE, LineEditor, ReadResult
from kward.terminal.lineedit_history import HEADER, History
from kward.terminal.style import Style
from lib.screen import Screen

OK = [[text("ok")]]


def messages(cli, role="user"):
    """The contents of the `role` messages of every session, in order."""
    out = []
    for path in cli.session_files():
        if path.suffix == ".jsonl":
            for line in path.read_text().splitlines():
                record = json.loads(line)
                if record["type"] == "message" and record["message"]["role"] == role:
                    out.append(record["message"]["content"])
    return out


def assert_terminal_given_back(k):
    now, before = k.mode(), k.initial_mode
    assert now[3] & (termios.ECHO | termios.ICANON | termios.ISIG) == termios.ECHO | termios.ICANON | termios.ISIG
    assert now[:6] == before[:6]  # iflag, oflag, cflag, lflag, speeds: as before kward started
    assert k.raw.rfind(b"\x1b[?2004l") > k.raw.rfind(b"\x1b[?2004h") > 0  # bracketed paste off again


def test_a_pasted_block_of_three_lines_is_one_message_sent_on_enter(term, cli):
    k = term(OK, loop=True)
    k.paste("line one\r\nline two\rline three\x07\tend")
    out = k.expect("three")
    assert "... line two" in out  # drawn under the prompt, with the continuation prompt
    k.send("!")  # the paste sent nothing: this goes on the same input
    k.key("enter")
    assert "ok" in k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["line one\nline two\nline three\tend!"]  # CRLF and CR made LF, BEL dropped
    assert messages(cli, "assistant") == ["ok"]  # the model got one turn


def test_alt_enter_ctrl_j_and_a_trailing_backslash_each_make_a_new_line(term, cli):
    k = term(OK, loop=True)
    k.send("first")
    k.key("alt-enter")
    k.expect("... ")
    k.send("second")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.send("third")
    k.key("ctrl-j")
    k.send("fourth")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.send("fifth\\")
    k.key("enter")  # the backslash becomes a line break: nothing sent
    k.expect("... ")
    k.send("sixth")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["first\nsecond", "third\nfourth", "fifth\nsixth"]


def test_the_editing_keys(term, cli):
    k = term(OK, loop=True)
    k.send("world")
    k.key("home")
    k.send("hello ")  # "hello world"
    k.key("end", "ctrl-w", "ctrl-y", "ctrl-y")  # "hello worldworld"
    k.key("ctrl-left", "ctrl-k")  # "hello "
    k.send("there")
    k.key("alt-b", "left", "backspace", "right", "delete")  # (see below)
    k.key("ctrl-a", "delete", "ctrl-e")
    k.send("!")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.send("gone")
    k.key("ctrl-u")
    k.send("kept")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    # "hello there": Alt-B before "there", Left onto the blank, Backspace takes the "o",
    # Right over the blank, Delete takes the "t"; Ctrl-A, Delete takes the "h"
    assert messages(cli) == ["ell here!", "kept"]


def editor_script(tmp_path):
    """An $EDITOR that records what it was given and rewrites the file (EDIT_STATUS: its
    exit status)."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import os, stat, sys\n"
        "path = sys.argv[1]\n"
        "text = open(path).read()\n"
        "mode = stat.S_IMODE(os.stat(path).st_mode)\n"
        "dir_mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)\n"
        "with open(os.environ['EDIT_RECORD'], 'w') as f:\n"
        "    f.write(repr((path, mode, dir_mode, text)))\n"
        "open(path, 'w').write(text.upper() + ' edited\\nsecond line\\n')\n"
        "sys.exit(int(os.environ.get('EDIT_STATUS', '0')))\n")
    record = tmp_path / "record.txt"
    return {"EDITOR": f"{sys.executable} {script}", "VISUAL": "", "EDIT_RECORD": str(record)}, record


def test_ctrl_x_ctrl_e_edits_the_input_in_the_editor_and_enter_sends_it(term, cli, tmp_path):
    env, record = editor_script(tmp_path)
    k = term(OK, loop=True, **env)
    k.send("draft one")
    k.key("ctrl-x ctrl-e")
    k.expect(PROMPT + "DRAFT ONE edited")
    k.expect("... second line")  # the result is the input, not sent
    k.send(" more")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["DRAFT ONE edited\nsecond line more"]
    path, mode, dir_mode, given = eval(record.read_text())
    assert given == "draft one" and mode == 0o600 and dir_mode == 0o700
    assert not os.path.exists(os.path.dirname(path))  # the private temp dir is gone
    assert_terminal_given_back(k)


def test_a_failing_editor_leaves_the_input_as_it_was(term, cli, tmp_path):
    env, record = editor_script(tmp_path)
    k = term(OK, loop=True, **env, EDIT_STATUS="3")
    k.send("draft")
    k.key("ctrl-x ctrl-e")
    k.expect("(the editor exited with status 3; the input is unchanged)")
    k.expect(PROMPT + "draft")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["draft"]


def test_without_an_editor_the_key_says_so(term, cli):
    k = term(OK, loop=True, EDITOR="", VISUAL=" ")
    k.send("draft")
    k.key("ctrl-x ctrl-e")
    k.expect("(no editor: set VISUAL or EDITOR to the command of one)")
    k.expect(PROMPT + "draft")
    k.key("ctrl-u", "ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == []


def test_slash_edit_opens_the_editor_and_prefills_the_next_input(term, cli, tmp_path):
    env, record = editor_script(tmp_path)
    k = term(OK, loop=True, **env)
    k.line("/edit fix the bug")
    k.expect(PROMPT + "FIX THE BUG edited")
    assert eval(record.read_text())[3] == "fix the bug"
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.line("/edit")
    k.expect(PROMPT + " edited")
    assert eval(record.read_text())[3] == ""
    k.key("ctrl-u", "backspace", "ctrl-u", "ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["FIX THE BUG edited\nsecond line"]


def test_ctrl_c_clears_the_typed_input_without_sending_it(term, cli):
    k = term(OK, loop=True)
    k.send("secret plan")
    k.key("ctrl-c")
    out = k.expect(PROMPT)
    assert "secret plan^C" in out and "Ctrl-C again" not in out
    k.line("hello")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["hello"]


def test_ctrl_c_twice_at_an_empty_prompt_exits_and_gives_the_terminal_back(term):
    k = term(OK)
    k.key("ctrl-c")
    assert "(Ctrl-C again to exit)" in k.expect(PROMPT)
    k.key("ctrl-c")
    assert k.wait() == 0
    assert_terminal_given_back(k)


def test_ctrl_d_exits_on_an_empty_input_and_deletes_otherwise(term, cli):
    k = term(OK, loop=True)
    k.send("abc")
    k.key("home", "ctrl-d", "enter")  # deletes the "a"
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["bc"]
    assert_terminal_given_back(k)


def test_a_ctrl_c_that_canceled_a_turn_does_not_count_toward_exiting(term, cli):
    k = term([[text("tick "), delay(30), text("never")], [text("after")]])
    k.line("slow one")
    k.expect("tick")
    k.send("\x03")  # the terminal is in its normal mode while the turn runs: SIGINT
    assert "(canceled)" in k.expect(PROMPT)
    k.key("ctrl-c")  # one Ctrl-C at the prompt: not the second
    assert "(Ctrl-C again to exit)" in k.expect(PROMPT)
    k.line("next")
    assert "after" in k.expect(PROMPT)  # still running
    k.key("ctrl-d")
    assert k.wait() == 0


def test_sigterm_at_the_prompt_gives_the_terminal_back(term):
    k = term(OK)
    k.send("half typed")
    k.expect("half typed")
    k.proc.send_signal(signal.SIGTERM)
    assert k.wait() == 128 + signal.SIGTERM
    assert_terminal_given_back(k)


def test_a_multi_line_entry_comes_back_whole_with_up_also_after_a_restart(term, cli):
    k = term(OK, loop=True)
    k.line("first")
    k.expect("ok")
    k.expect(PROMPT)
    k.send("one")
    k.key("alt-enter")
    k.send("two")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("up", "enter")  # the whole entry, sent again
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["first", "one\ntwo", "one\ntwo"]
    history = (cli.config_dir / "history").read_text().splitlines()
    assert history == [HEADER, '"first"', '"one\\ntwo"']  # not repeated
    for path in cli.session_files():
        path.unlink()
    k = term(OK, loop=True)
    k.key("up")  # the entry, the cursor at its end
    k.key("up")  # onto its first line
    k.key("up")  # the entry before it
    k.key("down")  # the entry again, the cursor on its first line
    k.key("end")
    k.send("!")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["one!\ntwo"]


def test_an_old_readline_history_file_is_read_and_kept(term, cli):
    cli.config_dir.mkdir(parents=True, exist_ok=True)
    history = cli.config_dir / "history"
    history.write_text('old one\nC:\\new "dir"\n\n')
    k = term(OK, loop=True)
    k.key("up")
    k.expect('C:\\new "dir"')
    k.key("up", "enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["old one"]
    assert history.read_text().splitlines() == [HEADER, '"old one"', '"C:\\\\new \\"dir\\""', '"old one"']
    assert stat.S_IMODE(history.stat().st_mode) == 0o600


def test_tab_completes_a_command_and_help_lists_the_keys(term):
    k = term(OK)
    k.send("/he")
    k.key("tab")
    k.expect("/help ")  # (the prompt before it was seen at the start)
    k.key("enter")
    out = k.expect(PROMPT)
    assert "/edit [text]" in out
    assert "Keys:" in out and "Alt-Enter, Ctrl-J" in out and "Ctrl-X Ctrl-E, /edit" in out
    k.send("/re")
    k.key("tab")  # several commands: listed under the input
    out = k.expect(PROMPT + "/re")
    assert "/resume" in out and "/reasoning" in out
    k.key("ctrl-u", "ctrl-d")
    assert k.wait() == 0


def test_a_narrow_terminal_wraps_the_input_and_sends_it_whole(cli):
    cli.script(OK)
    wide = "界" * 12  # 24 columns of wide characters
    with PtyKward([], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws), rows=10, cols=20) as k:
        k.expect(PROMPT)
        k.send("x" * 30 + wide)
        k.key("ctrl-a", "delete", "enter")
        k.expect("ok")
        k.expect(PROMPT)
        k.key("ctrl-d")
        assert k.wait() == 0
    assert messages(cli) == ["x" * 29 + wide]



def test_a_resized_terminal_gets_the_input_drawn_again_at_its_new_width(term, cli):
    k = term(OK)
    k.send("x" * 40)
    k.expect("x" * 40)
    k.resize(10, 30)
    k.expect(PROMPT + "x" * 23 + "\n" + "x" * 17)  # at once, without a key
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["x" * 40]


#: A launcher that runs kward as a job of a tiny job-control shell: kward gets its own
#: process group in the foreground; when it stops, the shell takes the terminal back, says
#: whether the terminal echoes (as it would for the user's shell), and continues it.
JOB_SHELL = """
import fcntl, os, signal, sys, termios
fcntl.ioctl(0, termios.TIOCSCTTY, 0)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.setpgid(0, 0)
    os.read(r, 1)  # until the terminal is this job's
    os.execvp(sys.argv[1], sys.argv[1:])
os.close(r)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
try:
    os.setpgid(pid, pid)
except OSError:
    pass
os.tcsetpgrp(0, pid)
os.write(w, b"x")
while True:
    _, status = os.waitpid(pid, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        os.tcsetpgrp(0, os.getpgrp())
        echo = termios.tcgetattr(0)[3] & termios.ECHO
        os.write(1, b"[job stopped, echo " + (b"on" if echo else b"off") + b"]\\n")
        os.tcsetpgrp(0, pid)
        os.killpg(pid, signal.SIGCONT)
        continue
    sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_ctrl_z_suspends_with_the_terminal_in_its_normal_mode_and_resumes_the_input(cli):
    cli.script(OK, loop=True)
    with PtyKward([], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws), launcher=JOB_SHELL) as k:
        k.expect(PROMPT)
        k.send("half")
        k.key("ctrl-z")
        k.expect("[job stopped, echo on]")
        k.expect(PROMPT + "half")  # drawn again once continued
        k.send(" done")
        k.key("enter")
        k.expect("ok")
        k.expect(PROMPT)
        k.key("ctrl-d")
        assert k.wait() == 0
    assert messages(cli) == ["half done"]


def test_on_a_dumb_terminal_the_prompt_is_plain_input(term, cli):
    k = term(OK, loop=True, TERM="dumb")
    k.line("hello")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert b"\x1b[?2004h" not in k.raw  # no bracketed paste, no raw mode: the terminal's own line editing
    assert messages(cli) == ["hello"]


# --- type-ahead: what is typed while a turn runs (the terminal in its normal mode) --------

#: A turn held for a moment: the keys typed after its "tick" shows arrive while it runs
#: (each test sees their echo before "done", so a late key fails rather than passes).
HELD = [text("tick "), delay(0.6), text("done")]


def test_a_line_typed_ahead_during_a_turn_is_sent_when_the_turn_ends(term, cli):
    k = term([HELD, [text("second answer")]])
    k.line("first question")
    k.expect("tick")
    k.line("second question")  # the terminal's line discipline has it (its CR made LF) and echoes it
    k.expect("second question")  # that echo, while the turn runs
    k.expect("done")
    k.expect(PROMPT + "second question\n")  # shown at the prompt as a line sent there is
    k.expect("second answer")  # sent by itself
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["first question", "second question"]
    assert_terminal_given_back(k)


def test_two_lines_typed_ahead_are_two_turns_in_order(term, cli):
    k = term([HELD, [text("answer two")], [text("answer three")]])
    k.line("one")
    k.expect("tick")
    k.line("two")
    k.line("three")
    k.expect("three")
    k.expect("done")
    k.expect(PROMPT + "two\n")
    k.expect("answer two")
    k.expect(PROMPT + "three\n")
    k.expect("answer three")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["one", "two", "three"]


def test_a_ctrl_c_that_cancels_the_turn_discards_what_was_typed_ahead(term, cli):
    k = term([[text("tick "), delay(30), text("never")], [text("after")]])
    k.line("one")
    k.expect("tick")
    k.line("two")
    k.send("half")
    k.expect("half")
    k.send("\x03")  # (the terminal's SIGINT; it also drops its input queue)
    k.expect("(canceled)")
    k.expect(PROMPT)
    k.line("three")
    k.expect("after")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["one", "three"]


def test_a_partial_line_typed_ahead_is_the_start_of_the_input(term, cli):
    k = term([HELD, [text("answer")]])
    k.line("one")
    k.expect("tick")
    k.send("draft")  # no Enter
    k.expect("draft")
    k.expect("done")
    k.expect(PROMPT + "draft")
    k.key("ctrl-a")  # editable like any input
    k.send("a ")
    k.key("end")
    k.send("!")
    k.key("ctrl-j")  # Ctrl-J at the prompt itself is still a line break
    k.send("more")
    k.key("enter")
    k.expect("answer")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["one", "a draft!\nmore"]


def test_the_echo_of_a_line_not_ended_is_cleared_from_the_row_the_prompt_goes_on():
    """(In-process on a pty: the typed-ahead text echoed on the prompt's row, which a turn's
    output leaves at the start of a fresh row.)"""
    master, slave = os.openpty()
    out = open(slave, "w", encoding="utf-8", closefd=False)
    shown = []

    def user():  # sees the prompt, then ends the line at it
        deadline = time.monotonic() + 10
        while "> dra" not in b"".join(shown).decode().replace("\x1b[J", "") and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                shown.append(os.read(master, 4096))
        os.write(master, b"ft\r")

    try:
        os.write(master, b"dra")  # typed in the terminal's normal mode: echoed, not yet readable
        assert select.select([master], [], [], 10)[0]
        shown.append(os.read(master, 4096))
        editor = LineEditor(slave, out, History(None), complete=lambda word: [], env={}, style=Style(False))
        typing = threading.Thread(target=user)
        typing.start()
        assert editor.read("kward> ") == ReadResult(LINE, "draft")  # (on the main thread, as kward reads)
        typing.join(5)
        while select.select([master], [], [], 0.2)[0]:
            shown.append(os.read(master, 4096))
        editor.close()
    finally:
        out.close()
        os.close(slave)
        os.close(master)
    screen = Screen(40, 5)
    screen.feed(b"".join(shown).decode())
    assert screen.lines() == ["kward> draft"]  # not "drakward> draft"


def test_ctrl_d_typed_ahead_ends_the_typed_part_or_on_an_empty_line_exits(term, cli):
    k = term([HELD, HELD])
    k.line("one")
    k.expect("tick")
    k.send("half\x04")  # Ctrl-D after text: the terminal hands that text over, no Enter
    k.expect("half")
    k.expect("done")
    k.expect(PROMPT + "half")
    k.send(" done")
    k.key("enter")  # (not exited: the Ctrl-D came after text)
    k.expect("tick")
    k.send("\x04")  # Ctrl-D on an empty line: end of input, as at the prompt
    k.expect("done")
    assert k.wait() == 0  # exits once the turn ended
    assert messages(cli) == ["one", "half done"]
    assert messages(cli, "assistant") == ["tick done", "tick done"]


# --- rows that go, keys read together, the input as sent, a SIGINT, a narrow terminal ------

def test_edits_that_take_rows_away_draw_the_input_again(term, cli):
    k = term(OK, loop=True)
    k.send("ab")
    k.key("ctrl-j")
    k.expect("... ")
    k.key("backspace")  # the second row goes
    k.answered()
    k.send("c")
    k.key("ctrl-j")
    k.expect("... ")
    k.key("left", "ctrl-k")  # Ctrl-K at the end of "abc": its line break
    k.answered()
    k.send("d")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.line("ab")
    k.expect("ok")
    k.expect(PROMPT)
    k.send("ab")
    k.key("ctrl-j")
    k.send("cd")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("up")
    k.expect("... cd")
    k.key("up", "up")  # onto its first line, then the entry before: "ab", a row less
    k.answered()
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["abcd", "ab", "ab\ncd", "ab"]


def test_keys_after_the_one_that_ends_an_input_are_the_next_input(term, cli):
    k = term([[text("answer one")], [text("answer two")]])
    k.send("first\rsecond\r")  # in one write: the editor reads both lines at once
    k.expect("answer one")
    k.expect(PROMPT + "second\n")
    k.expect("answer two")
    k.expect(PROMPT)
    k.key("ctrl-c", "ctrl-d")  # in one write too: the Ctrl-D is not lost
    assert "(Ctrl-C again to exit)" in k.expect(PROMPT)
    assert k.wait() == 0
    assert messages(cli) == ["first", "second"]
    assert messages(cli, "assistant") == ["answer one", "answer two"]


def test_a_ctrl_c_that_cancels_a_turn_drops_the_keys_read_after_its_input(term, cli):
    k = term([[text("tick "), delay(30), text("never")], [text("after")]])
    k.send("one\rtwo\r")
    k.expect("tick")
    k.send("\x03")  # the terminal drops what it holds; the editor drops what it read ahead
    k.expect("(canceled)")
    k.expect(PROMPT)
    k.line("three")
    k.expect("after")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["one", "three"]


def test_a_pasted_indented_block_keeps_its_indentation(term, cli):
    k = term(OK, loop=True)
    k.paste("\n  \n    def f():\n        return 1  \n\n")
    k.key("enter")
    k.expect("ok")
    k.expect(PROMPT)
    k.line("   ")  # only blanks: nothing sent
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["    def f():\n        return 1"]  # the blank lines around and the trailing blanks go


def test_a_sigint_from_outside_at_the_prompt_clears_the_input_as_ctrl_c_does(term, cli):
    k = term(OK, loop=True)
    k.send("typed")
    k.expect("typed")
    k.proc.send_signal(signal.SIGINT)
    out = k.expect(PROMPT)
    assert "Ctrl-C again" not in out  # the input was not empty: nothing armed
    k.proc.send_signal(signal.SIGINT)  # (on the empty input: the first)
    assert "(Ctrl-C again to exit)" in k.expect(PROMPT)
    k.line("hello")
    k.expect("ok")
    k.expect(PROMPT)
    k.key("ctrl-d")
    assert k.wait() == 0
    assert messages(cli) == ["hello"]


def test_a_terminal_narrower_than_the_prompt_gets_the_input_drawn_right(cli):
    cli.script(OK, loop=True)
    with PtyKward([], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws), rows=40, cols=8) as k:
        k.expect("exit.")  # (the banner's last words)
        k.expect("> ")
        k.send("abcdefghij")
        k.key("left", "left")
        k.send("X")
        k.key("enter")
        k.expect("ok")
        k.key("ctrl-d")
        assert k.wait() == 0
        screen = Screen(8, 40)
        screen.feed(k.raw.decode())
        lines = screen.lines()
        at = lines.index("> abcdef")
        assert lines[at:at + 3] == ["> abcdef", "ghXij", "ok"]
    assert messages(cli) == ["abcdefghXij"]


def test_a_paste_that_arrives_in_pieces_is_drawn_once_it_ended():
    """(In-process on a pty: each piece is read before the next is written.)"""
    master, slave = os.openpty()
    out = open(slave, "w", encoding="utf-8", closefd=False)
    drawn = []

    class Watched(LineEditor):
        def _draw(self):
            drawn.append(self.buffer.text)
            super()._draw()

    def user():
        shown = b""
        while b"kward> " not in shown:  # the prompt: the terminal is in raw mode now
            shown += os.read(master, 4096)
        for piece in ["\x1b[200~one\r", "two\r", "three", "\x1b[201~\r"]:
            os.write(master, piece.encode())
            deadline = time.monotonic() + 10
            while select.select([slave], [], [], 0.005)[0] and time.monotonic() < deadline:
                pass  # until the editor has read it (the pty holds it until then)
            while select.select([master], [], [], 0)[0]:
                os.read(master, 65536)

    try:
        editor = Watched(slave, out, History(None), complete=lambda word: [], env={}, style=Style(False))
        typing = threading.Thread(target=user)
        typing.start()
        assert editor.read("kward> ") == ReadResult(LINE, "one\ntwo\nthree")
        typing.join(10)
        editor.close()
    finally:
        out.close()
        os.close(slave)
        os.close(master)
    assert drawn == ["", "one\ntwo\nthree"]  # the prompt, then the input once, as Enter sends it
