"""The rendered terminal output over in-memory streams: the streaming Markdown renderer
(fed odd splits), the diff and shell-output lines under a tool line, the collapsed
reasoning and the live output of a running command in a TurnView."""

import io
import random
import re

import pytest

from kward.terminal.markdown import MarkdownStream, split_row
from kward.terminal.mdinline import inline, stable_end
from kward.terminal.render import TurnView
from kward.terminal.style import Style
from kward.terminal.textwidth import cut, display_width, printable
from kward.terminal.toolview import command_output, diff_lines, last_lines

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ON, OFF = Style(True), Style(False)


def plain(text):
    return ANSI.sub("", text)


def render(text, pieces=None, *, unicode=True, style=ON):
    """`text` fed to a MarkdownStream in pieces of the given sizes (cycled), then finished."""
    md = MarkdownStream(style, unicode=unicode, width=80)
    out, i, n = "", 0, 0
    sizes = pieces or [len(text) or 1]
    while i < len(text):
        size = sizes[n % len(sizes)]
        out += md.feed(text[i:i + size])
        i, n = i + size, n + 1
    return out + md.finish()


ANSWER = ("# Plan\n"
          "Use **care** and *taste*, see [the docs](https://example.org/a_b) or https://x.org/y_z_w.\n"
          "This long line streams word by word: **strong words**, `code with spaces`, ``a ` tick``, "
          "[a link text](https://example.org/x \"title\"), __strong two__, _em two_ and ~~struck out~~ end.\n"
          "12 apples, x | y without a leading bar.\n"
          "\n"
          "- first `item`\n"
          "  - nested ~~gone~~\n"
          "- [x] a done task with *several* words\n"
          "1. one\n"
          "\n"
          "> quoted over a **few** words\n"
          "\n"
          "| Name | 数 | n |\n"
          "|:----:|----|--:|\n"
          "| a | 漢字 | 1 |\n"
          "| longer | x | 1234 |\n"
          "\n"
          "```python\n"
          "x = a * b * c  # **not bold**\n"
          "```\n"
          "after\n")

EXPECTED = ("Plan\n"
            "Use care and taste, see the docs (https://example.org/a_b) or https://x.org/y_z_w.\n"
            "This long line streams word by word: strong words, code with spaces, a ` tick, "
            "a link text (https://example.org/x), strong two, em two and struck out end.\n"
            "12 apples, x | y without a leading bar.\n"
            "\n"
            "\u2022 first item\n"
            "  \u25e6 nested gone\n"
            "\u2022 \u2611 a done task with several words\n"
            "1. one\n"
            "\n"
            "\u2502 quoted over a few words\n"
            "\n"
            " Name   数       n\n"
            "──────  ────  ────\n"
            "  a     漢字     1\n"
            "longer  x     1234\n"
            "\n"
            "── python\n"
            "  x = a * b * c  # **not bold**\n"
            "after\n")


def pieces_out(text, sizes):
    """What each `feed` of `text` in pieces of `sizes` (cycled) returned, and `finish`."""
    md = MarkdownStream(ON, width=80)
    outs, i, n = [], 0, 0
    while i < len(text):
        outs.append(md.feed(text[i:i + sizes[n % len(sizes)]]))
        i, n = i + sizes[n % len(sizes)], n + 1
    return outs + [md.finish()]


@pytest.mark.parametrize("pieces", [None, [1], [2, 3], [7], [5, 1, 11]])
def test_any_split_of_the_deltas_renders_the_same(pieces):
    out = render(ANSWER, pieces)
    assert out == render(ANSWER)  # byte for byte, however much of each line was written early
    assert plain(out) == EXPECTED
    assert "\x1b[36mx = a * b * c  # **not bold**\x1b[0m" in out  # the code style, nothing interpreted
    assert "\x1b[1mcare\x1b[0m" in out and "\x1b[3mtaste\x1b[0m" in out and "\x1b[9mgone\x1b[0m" in out
    assert "\x1b[2;4mhttps://example.org/a_b\x1b[0m" in out


