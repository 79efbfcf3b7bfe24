"""The renderer on input a model may produce but no test answer has: lines that keep
constructs open for hundreds of kilobytes, a megabyte-long line arriving in small
deltas, a long answer (all linear in time: each case runs in a child process that is
killed after GUARD seconds; it takes a fraction of a second), tables wider than the
terminal, shell output that holds a literal `STDERR:` line, and the one width and
encoding rules the terminal modules share."""

import io
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kward
from kward.terminal import lineedit_buffer, lineedit_layout, stats_view
from kward.terminal.markdown import MarkdownStream
from kward.terminal.mdinline import inline, stable_end
from kward.terminal.render import TurnView
from kward.terminal.style import Style, is_utf8
from kward.terminal.textwidth import ANSI, char_width, display_width
from kward.terminal.toolview import command_output, last_lines
from lib import mdinline_reference as reference

ON, OFF = Style(True), Style(False)
ROOT = Path(kward.__file__).resolve().parents[1]
GUARD = 20  # seconds: quadratic code takes minutes on these inputs


def within_guard(code: str) -> None:
    """Run `code` (which asserts what it computed) in a child Python; fail when it fails or
    is still running after GUARD seconds."""
    prelude = ("from kward.terminal.markdown import MarkdownStream\n"
               "from kward.terminal.mdinline import inline, stable_end\n"
               "from kward.terminal.render import TurnView\n"
               "from kward.terminal.style import Style\n"
               "import io\nON, OFF = Style(True), Style(False)\n")
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, timeout=GUARD, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr


#: A unit repeated over a line, and how much of that line stable_end says can be written.
OPEN = [("*a ", "0"), ("_a ", "0"), ("~~a ", "0"), ("**a ", "0"), ("__a ", "0"), ("[a ", "0"), ("](", "0"),
        ("[](", "0"), ("[a](b ", "len(line) - 6"), ('[a](b "', "len(line) - 15"),  # the last links may complete
        ("<http://a ", "len(line)"), ("http://a. ", "len(line)")]


@pytest.mark.parametrize("unit, end", OPEN)
def test_inline_and_stable_end_are_linear_on_constructs_left_open(unit, end):
    within_guard(f"""
        line = {unit!r} * (200_000 // len({unit!r}))
        assert inline(line, ON) == line  # nothing closes (a bare URL is left as written)
        assert stable_end(line) == {end}
    """)


def test_a_long_run_of_backticks_that_never_closes_is_linear():
    within_guard("""
        line = "`" * 100_000 + "x"
        assert inline(line, ON) == line and stable_end(line + " ") == 0
    """)


def test_a_closer_at_the_end_of_a_long_line_closes_the_first_opener():
    within_guard("""
        line = "*a " * 70_000 + "b*"
        assert inline(line, ON) == "\\x1b[3m" + line[1:-1] + "\\x1b[0m"
        line = "**a " * 50_000 + "b**"
        assert inline(line, ON) == "\\x1b[1m" + line[2:-2] + "\\x1b[0m"
        line = "`" * 100_000 + "x" + "`" * 99_999
        assert inline(line, ON) == "\\x1b[36m`x\\x1b[0m"  # a run of 99,999 closes: the extra backtick is code
    """)


PIECES = ["*", "**", "_", "__", "~~", "`", "``", "[", "]", "(", ")", "](", "!", "\\", "<", ">", '"', " ", "  ", "\t",
          "a", "b c", "x_y", "http://", "https://e.org/p", "mailto:", ".", ",", "\u6f22", "\u00a0", "1"]


def test_the_linear_renderer_renders_as_the_regular_expressions_did():
    rng = random.Random(4)
    for _ in range(6000):
        line = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        assert inline(line, ON) == reference.inline(line, ON), repr(line)
        assert stable_end(line) == reference.stable_end(line), repr(line)


def test_a_megabyte_line_fed_in_small_deltas_is_linear():
    within_guard("""
        import re
        # 4 MB each: written word by word as it comes, and held to its end (a table's header, maybe)
        for line, size, early in (("word " * 800_000, 128, 31_250), ("| " + "y" * 4_000_000, 64, 0)):
            md = MarkdownStream(ON)
            out = [md.feed(line[i:i + size]) for i in range(0, len(line), size)]
            assert re.sub("\x1b\\[[0-9;]*m", "", "".join(out) + md.finish()) == line + "\\n", line[:10]
            assert sum(map(bool, out)) == early  # how many deltas wrote something at once
    """)


