"""The line editor's pure parts: the key decoder, the buffer, the screen layout and its
redraws (checked on a small terminal screen, tests/lib/screen.py), the history's on-disk
encoding and the two-second Ctrl-C window (an injected clock)."""

import os
import random
import stat

import pytest

from kward.terminal.interactive import ExitGuard
from kward.terminal.lineedit_buffer import Buffer, text_width
from kward.terminal.lineedit_history import HEADER, History, decode, encode
from kward.terminal.lineedit_keys import Key, KeyDecoder, clean_paste, typed_ahead
from kward.terminal.lineedit_layout import continuation_for, end_of, layout, redraw, visible_width
from kward.terminal.textwidth import char_width
from lib.screen import Screen


def names(keys):
    return [k.name if not k.text else (k.name, k.text) for k in keys]


# --- keys --------------------------------------------------------------------------------

@pytest.mark.parametrize("sent, expected", [
    ("abc", [("text", "abc")]),
    ("\r", ["enter"]), ("\n", ["ctrl-j"]), ("\x1b\r", ["alt-enter"]), ("\x1b\n", ["alt-enter"]),
    ("\x1b[13;3u", ["alt-enter"]), ("\x1b[13;2u", ["shift-enter"]), ("\x1b[27;3;13~", ["alt-enter"]),
    ("\x1b[A\x1b[B\x1b[C\x1b[D", ["up", "down", "right", "left"]),
    ("\x1bOA\x1bOH\x1bOF", ["up", "home", "end"]),
    ("\x1b[H\x1b[F\x1b[1~\x1b[4~\x1b[7~\x1b[8~", ["home", "end", "home", "end", "home", "end"]),
    ("\x1b[3~\x1b[2~\x1b[5~\x1b[6~", ["delete", "insert", "page-up", "page-down"]),
    ("\x1b[1;5D\x1b[1;5C\x1b[1;3D", ["ctrl-left", "ctrl-right", "alt-left"]),
    ("\x1bb\x1bf\x1bd\x1b\x7f", ["alt-b", "alt-f", "alt-d", "alt-backspace"]),
    ("\x01\x05\x0b\x15\x17\x19\x03\x04\x18\x1a", ["ctrl-a", "ctrl-e", "ctrl-k", "ctrl-u", "ctrl-w", "ctrl-y",
                                                  "ctrl-c", "ctrl-d", "ctrl-x", "ctrl-z"]),
    ("\t\x7f\x08", ["tab", "backspace", "ctrl-h"]),
    ("a\x1b[99Zb", [("text", "a"), "unknown", ("text", "b")]),
    ("héllo 界", [("text", "héllo 界")]),
    ("\x1b[200~a\r\nb\x1b[201~c", [("paste", "a\nb"), ("text", "c")]),
])
def test_the_decoder_names_the_keys(sent, expected):
    assert names(KeyDecoder().feed(sent)) == expected


def test_a_sequence_cut_between_reads_waits_for_the_rest():
    d = KeyDecoder()
    assert d.feed("x\x1b[") == [Key("text", "x")] and d.waiting()
    assert d.feed("1;5") == [] and d.waiting()
    assert d.feed("Cy") == [Key("ctrl-right"), Key("text", "y")] and not d.waiting()
    assert d.feed("\x1b") == [] and d.waiting()
    assert d.flush() == [Key("escape")]  # nothing followed in time: the Escape key itself
    assert d.feed("\x1b[1") == [] and d.flush() == []  # an unfinished sequence is dropped
    assert not d.waiting()


def test_a_paste_is_collected_across_reads_even_with_its_end_marker_cut():
    d = KeyDecoder()
    assert d.feed("\x1b[20") == []
    assert d.feed("0~one\rtw") == [] and d.in_paste()
    assert d.feed("o\x1b[20") == []
    assert d.feed("1~\r") == [Key("paste", "one\ntwo"), Key("enter")]
    assert d.feed("\x1b[200~\x1b[Aup\x03\x1b[201") == []  # keys inside a paste are text; controls dropped
    assert d.feed("~") == [Key("paste", "[Aup")]
    assert d.feed("\x1b[200~lost end") == [] and d.waiting()
    assert d.flush() == [Key("paste", "lost end")]  # closed after a silence
    assert d.feed("a") == [Key("text", "a")]


@pytest.mark.parametrize("typed, expected", [
    ("next question\n", [("text", "next question"), "enter"]),
    ("one\ntwo\nhalf", [("text", "one"), "enter", ("text", "two"), "enter", ("text", "half")]),
    ("a\rb\r\nc", [("text", "a"), "enter", ("text", "b"), "enter", ("text", "c")]),  # (a terminal without ICRNL)
    ("\n", ["enter"]), ("", []),
    ("up\x1b[Ahere\x1b\n", [("text", "uphere"), "enter"]),  # keys only raw mode has are dropped; LF is Enter after ESC too
    ("tab\there\x00\x04\x07", [("text", "tab\there")]),  # a tab is text; other control characters go
    ("界 \\\n", [("text", "界 \\"), "enter"]),  # (a trailing backslash: the editor's Enter makes it a line break)
])
def test_type_ahead_reads_each_line_break_as_enter(typed, expected):
    assert names(typed_ahead(typed)) == expected