def test_a_fence_marker_split_across_deltas_and_crlf_line_ends():
    md = MarkdownStream(ON)
    out = md.feed("text\r\n`") + md.feed("`") + md.feed("`ba") + md.feed("sh\r") + md.feed("\necho *hi*\r\n``")
    assert plain(out) == "text\n── bash\n  echo *hi*\n"
    out += md.feed("`\r\nafter **x**\r\n")
    assert plain(out) == "text\n── bash\n  echo *hi*\nafter x\n" and "\r" not in out
    assert md.finish() == ""


def test_random_splits_render_the_same_and_paragraphs_stream_before_their_newline():
    whole = render(ANSWER)
    rng = random.Random(22)
    for _ in range(40):
        sizes = [rng.randint(1, 9) for _ in range(7)]
        outs = pieces_out(ANSWER, sizes)
        assert "".join(outs) == whole, sizes
        ended = next(i for i in range(len(outs)) if "struck out end.\n" in plain("".join(outs[:i + 1])))
        before = plain("".join(outs[:ended]))  # written before the long line's newline came
        assert ("\nThis long line streams word by word: strong words, code with spaces, a ` tick, "
                "a link text (https://example.org/x), strong two, em two and ") in before, sizes


def test_a_long_paragraph_streams_word_by_word():
    line = "The first words arrive before the line ends, and the rest follows as it comes in.\n"
    outs = pieces_out(line, [3])
    newline_at = len(outs) - 2  # the feed that brought the newline (then finish)
    assert "".join(outs[:newline_at]).startswith("The first words ")  # before the newline came
    assert outs[1] == "The "  # ("The first" fed: "The " is whole, "first" may go on)
    assert "".join(outs) == render(line) == line


def test_the_rest_of_a_line_is_written_at_its_newline_or_at_the_end():
    md = MarkdownStream(ON)
    assert md.feed("Hello **wor") == "Hello "
    assert md.feed("ld**") == ""
    assert md.feed(" and\nmore") == "\x1b[1mworld\x1b[0m and\n"
    assert md.finish() == "more\n"
    assert md.feed("# next message\n") == "\x1b[1;35;4mnext message\x1b[0m\n"  # a fresh start


def test_an_open_bold_is_held_until_it_closes():
    md = MarkdownStream(ON)
    out = md.feed("Some **bold and ")
    assert out == "Some "
    out += md.feed("still bold ") + md.feed("words")
    assert out == "Some "
    out += md.feed("** after ")
    assert out == "Some \x1b[1mbold and still bold words\x1b[0m after "
    assert md.feed("*em") == "" and md.feed("*") == "" and md.feed(" x\n") == "\x1b[3mem\x1b[0m x\n"


def test_a_link_is_held_until_it_is_complete():
    md = MarkdownStream(ON)
    pieces = ["See [the ", "docs page", "](https://ex", "ample.org/a ", '"a title', '"']
    out = "".join(md.feed(piece) for piece in pieces)
    assert out == "See "
    out += md.feed(") now ")
    assert plain(out) == "See the docs page (https://example.org/a) now "
    assert md.feed("[not a link] ") == "[not a link] "  # no `(` after its `]`: nothing to wait for
    assert md.feed("\n") == "\n"


def test_a_construct_left_open_long_makes_the_line_wait_for_its_newline():
    md = MarkdownStream(ON)
    assert md.feed("Start `open ") == "Start "
    assert "".join(md.feed("word ") for _ in range(100)) == ""  # no cut inside the open code span
    assert md.feed("` closed ") == ""  # 500 characters waited: the rest comes with the newline
    assert md.feed("late\n") == "\x1b[36mopen " + "word " * 100 + "\x1b[0m closed late\n"