def test_a_long_answer_is_kept_in_linear_time():
    within_guard("""
        answer = ("x" * 79 + "\\n") * 100_000  # 8 MB
        out = io.StringIO()
        view = TurnView(out, io.StringIO(), OFF, OFF)
        for i in range(0, len(answer), 64):
            view.event({"type": "assistantDelta", "payload": {"delta": answer[i:i + 64]}})
        assert view.answer_text == answer and out.getvalue() == answer
    """)


# --- tables wider than the terminal ---------------------------------------------------------

def _table(text: str, width: int = 80) -> list[str]:
    md = MarkdownStream(ON, width=width)
    return (md.feed(text) + md.finish()).splitlines()


def test_a_table_wider_than_the_terminal_has_its_widest_cells_cut_so_that_rows_fit():
    long = "word " * 60  # 300 characters
    lines = _table(f"| name | note | n |\n|---|---|--:|\n| a | {long.strip()} | 1 |\n| bb | short | 22 |\n")
    assert [display_width(line) <= 80 for line in lines] == [True] * 4, [display_width(line) for line in lines]
    plain = [ANSI.sub("", line) for line in lines]
    assert plain[0].startswith("name  note") and plain[0].endswith("   n")
    assert plain[2].startswith("a     word word") and plain[2].endswith("\u2026   1")
    assert plain[3].startswith("bb    short") and plain[3].endswith("  22")
    assert display_width(plain[2]) == 80 and plain[1].count("\u2500") == 80 - 4
    styled = _table("| h |\n|---|\n| **" + "b" * 100 + "** |\n", width=30)[2]
    assert styled.startswith("\x1b[1m" + "b" * 29) and styled.endswith("\u2026\x1b[0m")  # a style cut stays closed
    assert display_width(styled) == 30


def test_a_table_too_wide_to_cut_is_printed_as_its_rows_were_written():
    head = "| " + " | ".join(f"column {n}" for n in range(40)) + " |"
    rows = [head, "|" + "---|" * 40, "| " + " | ".join(str(n) for n in range(40)) + " |"]
    assert _table("\n".join(rows) + "\n\nafter\n") == rows + ["", "after"]


# --- shell output, one width rule, one encoding rule -------------------------------------

def test_a_literal_stderr_label_in_stdout_is_shown_as_a_line_of_output():
    content = "Exit status: 0\n\nSTDOUT:\nreport\n\nSTDERR:\nnot really\n"
    assert last_lines(command_output(content), 8) == ["report", "STDERR:", "not really"]
    assert command_output("Exit status: 2\n\nSTDERR:\nx") == "x"
    assert command_output("Exit status: 1\n\nSTDOUT:\nout\n\nSTDERR:\nboom\n") == "out\n\nSTDERR:\nboom\n"


def test_one_char_width_one_escape_pattern_and_one_utf8_test():
    assert lineedit_buffer.char_width is char_width and lineedit_layout.char_width is char_width
    assert char_width("\t") == 4 and char_width("\u754c") == 2 and char_width("\u0301") == 0
    assert lineedit_layout.visible_width("\x1b[1;35mkward\x1b[0m> ") == display_width("\x1b[1;35mkward\x1b[0m> ") == 7
    assert lineedit_layout.visible_width("\x1b]8;;x\x1b\\ab") == 2
    for name, utf8 in (("utf-8", True), ("UTF8", True), ("utf_8", True), ("utf-8-sig", True), ("U8", True),
                       ("utf-16", False), ("utf-32-le", False), ("ascii", False), ("latin-1", False),
                       ("no-such-codec", False), (None, False)):
        assert is_utf8(Encoded(name)) is utf8, name
    sixteen = io.TextIOWrapper(io.BytesIO(), encoding="utf-16")
    assert not is_utf8(sixteen) and stats_view.bar(1, is_utf8(sixteen), 2) == "[##]"
    view = TurnView(sixteen, sixteen, OFF, OFF, width=80)
    view.event({"type": "toolResult",
                "payload": {"toolName": "read", "args": {"path": "a"}, "result": {"content": ""}}})
    sixteen.flush()
    assert sixteen.buffer.getvalue().decode("utf-16") == "  * read a  ok\n"  # ASCII bullets: not UTF-8


class Encoded(io.StringIO):
    def __init__(self, encoding):
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self):
        return self._encoding
