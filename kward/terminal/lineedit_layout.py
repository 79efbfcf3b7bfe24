"""Where the line editor's buffer goes on the screen, and the bytes that put it there.

`layout` cuts the prompt and the buffer into screen rows for a terminal `cols` wide: the
first line after the prompt, each further line after the continuation prompt (the same
width), a line wider than the terminal broken into rows by display width (wide characters
count two columns and never straddle a row end; a tab is `TAB_WIDTH` blanks; a prompt's
colour escapes count zero). A line that fills its last row exactly gets an empty row after
it (where the cursor goes when it is at that line's end), so the cursor is never left in a
terminal's "pending wrap" state. A terminal too narrow for the prompt and two columns gets
a shorter prompt (`short_prompt`) and blanks as wide for the continuation.

A layout taller than `max_rows` is a window of rows around the cursor: the cursor's row
at its bottom, or the first rows when the cursor is among them. Only the lines that window
needs are laid out (the cursor's line, and those above and below it until the window is
full), and a run of plain ASCII is cut into rows by arithmetic, not character by
character, so a key costs the same on a megabyte of input as on a line.

`redraw` gives what turns the screen showing one layout into another: it moves to the
first row that differs, clears from there (`ESC[J`) and writes only what changed (typing
at the end writes just the new characters; the prompt is drawn once per read; a character
and its combining marks are written again together), then puts the cursor where the
layout has it. The caller tracks the layout on screen.

Pure; no I/O.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from kward.terminal.lineedit_buffer import is_mark, text_width
from kward.terminal.textwidth import ANSI, TAB_WIDTH, char_width

_PLAIN = re.compile(r"[ -~]+")  # printable ASCII: a column a character, shown as it is
MIN_COLS = 2  # (a wide character needs two; a narrower terminal is taken as this wide)


def visible_width(styled: str) -> int:
    """Columns of `styled` on a terminal (its ANSI escape sequences take none)."""
    return text_width(ANSI.sub("", styled))


def continuation_for(prompt_width: int) -> str:
    """The continuation prompt of a prompt this wide: `...` and a blank, right-aligned."""
    if prompt_width < 4:
        return " " * prompt_width
    return " " * (prompt_width - 4) + "... "


def short_prompt(prompt: str, cols: int) -> str:
    """`prompt` on a terminal `cols` wide: itself when it leaves two columns; else its end
    from its last sign (`> ` of `kward> `), its escapes kept, when that leaves one; else
    only its escapes (no prompt)."""
    if visible_width(prompt) + 2 <= cols:
        return prompt
    parts = re.split(f"({ANSI.pattern})", prompt)  # text, escape, text, ...
    shown = "".join(parts[0::2])
    cut = max((i for i, ch in enumerate(shown) if not (ch.isalnum() or ch.isspace())), default=len(shown))
    if text_width(shown[cut:]) + 1 > cols:
        cut = len(shown)
    out, at = [], 0
    for n, part in enumerate(parts):
        if n % 2:
            out.append(part)
            continue
        out.append(part[max(0, cut - at):])
        at += len(part)
    return "".join(out)


def _fit(prompt: str, continuation: str, cols: int) -> tuple[str, str]:
    fitted = short_prompt(prompt, cols)
    if fitted != prompt or visible_width(continuation) + 2 > cols:
        continuation = " " * visible_width(fitted)
    return fitted, continuation


def _width(ch: str, cols: int) -> int:
    if ch == "\t":
        return min(TAB_WIDTH, cols)
    return 2 if ord(ch) < 0x20 or ord(ch) == 0x7F else char_width(ch)


def _shown(ch: str, cols: int) -> str:
    if ch == "\t":
        return " " * min(TAB_WIDTH, cols)
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return "^" + chr((ord(ch) + 64) % 128)  # (the buffer holds none; shown, not sent, if it did)
    return ch


class Row(NamedTuple):
    """One screen row: a (styled) prompt or "", and the text after it."""

    prefix: str
    content: str


class Layout(NamedTuple):
    """The rows of a buffer on the screen and the cursor's place among them (its column is
    always less than `cols`)."""

    rows: tuple[Row, ...]
    row: int
    col: int
    cols: int


class _Line:
    """The rows of one line of the buffer, built a character or a run at a time."""

    def __init__(self, prefix: str, cols: int):
        self.cols = cols
        self.rows: list[Row] = []
        self.prefix = prefix
        self.content: list[str] = []
        self.col = visible_width(prefix)
        self.cursor = (-1, -1)  # (row, col) of the cursor, when it is on this line

    def _break(self) -> None:
        self.rows.append(Row(self.prefix, "".join(self.content)))
        self.prefix, self.content, self.col = "", [], 0

    def char(self, ch: str, here: bool) -> None:
        w = _width(ch, self.cols)
        if self.col + w > self.cols:  # break the row before this character
            self._break()
        if here:
            self.cursor = (len(self.rows), self.col)
        self.content.append(_shown(ch, self.cols))
        self.col += w

    def plain(self, run: str, cursor: int) -> None:
        """A run of plain ASCII; `cursor`: its index in `run` (or outside it)."""
        at = 0
        while at < len(run):
            if self.col >= self.cols:
                self._break()
            take = min(len(run) - at, self.cols - self.col)
            if at <= cursor < at + take:
                self.cursor = (len(self.rows), self.col + cursor - at)
            self.content.append(run[at:at + take])
            self.col += take
            at += take

    def end(self, here: bool) -> list[Row]:
        if self.col >= self.cols:  # the row is full: the line's end is on an empty row below
            self._break()
        if here:
            self.cursor = (len(self.rows), self.col)
        self._break()
        return self.rows


def _line_rows(prefix: str, line: str, cols: int, cursor: int = -1) -> tuple[list[Row], tuple[int, int]]:
    """The rows of `line` after `prefix`, and the cursor's (row, col) when `cursor` (an
    index into `line`) is on it."""
    out = _Line(prefix, cols)
    at = 0
    for run in _PLAIN.finditer(line):
        for i in range(at, run.start()):
            out.char(line[i], i == cursor)
        out.plain(run.group(), cursor - run.start())
        at = run.end()
    for i in range(at, len(line)):
        out.char(line[i], i == cursor)
    return out.end(cursor == len(line)), out.cursor


def layout(prompt: str, continuation: str, text: str, cursor: int, cols: int, max_rows: int = 0) -> Layout:
    """The rows of `prompt` + `text` on a terminal `cols` wide (see the module docstring);
    `max_rows` > 0 cuts it to that many rows around the cursor."""
    cols = max(cols, MIN_COLS)
    prompt, continuation = _fit(prompt, continuation, cols)
    start = text.rfind("\n", 0, cursor) + 1
    end = text.find("\n", cursor)
    end = len(text) if end < 0 else end
    rows, (crow, ccol) = _line_rows(prompt if start == 0 else continuation, text[start:end], cols, cursor - start)
    above: list[Row] = []
    while start > 0 and (max_rows <= 0 or len(above) + crow < max_rows - 1):  # the lines above, last first
        line_end, start = start - 1, text.rfind("\n", 0, start - 1) + 1
        above[:0] = _line_rows(prompt if start == 0 else continuation, text[start:line_end], cols)[0]
    rows[:0] = above
    crow += len(above)
    while end < len(text) and (max_rows <= 0 or len(rows) < max_rows):  # the lines below
        line_start, end = end + 1, text.find("\n", end + 1)
        end = len(text) if end < 0 else end
        rows += _line_rows(continuation, text[line_start:end], cols)[0]
    if max_rows > 0 and len(rows) > max_rows:
        top = max(0, crow - max_rows + 1)
        rows, crow = rows[top:top + max_rows], crow - top
    return Layout(tuple(rows), crow, ccol, cols)


def _move(from_row: int, to_row: int, col: int) -> str:
    out = ""
    if to_row < from_row:
        out += f"\x1b[{from_row - to_row}A"
    elif to_row > from_row:
        out += f"\x1b[{to_row - from_row}B"
    out += "\r"
    if col > 0:
        out += f"\x1b[{col}C"
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _boundary(was: str, now: str, keep: int) -> int:
    """`keep` (a length both start with) moved back to the start of a character, so a
    character whose combining marks changed is written again whole."""
    while keep > 0 and any(keep < len(content) and is_mark(content[keep]) for content in (was, now)):
        keep -= 1
    return keep


def redraw(old: Layout | None, new: Layout) -> str:
    """What turns the screen from `old` (None: nothing drawn yet, the cursor at the start
    of a fresh row) into `new`, leaving the cursor at `new`'s cursor."""
    if old is None:
        out, first, start_col = "", 0, -1
    elif old.cols != new.cols:  # the width changed: draw everything again
        out, first, start_col = _move(old.row, 0, 0) + "\x1b[J", 0, -1
    else:
        first = 0
        while first < min(len(old.rows), len(new.rows)) and old.rows[first] == new.rows[first]:
            first += 1
        if first == len(old.rows) == len(new.rows):
            return _move(old.row, new.row, new.col)
        if first == len(new.rows):  # rows went at the end: clear from the first of them
            return _move(old.row, first, 0) + "\x1b[J" + _move(first, new.row, new.col)
        if first == len(old.rows):  # rows were added below: continue after the last one
            out, start_col = _move(old.row, first - 1, 0), -2
        else:
            was, now = old.rows[first], new.rows[first]
            if was.prefix == now.prefix:
                keep = _boundary(was.content, now.content, _common(was.content, now.content))
                start_col = keep
                out = _move(old.row, first, visible_width(now.prefix) + text_width(now.content[:keep])) + "\x1b[J"
            else:
                start_col = -1
                out = _move(old.row, first, 0) + "\x1b[J"
    parts = [out]
    for n in range(first, len(new.rows)):
        row = new.rows[n]
        if n == first and start_col == -2:
            parts.append("\r\n\x1b[J" + row.prefix + row.content)
        elif n == first and start_col >= 0:
            parts.append(row.content[start_col:])
        else:
            parts.append(("\r\n" if n > first or start_col == -2 else "") + row.prefix + row.content)
    parts.append(_move(len(new.rows) - 1, new.row, new.col))
    return "".join(parts)


def end_of(shown: Layout) -> str:
    """From `shown`'s cursor to the start of the row below its last row (where output that
    follows a finished read begins)."""
    return _move(shown.row, len(shown.rows) - 1, 0) + "\r\n"