def test_list_items_and_quotes_stream_after_their_marker_and_the_rest_waits_for_its_kind():
    md = MarkdownStream(ON)
    assert md.feed("- ") == "" and md.feed("[") == "" and md.feed("x] ") == ""  # a task box, maybe
    assert md.feed("done ") == "\u2022 \u2611 done "
    assert md.feed("it\n> ") == "it\n"
    assert md.feed("quoted ") == "\x1b[2m\u2502 \x1b[0mquoted "
    assert md.feed("text\n12") == "text\n" and md.feed(". ") == "" and md.feed("twelve ") == "12. twelve "
    assert md.feed("\n12 ") == "\n12 "  # digits without a marker: a paragraph
    for beginning in ["``", "~", "#", "---", "* *", "1", "- ", "   ", ">  "]:
        assert MarkdownStream(ON).feed(beginning) == "", beginning  # what the line is: not known yet
    for beginning in ["## Head ing", "```py", "~~~", "| a | b", "  |"]:
        md = MarkdownStream(ON)
        assert md.feed(beginning) == "" and md.feed(" more words ") == "", beginning  # written at the newline
    assert MarkdownStream(ON).feed("--- more ") == "--- more " and MarkdownStream(ON).feed("#tag ") == "#tag "
    md = MarkdownStream(ON)
    assert md.feed("| a | b |\n|") == ""  # the line under a held `|` line: its delimiter row, maybe
    assert md.feed(" x") == "| a | b |\n"  # no: the held line is a paragraph; this one is held in turn
    assert md.feed("yz \n") == "" and md.finish() == "| xyz \n"  # (held in turn: a table's header, maybe)
    md = MarkdownStream(ON)
    assert md.feed("| a | b |\n|-") == "" and md.feed("--|---|\n| c | d |\n") == ""  # a table stays held
    md = MarkdownStream(ON)
    assert md.feed("| a | b |\nplain ") == "| a | b |\nplain "  # not a delimiter row: the held line is written


def test_a_table_split_mid_row_is_held_until_it_ends_and_aligned():
    md = MarkdownStream(ON)
    out = md.feed("| a | b |\n|---|:-:|\n| lo")
    assert out == ""  # nothing of the table before its end
    out += md.feed("nger | c |\n| d | ")
    assert out == ""
    out += md.feed("wide |\nnext\n")
    assert plain(out) == "a        b\n──────  ────\nlonger   c\nd       wide\nnext\n"


def test_a_line_with_a_bar_that_heads_no_table_is_a_paragraph():
    assert plain(render("a | b\nplain\n")) == "a | b\nplain\n"
    assert plain(render("x | y")) == "x | y\n"  # held, then flushed at the end
    assert plain(render("| a |\n| - |")) == "a\n─\n"  # a table ending the answer
    assert plain(render("a | b\n--|--\n")) == "a | b\n--|--\n"  # a table's header row begins with `|`


def test_an_unclosed_fence_ends_cleanly_and_fences_of_any_length_and_kind():
    assert plain(render("```\ncode **x**")) == "──\n  code **x**\n"
    out = plain(render("````md\n```\nstill code\n````\n~~~\n~~~~ not a close? yes it is\n~~~~\n"))
    assert out == "── md\n  ```\n  still code\n──\n  ~~~~ not a close? yes it is\n"


def test_ascii_streams_get_ascii_bullets_bars_and_rules():
    out = plain(render("- a\n  - b\n> q\n---\n```\nc\n```\n", unicode=False))
    assert out == "- a\n  - b\n> q\n" + "-" * 60 + "\n--\n  c\n"


def test_inline_rules():
    assert inline("snake_case_name and 2 * 3 * 4", ON) == "snake_case_name and 2 * 3 * 4"
    assert inline(r"\*not em\* and <https://a.org/x_y_> and `a*b*`", ON) == \
        "*not em* and <https://a.org/x_y_> and \x1b[36ma*b*\x1b[0m"
    assert inline("**bold *both* bold**", ON) == "\x1b[1mbold \x1b[3mboth\x1b[0m\x1b[1m bold\x1b[0m"
    assert inline("[https://a.org](https://a.org)", ON) == "\x1b[2;4mhttps://a.org\x1b[0m"
    assert split_row(r"| `a|b` | c \| d |") == ["`a|b`", "c | d"]


