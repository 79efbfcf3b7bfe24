"""The line editor's pure parts: the key decoder, the buffer, the screen layout and its
redraws (checked on a small terminal screen, tests/lib/screen.py), the history's on-disk
encoding and the two-second Ctrl-C window (an injected clock)."""

import os
import random
import re
import stat
import time

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


def test_moves_and_deletions_take_a_character_with_its_combining_marks():
    b = Buffer()
    b.set("ae\u0301\u0302x")
    b.left()
    assert b.cursor == 4  # before the x
    b.left()
    assert b.cursor == 1  # before the e, not between it and its marks
    b.right()
    assert b.cursor == 4
    b.backspace()
    assert b.text == "ax" and b.cursor == 1  # the e and both marks
    b.set("ae\u0301x", 1)
    b.delete()
    assert b.text == "ax" and b.cursor == 1
    b.set("cafe\u0301 bar", 0)
    b.word_right()
    assert b.cursor == 5  # a mark is part of its word
    b.word_left()
    assert b.cursor == 0
    b.set("e\u0301\ne\u0301x", 1 + 1 + 2)  # after the mark on the second line
    assert b.up() and b.cursor == 2  # the same column: after the first line's mark


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


def edit_at_random(rng, text, cursor, alphabet):
    """One random edit of `text` as the keys make them: typing, or a deletion that may take
    whole rows away (a character, the line break before the cursor, to the end of the
    input, a random stretch), or a move."""
    op = rng.random()
    if op < 0.45 or not text:
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        return text[:cursor] + piece + text[cursor:], cursor + len(piece)
    if op < 0.55:
        at = rng.randrange(len(text))
        return text[:at] + text[at + 1:], min(cursor, len(text) - 1)
    if op < 0.65 and cursor > 0:
        return text[:cursor - 1] + text[cursor:], cursor - 1  # Backspace (at the start of a line: its break)
    if op < 0.72:
        return text[:cursor], cursor  # to the end of the input
    if op < 0.8:
        start = rng.randrange(len(text))
        end = rng.randint(start, len(text))
        return text[:start] + text[end:], start if cursor >= start else cursor
    return text, rng.randint(0, len(text))


@pytest.mark.parametrize("cols", [2, 5, 10, 13, 80])
def test_redraws_leave_the_screen_as_a_fresh_draw_would(cols):
    rng = random.Random(cols)
    alphabet = ["a", "b", " ", "界", "\n", "\t", "e\u0301"]
    text, cursor = "", 0
    screen, old = Screen(cols, ROWS), None
    for _ in range(1500):
        edited, moved = edit_at_random(rng, text, cursor, alphabet)
        if re.search("(?:^|\n)\u0301", edited):
            continue  # (a mark with no character to go on: not what this checks)
        text, cursor = edited, moved
        if len(text) > 200:
            text, cursor = text[:40], min(cursor, 40)
        while 0 < cursor < len(text) and text[cursor] == "\u0301":
            cursor -= 1  # (the editor's cursor is never between a character and its mark)
        new = layout(PROMPT, CONT, text, cursor, cols, max_rows=ROWS - 1)
        old = draw(screen, old, new)
        expected = fresh(new, cols)
        assert screen.lines() == expected.lines() == trimmed(shown(new))
        assert screen.cursor == expected.cursor == (new.row, new.col)
    screen.feed(end_of(old))
    assert screen.cursor == (len(old.rows), 0)


@pytest.mark.parametrize("before, after", [
    ("ab\n", "ab"),  # Backspace after Ctrl-J: the second row goes
    ("ab\n", "ab\n\n"),
    ("one\ntwo\nthree", "one"),  # Down back to the new, shorter input
    ("x" * 30, "x" * 3),  # wrapped rows go
    ("x" * 3, ""),
])
def test_a_layout_that_loses_rows_at_its_end_is_drawn_right(before, after):
    for one, two in ((before, after), (after, before)):
        for cursor in {len(two), 0}:
            old = layout(PROMPT, CONT, one, len(one), 10)
            new = layout(PROMPT, CONT, two, cursor, 10)
            screen = fresh(old, 10)
            screen.feed(redraw(old, new))
            assert screen.lines() == fresh(new, 10).lines() == trimmed(shown(new))
            assert screen.cursor == (new.row, new.col)


def under_cursor(screen):
    return screen.cells[screen.row][screen.col]