def test_clean_paste():
    assert clean_paste("a\r\nb\rc\nd\te\x00\x1b\x07\x85f") == "a\nb\nc\nd\tef"
    assert clean_paste("emoji \u200d zwj") == "emoji \u200d zwj"  # format characters stay


# --- the buffer ----------------------------------------------------------------------------

def test_moves_and_kills_on_one_line():
    b = Buffer()
    b.set("git commit -m fix_it now")
    b.word_left()
    assert b.text[b.cursor:] == "now"
    b.word_left()
    assert b.text[b.cursor:] == "fix_it now"  # _ is part of a word
    b.word_right()
    assert b.text[:b.cursor] == "git commit -m fix_it"
    assert b.kill_word_back() == "fix_it" and b.text == "git commit -m  now"
    assert b.kill_to_start() == "git commit -m " and b.text == " now" and b.cursor == 0
    assert b.kill_to_end() == " now" and b.text == ""
    b.set("one two", 0)
    assert b.kill_word_forward() == "one" and b.text == " two"
    b.set("one two")
    assert b.kill_word_backward() == "two"
    b.set("ab")
    b.left(), b.left(), b.left()
    b.backspace()
    assert b.cursor == 0 and b.text == "ab"
    b.delete()
    assert b.text == "b"
    b.end(), b.right()
    assert b.cursor == 1


def test_lines_of_a_multi_line_buffer():
    b = Buffer()
    b.set("first line\n界x\nlast")
    assert b.on_last_line() and not b.on_first_line()
    b.home()
    assert b.text[b.cursor:] == "last"
    assert b.up() and b.text[b.cursor:] == "界x\nlast"
    b.set("first line\n界x\nlast", len("first line\n界x"))  # column 3 of "界x"
    assert b.up() and b.cursor == 3  # the same column, counted in display width
    assert not b.up()
    b.set("first line\n界x\nlast", 1)  # column 1: inside the wide character below
    assert b.down() and b.text[b.cursor:] == "界x\nlast"
    b.end()
    assert b.kill_to_end() == "\n" and b.text == "first line\n界xlast"  # at the end of a line: the break
    assert b.first_line_end() == 10


def test_widths():
    assert char_width("a") == 1 and char_width("界") == 2 and char_width("\u0301") == 0 and char_width("\t") == 4
    assert text_width("e\u0301界") == 3
    assert visible_width("\x1b[1mkward> \x1b[0m") == 7
    assert continuation_for(7) == "   ... " and continuation_for(2) == "  "


# --- layout and redraw on a screen -------------------------------------------------------------

PROMPT = "\x1b[1mkward> \x1b[0m"
CONT = "\x1b[2m   ... \x1b[0m"


def shown(lay):
    return [_plain(r.prefix) + r.content for r in lay.rows]


def _plain(text):
    import re
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_rows_break_by_display_width_and_the_cursor_stays_inside():
    lay = layout(PROMPT, CONT, "abcdefghijklm", 13, 10)
    assert shown(lay) == ["kward> abc", "defghijklm", ""]  # a full row: the end on the row below
    assert (lay.row, lay.col) == (2, 0)
    lay = layout(PROMPT, CONT, "ab界界x", 2, 10)
    assert shown(lay) == ["kward> ab", "界界x"]  # a wide character does not straddle the edge
    assert (lay.row, lay.col) == (1, 0)
    lay = layout(PROMPT, CONT, "one\ntwo\n", 5, 80)
    assert shown(lay) == ["kward> one", "   ... two", "   ... "] and (lay.row, lay.col) == (1, 8)
    lay = layout(PROMPT, CONT, "\n".join(str(n) for n in range(30)), 0, 80, max_rows=5)
    assert len(lay.rows) == 5 and lay.row == 0  # a window around the cursor
    lay = layout(PROMPT, CONT, "\n".join(str(n) for n in range(30)), 79, 80, max_rows=5)
    assert shown(lay)[-1] == "   ... 29" and lay.row == 4


def draw(screen, old, new):
    screen.feed(redraw(old, new))
    return new


ROWS = 24