def test_stable_end_cuts_after_a_space_outside_every_construct_that_may_still_close():
    assert stable_end("snake_case, 2 * 3 and a_b ") == 26 and stable_end("word") == 0
    assert stable_end("a **b** c *d") == 10 and stable_end("see [x] then [y](") == 13
    assert stable_end("a `b c") == 2 and stable_end("a ``b` c") == 2  # the run of two may still close
    assert stable_end('x [t](u "ti tle") y') == 18 and stable_end("x ~~y z~~ w") == 10


def test_display_width_cut_and_printable():
    assert display_width("漢字ab") == 6 and display_width("\x1b[1mab\x1b[0m") == 2
    assert display_width("e\u0301") == 1
    assert cut("漢字漢字", 5, "…") == "漢字…" and cut("short", 10) == "short"
    assert printable("\x1b[31mred\x1b[0m\tx") == "red x" and printable("10%\r50%\r100%") == "100%"


DIFF = "\n".join(["--- a.py", "+++ a.py", "@@ -1,12 +1,12 @@", *[f" line {n}" for n in range(1, 5)],
                  "-old 5", "+new 5", *[f" line {n}" for n in range(6, 13)]]) + "\n"


def test_a_diff_shows_its_hunk_with_three_lines_of_context_and_no_headers():
    lines = diff_lines(DIFF, ON, 80)
    assert [plain(line) for line in lines] == ["    @@ -1,12 +1,12 @@", "     line 2", "     line 3", "     line 4",
                                               "    -old 5", "    +new 5", "     line 6", "     line 7", "     line 8"]
    assert lines[4] == "    \x1b[31m-old 5\x1b[0m" and lines[5] == "    \x1b[32m+new 5\x1b[0m"
    assert lines[0] == "    \x1b[2m@@ -1,12 +1,12 @@\x1b[0m"


def test_a_long_diff_is_capped_and_the_rest_counted_and_a_truncated_one_says_so():
    body = [f"+line {n}" for n in range(57)]
    diff = "--- n.txt\n+++ n.txt\n@@ -0,0 +1,57 @@\n" + "\n".join(body)
    lines = [plain(line) for line in diff_lines(diff, OFF, 80)]
    assert len(lines) == 41 and lines[1] == "    +line 0" and lines[-1] == "    \u2026 18 more lines"
    cut_short = diff + "\n... diff truncated to 8192 bytes; full diff stats: +900|-3. Use read_file to inspect"
    assert diff_lines(cut_short, OFF, 80, unicode=False)[-1] == "    ... 18 more lines; diff cut short: +900 -3 in all"


def test_context_between_two_changes_is_trimmed_to_an_ellipsis():
    diff = "@@ -1,11 +1,11 @@\n-a\n+b\n" + "".join(f" c{n}\n" for n in range(9)) + "-y\n+z\n"
    lines = [plain(line).strip() for line in diff_lines(diff, OFF, 80)]
    assert lines == ["@@ -1,11 +1,11 @@", "-a", "+b", "c0", "c1", "c2", "\u2026", "c6", "c7", "c8", "-y", "+z"]


def test_shell_output_is_the_last_lines_of_stdout_and_stderr():
    content = ("Exit status: 1\n\nSTDOUT:\n" + "".join(f"out {n}\n" for n in range(10)) + "\n\n"
               + "\nSTDERR:\nboom\n")
    assert last_lines(command_output(content), 8) == [f"out {n}" for n in range(4, 10)] + ["STDERR:", "boom"]
    assert command_output("Exit status: 0\n") == "" and command_output("Exit status: 2\n\nSTDERR:\nx") == "x"


def _events(view, *events):
    for kind, payload in events:
        view.event({"type": kind, "payload": payload})


