"""The model's text reaches a terminal without its escape sequences and control characters
(kward.terminal.textwidth.clean / Cleaner / printable): the answer rendered or not, the
reasoning, tool lines, a failed tool's content, retries, errors, questions and session
names; the answer into a pipe or a file stays byte for byte what the model wrote."""

import io
import random
import re

from kward.terminal import cmd_sessions
from kward.terminal.markdown import MarkdownStream
from kward.terminal.render import TurnView, tool_label
from kward.terminal.style import Style
from kward.terminal.textwidth import Cleaner, clean, printable
from kward.terminal.turn import ask_inline
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.pty_term import PROMPT, PtyKward, term  # noqa: F401 - fixture
from lib.scripts import model_error, reasoning, text, tool

ON, OFF = Style(True), Style(False)
OSC52 = "\x1b]52;c;QQ==\x07"
OSC8 = "\x1b]8;;https://evil.example\x1b\\shown\x1b]8;;\x1b\\"
NASTY = f"a{OSC52}b\x1b[2J\x1b[1;1Hc{OSC8}\rd\x07\x00\x7f\x9b31me\x9d0;t\x9cf\x1bPq#0\x1b\\g\x1b(Bh"


def no_escapes(text: str) -> bool:
    """Nothing a terminal would act on but newlines, tabs and SGR styles (kward's own)."""
    bare = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return not any(ch < " " and ch not in "\n\t" or "\x7f" <= ch <= "\x9f" for ch in bare)


class Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self):
        return True


# --- the cleaning functions ------------------------------------------------------------

def test_clean_removes_escape_sequences_and_controls_but_newlines_and_tabs():
    assert clean(f"Answer {OSC52} ok") == "Answer  ok"
    assert clean(NASTY) == "abcshowndefgh"
    assert clean("one\r\ntwo\tthree\r") == "one\ntwo\tthree"
    assert clean("\x1b[31mred\x1b[0m and \x1b[38;2;1;2;3mtrue\x1b[m") == "red and true"
    assert clean("x\x1b") == "x" and clean("\x1b\x1b[2Jy") == "y" and clean("\x1b[12\x01z") == "z"
    assert clean("\x1b]52;c;unterminated\nnext line") == "\nnext line"  # a string sequence ends at a newline
    assert clean("caf\u00e9 \u6f22\u5b57 \u2014 ok") == "caf\u00e9 \u6f22\u5b57 \u2014 ok"


def test_the_cleaner_gives_the_same_text_however_the_stream_is_split():
    rng = random.Random(13)
    alphabet = ["a", " ", "\n", "\t", "\r", "\x1b", "[", "]", "\\", "\x07", "1", ";", "m", "P", "(", "\x9b", "\x9d",
                "\x9c", "\x00", "\u6f22"]
    for _ in range(300):
        whole = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        cleaner, out, i = Cleaner(), "", 0
        while i < len(whole):
            n = rng.randint(1, 6)
            out += cleaner.feed(whole[i:i + n])
            i += n
        assert out == clean(whole), repr(whole)
        assert no_escapes(out)
    stream = Cleaner()
    assert "".join(stream.feed(ch) for ch in NASTY) == clean(NASTY)


def test_printable_shows_a_line_as_a_terminal_would():
    assert printable("abc\rxy") == "xyc"  # a carriage return overwrites, it does not erase
    assert printable("10%\r50%\r100%") == "100%" and printable("abc\r") == "abc"
    assert printable("\x1b[31mred\x1b[0m\tx") == "red x" and printable(f"a{OSC52}b\x07") == "ab"


# --- every path of a turn's view ---------------------------------------------------------

ANSWER = (f"# Final {OSC52}\n\nAnswer {OSC52} ok, `co\x1b[2Jde` and \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r over\n"
          f"\n| a | b\x07 |\n|---|---|\n| \x1b[5mc | d{OSC52} |\n\n```\nfenced {OSC52}\x1b[2J\n```\n")


def _answer_through(view_out, out_style, pieces=3):
    view = TurnView(view_out, io.StringIO(), out_style, OFF)
    for i in range(0, len(ANSWER), pieces):
        view.event({"type": "assistantDelta", "payload": {"delta": ANSWER[i:i + pieces]}})
    view.event({"type": "turnFinished", "payload": {"status": "completed"}})
    return view_out.getvalue(), view


def test_a_rendered_answer_has_no_escape_of_the_model_in_any_construct():
    out, view = _answer_through(io.StringIO(), ON)
    assert no_escapes(out) and "\x1b]" not in out and "\x07" not in out and "\x1b[5m" not in out
    assert "Answer  ok" in out and "de\x1b[0m and link over" in out and "fenced " in out
    assert view.answer_text == ANSWER  # what the model wrote is kept as it was
    md = MarkdownStream(ON)
    assert md.feed("x \x1b") + md.feed("]52;c;QQ==") + md.feed("\x07 y\n") == "x  y\n"


def test_an_answer_on_a_terminal_without_colours_is_cleaned_and_into_a_file_kept_byte_for_byte():
    out, _ = _answer_through(Tty(), OFF)
    assert out == clean(ANSWER)
    out, _ = _answer_through(Tty(), OFF, pieces=1)  # a sequence split across deltas
    assert out == clean(ANSWER)
    out, _ = _answer_through(io.StringIO(), OFF)
    assert out == ANSWER  # a pipe or a file: exactly what the model wrote