def trimmed(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def fresh(lay, cols):
    s = Screen(cols, ROWS)
    s.feed(redraw(None, lay))
    return s


@pytest.mark.parametrize("cols", [10, 13, 80])
def test_redraws_leave_the_screen_as_a_fresh_draw_would(cols):
    rng = random.Random(cols)
    alphabet = "ab 界\n"
    text, cursor = "", 0
    screen, old = Screen(cols, ROWS), None
    for _ in range(400):
        op = rng.random()
        if op < 0.6:
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
            text, cursor = text[:cursor] + piece + text[cursor:], cursor + len(piece)
        elif op < 0.8 and text:
            at = rng.randrange(len(text))
            text, cursor = text[:at] + text[at + 1:], min(cursor, len(text) - 1)
        else:
            cursor = rng.randint(0, len(text))
        new = layout(PROMPT, CONT, text, cursor, cols, max_rows=ROWS - 1)
        old = draw(screen, old, new)
        expected = fresh(new, cols)
        assert screen.lines() == expected.lines() == trimmed(shown(new))
        assert screen.cursor == expected.cursor == (new.row, new.col)
    screen.feed(end_of(old))
    assert screen.cursor == (len(old.rows), 0)


def test_typing_at_the_end_writes_only_the_new_characters():
    one = layout(PROMPT, CONT, "hello", 5, 80)
    two = layout(PROMPT, CONT, "hello world", 11, 80)
    assert redraw(None, one).startswith(PROMPT + "hello")
    assert redraw(one, two) == "\r\x1b[12C\x1b[J world\r\x1b[18C"
    assert redraw(two, two) == "\r\x1b[18C"


def test_a_width_change_draws_everything_again():
    one = layout(PROMPT, CONT, "x" * 30, 30, 80)
    two = layout(PROMPT, CONT, "x" * 30, 30, 20)
    s = Screen(20)
    s.feed(redraw(one, two))
    assert s.lines() == ["kward> xxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxx"]


# --- history -----------------------------------------------------------------------------

TRICKY = ["plain", "two\nlines", 'quote " and \\ backslash', "\\n not a newline", HEADER, "  spaced  ", "界"]


def test_the_encoding_keeps_every_entry_whole():
    data = HEADER.encode() + b"\n" + b"".join(encode(e) for e in TRICKY)
    assert decode(data) == (TRICKY, True)
    assert b"\n".join(data.split(b"\n")[1:-1]).count(b"\n") == len(TRICKY) - 1  # one line per entry


def test_older_files_are_read_as_their_format_says():
    assert decode(b'one\ntwo "quoted" \\n\n\nthree\n') == (["one", 'two "quoted" \\n', "three"], False)
    assert decode(b"_HiStOrY_V2_\nls\\040-la\ncaf\\303\\251\\\\\n") == (["ls -la", "caf\u00e9\\"], False)
    assert decode(HEADER.encode() + b'\n"ok"\nadded by hand\n"broken\n') == (["ok", "added by hand", '"broken'], True)
    assert decode(b"\xff\xfe bytes\n") == (["\ufffd\ufffd bytes"], False)
    assert decode(b"") == ([], False)


def test_history_appends_entries_and_skips_repeats(tmp_path):
    path = tmp_path / "history"
    h = History(path)
    h.load()
    for entry in ["a", "b\nc", "b\nc", "d"]:
        h.add(entry)
    assert h.entries == ["a", "b\nc", "d"]
    assert path.read_text().splitlines() == [HEADER, '"a"', '"b\\nc"', '"d"']
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = History(path)
    again.load()
    assert again.entries == ["a", "b\nc", "d"]


def test_an_older_file_is_converted_on_the_first_save_and_the_limit_trims(tmp_path):
    (tmp_path / "config").mkdir()
    path = tmp_path / "config" / "history"
    path.write_text("old\\path\nolder\n")
    h = History(path, limit=4)
    h.load()
    assert h.entries == ["old\\path", "older"]
    h.add("new")
    assert path.read_text().splitlines() == [HEADER, '"old\\\\path"', '"older"', '"new"']
    inode = path.stat().st_ino
    for n in range(8):
        h.add(f"e{n}")
    assert h.entries == ["e4", "e5", "e6", "e7"]
    entries, current = decode(path.read_bytes())
    assert current and entries[-4:] == h.entries and len(entries) <= 5  # trimmed (a little slack)
    assert path.stat().st_ino != inode  # replaced whole (a temp file renamed), not rewritten in place
    assert [p.name for p in path.parent.iterdir()] == ["history"]  # no temp file left


def test_a_file_too_big_is_not_read_and_is_replaced_on_save(tmp_path):
    path = tmp_path / "history"
    path.write_bytes(b"x" * 2000)
    h = History(path, max_bytes=1000)
    h.load()
    assert h.entries == []
    h.add("fresh")
    assert decode(path.read_bytes()) == (["fresh"], True)


def test_a_link_or_a_fifo_is_refused(tmp_path):
    target = tmp_path / "target"
    target.write_text("secret\n")
    link = tmp_path / "history"
    link.symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        History(link).load()
    with pytest.raises(OSError, match="symbolic link"):
        History(link).add("x")
    assert target.read_text() == "secret\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        History(fifo).load()


# --- Ctrl-C at the prompt --------------------------------------------------------------------

def test_the_second_ctrl_c_exits_only_within_two_seconds_and_on_an_empty_prompt():
    now = [100.0]
    guard = ExitGuard(lambda: now[0])
    assert not guard.interrupt("") and guard.armed  # the first: armed
    now[0] += 1.9
    assert guard.interrupt("")  # the second within the window: exit
    guard.reset()
    assert not guard.interrupt("")
    now[0] += 2.5
    assert not guard.interrupt("") and guard.armed  # too late: armed again, from now
    now[0] += 0.5
    assert guard.interrupt("")
    guard.reset()
    assert not guard.interrupt("")
    assert not guard.interrupt("typed text") and not guard.armed  # clearing typed text disarms
    assert not guard.interrupt("")