def test_the_view_shows_a_diff_and_a_shell_tail_on_a_plain_side_stream():
    out, err = io.StringIO(), io.StringIO()
    view = TurnView(out, err, OFF, OFF, width=40)
    shell = "Exit status: 0\n\nSTDOUT:\n" + "".join(f"line {n}\n" for n in range(12)) + "x" * 100 + "\n"
    _events(view,
            ("toolResult", {"toolName": "edit", "args": {"path": "a.py"}, "result": {"content": "ok", "diff": DIFF}}),
            ("toolResult", {"toolName": "bash", "args": {"command": "make"}, "result": {"content": shell}}),
            ("toolResult", {"toolName": "edit", "args": {"path": "b"},
                            "result": {"isError": True, "content": "Error: no match", "diff": DIFF}}),
            ("turnFinished", {"status": "completed"}))
    lines = err.getvalue().splitlines()
    assert lines[0] == "  * edit a.py  ok +1 -1" and lines[5] == "    -old 5" and lines[6] == "    +new 5"
    assert lines[10] == "  * bash make  ok"
    assert lines[11:19] == [f"    line {n}" for n in range(5, 12)] + ["    " + "x" * 33 + "..."]
    assert lines[19:] == ["  * edit b  failed: Error: no match"]  # a failed tool shows no diff
    assert "\x1b" not in err.getvalue() and "\r" not in err.getvalue() and out.getvalue() == ""


class Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self):
        return True


def test_collapsed_reasoning_is_one_line_in_place_on_a_terminal_and_once_elsewhere():
    tty = Tty()
    view = TurnView(tty, tty, OFF, OFF, reasoning_shown=False, width=80)
    _events(view, ("reasoningDelta", {"delta": "Let me"}), ("reasoningDelta", {"delta": " think"}),
            ("reasoningDelta", {"delta": "ing about it"}), ("assistantDelta", {"delta": "Answer"}),
            ("turnFinished", {"status": "completed"}))
    assert tty.getvalue() == ("\r\x1b[Kthinking\u2026 (2 words)\r\x1b[Kthinking\u2026 (3 words)"
                              "\r\x1b[Kthinking\u2026 (5 words)\n\nAnswer\n")
    out, err = io.StringIO(), io.StringIO()
    view = TurnView(out, err, OFF, OFF, reasoning_shown=False)
    _events(view, ("reasoningDelta", {"delta": "one two"}), ("reasoningDelta", {"delta": " three"}),
            ("assistantDelta", {"delta": "A"}), ("turnFinished", {"status": "completed"}))
    assert (out.getvalue(), err.getvalue()) == ("A\n", "thinking... (3 words)\n")


def test_live_output_is_redrawn_under_the_provisional_line_and_replaced_by_the_result():
    tty = Tty()
    view = TurnView(tty, tty, OFF, OFF, width=30)
    call = {"toolCallId": "c1", "toolName": "bash", "args": {"command": "make"}}
    _events(view, ("toolCall", call),
            ("toolUpdate", {"toolCallId": "c1", "toolName": "bash", "delta": "one\ntw", "stream": "stdout"}))
    assert tty.getvalue() == "  \u2022 bash make ...\r\x1b[K  \u2022 bash make ...\n    one\n    tw"
    start = len(tty.getvalue())
    _events(view, ("toolUpdate", {"toolCallId": "c1", "toolName": "bash", "delta": "o\n\x1b[31merr\x1b[0m "
                                  + "z" * 40, "stream": "stderr"}),
            ("toolUpdate", {"toolCallId": "other", "toolName": "bash", "delta": "not ours", "stream": "stdout"}))
    redraw = tty.getvalue()[start:]
    assert redraw == ("\r\x1b[2A\x1b[J  \u2022 bash make ...\n    one\n    two\n    err " + "z" * 20 + "\u2026")
    start = len(tty.getvalue())
    _events(view, ("toolResult", {**call, "result": {"content": "Exit status: 0\n\nSTDOUT:\nfinal\n"}}))
    assert tty.getvalue()[start:] == "\r\x1b[3A\x1b[J  \u2022 bash make  ok\n    final\n"