def test_reasoning_tool_lines_failures_retries_and_errors_are_cleaned_on_the_side_stream():
    for side in (Tty(), io.StringIO()):
        for shown in (True, False):
            view = TurnView(io.StringIO(), side, OFF, ON, reasoning_shown=shown, width=200)
            events = [
                ("reasoningDelta", {"delta": f"I think {OSC52[:4]}"}), ("reasoningDelta", {"delta": OSC52[4:] + "so"}),
                ("toolCall", {"toolCallId": "1", "toolName": "bash", "args": {"command": f"ls {OSC52}\r rm"}}),
                ("toolResult", {"toolCallId": "1", "toolName": "bash", "args": {"command": f"ls {OSC52}\r rm"},
                                "result": {"content": "Exit status: 0\n\nSTDOUT:\nfine\n"}}),
                ("toolResult", {"toolCallId": "2", "toolName": f"ev\x1b[2Jil", "args": {"path": f"a{OSC8}"},
                                "result": {"isError": True, "content": f"Error: no {OSC52}such\x1b[2J file"}}),
                ("modelRetry", {"attempt": 1, "maxAttempts": 3, "delaySeconds": 1, "error": f"busy {OSC52}\x1b[2J"}),
                ("error", {"message": f"boom {OSC52}\x1b]0;title\x07", "code": "provider_error"}),
                ("turnFinished", {"status": "failed"}),
            ]
            for kind, payload in events:
                view.event({"type": kind, "payload": payload})
            written = side.getvalue()
            side.seek(0)
            side.truncate()
            assert "\x1b]" not in written and "\x07" not in written and "\x1b[2J" not in written, (shown, written)
            assert "bash ls  rm" in written and "evil ashown" in written and "no such file" in written
            assert "in 1s: busy" in written and "error: \x1b[0mboom\n" in written
            assert ("I think so" in re.sub(r"\x1b\[[0-9;]*m", "", written)) == shown
    assert tool_label("edit", {"path": f"x{OSC52}\ty"}) == "edit x\ty"


def test_questions_asked_inline_are_cleaned():
    shown: list[str] = []
    questions = [{"header": f"H{OSC52}", "question": f"Pick \x1b[2Jone\x07",
                  "options": [{"label": f"a{OSC8}", "description": "d\x1b]0;t\x07"}, {"label": "b\r"}]}]
    answers = ask_inline(questions, shown.append, lambda prompt: "1")
    assert answers == [{"question": f"Pick \x1b[2Jone\x07", "answer": f"a{OSC8}"}]  # the model's own text answered
    assert "".join(shown) == "\nH: Pick one\n  1. ashown - d\n  2. b\n"


class _Shell:
    def __init__(self):
        self.notes: list[str] = []
        self.session_id = "s1"
        self.session: dict = {}
        self.client = self

    def request(self, method, params, **kw):
        return {"sessionName": params.get("name"), "id": "s1"}

    def note(self, text):
        self.notes.append(text)


def test_a_session_name_with_a_bell_is_noted_without_it():
    shell = _Shell()
    cmd_sessions.name(shell, "build\x07 fix")
    cmd_sessions.name(shell, "")
    assert shell.notes == ["session named: build fix", "session name: (unnamed)"]


# --- through a real kward on a terminal ---------------------------------------------------

REPRO = "# Final\n\nAnswer \u001b]52;c;QQ==\u0007 ok"


def _clean_raw(raw: bytes) -> None:
    assert b"\x1b]" not in raw and b"\x07" not in raw, raw


def test_an_osc_52_of_the_model_never_reaches_the_terminal_interactive(term):
    for env in ({"NO_COLOR": "", "KWARD_COLOR": "always"}, {"NO_COLOR": "1"}):
        k = term([[reasoning(f"hm {OSC52}"), tool("run_shell_command", command=f"echo '{OSC52}hi'")], [text(REPRO)]],
                 "--yes", loop=True, **env)
        k.line("go")
        out = k.expect(PROMPT)
        assert "Answer  ok" in out and "bash echo 'hi'" in out, out
        _clean_raw(k.raw)


def test_an_osc_52_of_the_model_never_reaches_the_terminal_one_shot(cli):
    cli.script([[text(REPRO)]], loop=True)
    for env in ({"NO_COLOR": "", "KWARD_COLOR": "always"}, {"NO_COLOR": "1"}):
        with PtyKward(["go"], {**cli.env, "TERM": "xterm", **env}, str(cli.ws)) as k:
            assert k.wait() == 0
            assert "Answer  ok" in k.text, k.text
            _clean_raw(k.raw)


def test_one_shot_into_a_pipe_keeps_the_answer_byte_for_byte_and_stderr_plain(cli):
    retry = {"type": "retry", "delaySeconds": 0, "error": f"busy {OSC52}", "attempt": 2, "maxAttempts": 3}
    cli.script([[reasoning(f"hm {OSC52}"), text(f"looking {OSC52}\n"),
                 tool("run_shell_command", command=f"echo '{OSC52}hi'")],
                [retry, text(REPRO)]])
    proc = cli.run("go")
    assert (proc.returncode, proc.stdout.decode()) == (0, REPRO + "\n"), proc.stderr  # as the model wrote it
    err = proc.stderr.decode()
    assert "\x1b" not in err and "\x07" not in err and "bash echo 'hi'" in err and "in 0.0s: busy\n" in err, err
    assert "looking \n" in err
    cli.script([[text(f"partial {OSC52}"), model_error(f"broke {OSC52}\x1b[2J", kind="server", status=500)]])
    proc = cli.run("go")
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "broke" in err and "\x1b" not in err and "\x07" not in err, err