def test_a_tab_takes_the_four_columns_it_is_drawn_in():
    lay = layout(PROMPT, CONT, "\tab", 1, 80)
    screen = fresh(lay, 80)
    assert screen.lines() == ["kward>     ab"] and under_cursor(screen) == "a"
    lay = layout(PROMPT, CONT, "abc\tdefg", 5, 16)
    screen = fresh(lay, 16)
    assert shown(lay) == ["kward> abc    de", "fg"] and screen.lines() == shown(lay)
    assert under_cursor(screen) == "e"
    lay = layout(PROMPT, CONT, "abcdefgh\tx", 9, 16)  # the tab does not fit the row: it starts the next
    assert shown(lay) == ["kward> abcdefgh", "    x"] and (lay.row, lay.col) == (1, 4)
    b = Buffer()
    b.set("\tab\nabcdef", 1)
    assert b.down() and b.cursor == len("\tab\nabcd")  # a tab counts its four columns there too


@pytest.mark.parametrize("cols, rows", [
    (8, ["> abcdef", "ghij"]),  # too narrow for "kward> ": the prompt's last part
    (3, ["> a", "bcd", "efg", "hij", ""]),  # (one column left after the prompt is enough)
    (2, ["ab", "cd", "ef", "gh", "ij", ""]),  # no room for a prompt at all
])
def test_a_terminal_narrower_than_the_prompt_gets_a_shorter_one(cols, rows):
    lay = layout(PROMPT, CONT, "abcdefghij", 10, cols)
    assert shown(lay) == rows and lay.cols == cols
    screen = fresh(lay, cols)
    assert screen.lines() == trimmed(rows) and screen.cursor == (lay.row, lay.col) and lay.col < cols
    two = layout(PROMPT, CONT, "ab\ncd", 5, 5)
    assert shown(two) == ["> ab", "  cd"]  # the continuation as wide as the shorter prompt


def test_a_combining_mark_is_drawn_again_with_its_character():
    for before, after in [("ae\u0301", "ae"), ("ae", "ae\u0301"), ("ae\u0301\u0302x", "ae\u0301x"), ("ae\u0301", "a")]:
        old = layout(PROMPT, CONT, before, len(before), 80)
        new = layout(PROMPT, CONT, after, len(after), 80)
        screen = fresh(old, 80)
        screen.feed(redraw(old, new))
        assert screen.lines() == fresh(new, 80).lines() == ["kward> " + after]


def test_a_window_of_the_layout_is_the_same_rows_as_the_whole_layout_cut():
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice(["ab", "界", "\n", "\t", "xyz" * 7]) for _ in range(rng.randint(0, 40)))
        cursor = rng.randint(0, len(text))
        cols, max_rows = rng.choice([5, 10, 17]), rng.randint(1, 8)
        whole = layout(PROMPT, CONT, text, cursor, cols)
        top = max(0, whole.row - max_rows + 1) if len(whole.rows) > max_rows else 0
        cut = layout(PROMPT, CONT, text, cursor, cols, max_rows)
        assert cut == whole._replace(rows=whole.rows[top:top + max_rows], row=whole.row - top)


def test_a_key_on_a_megabyte_input_lays_out_only_the_rows_shown():
    """(Laying out the whole input took about 0.6 s a key at 1 MB: minutes for these.)"""
    lines = ("abcdefghij" * 7 + "\n") * 14_000
    one_line = "x" * 1_000_000
    start = time.perf_counter()
    for n in range(300):
        layout(PROMPT, CONT, lines, len(lines) - n * 50, 250, 49)
        layout(PROMPT, CONT, lines, n * 50, 250, 49)
        if n % 10 == 0:
            layout(PROMPT, CONT, one_line, n * 3000, 250, 49)
        assert time.perf_counter() - start < 20
    assert shown(layout(PROMPT, CONT, lines, len(lines), 250, 49))[-2:] == ["   ... " + "abcdefghij" * 7, "   ... "]


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


def test_a_header_written_twice_by_two_processes_is_not_an_entry(tmp_path):
    """(Two kward processes that both found the file empty each wrote the header with their
    first entry.)"""
    path = tmp_path / "history"
    path.write_bytes(HEADER.encode() + b'\n"one"\n' + HEADER.encode() + b'\n"two"\n')
    assert decode(path.read_bytes()) == (["one", "two"], True)
    h = History(path)
    h.load()
    h.add("three")
    assert path.read_text().splitlines() == [HEADER, '"one"', HEADER, '"two"', '"three"']  # appended, not rewritten
    h.add(HEADER)  # an entry that looks like the header is still an entry (encoded, it is quoted)
    again = History(path)
    again.load()
    assert again.entries == ["one", "two", "three", HEADER]


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
