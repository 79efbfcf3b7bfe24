"""Where the line editor's buffer goes on the screen, and the bytes that put it there.

`layout` cuts the prompt and the buffer into screen rows for a terminal `cols` wide: the
first line after the prompt, each further line after the continuation prompt (the same
width), a line wider than the terminal broken into rows by display width (wide characters
count two columns and never straddle a row end; a prompt's colour escapes count zero). A
line that fills its last row exactly gets an empty row after it (where the cursor goes
when it is at that line's end), so the cursor is never left in a terminal's "pending
wrap" state. A layout taller than the screen is cut to a window of rows around the cursor.

`redraw` gives what turns the screen showing one layout into another: it moves to the
first row that differs, clears from there (`ESC[J`) and writes only what changed (typing
at the end writes just the new characters; the prompt is drawn once per read), then puts
the cursor where the layout has it. The caller tracks the layout on screen.

Pure; no I/O.
"""

from __future__ import annotations

from typing import NamedTuple

from kward.terminal.textwidth import ANSI, char_width


def visible_width(styled: str) -> int:
    """Columns of `styled` on a terminal (its ANSI escape sequences take none)."""
    return sum(char_width(ch) for ch in ANSI.sub("", styled))


def continuation_for(prompt_width: int) -> str:
    """The continuation prompt of a prompt this wide: `...` and a blank, right-aligned."""
    if prompt_width < 4:
        return " " * prompt_width
    return " " * (prompt_width - 4) + "... "


def _shown(ch: str) -> str:
    if ch == "\t":
        return " " * char_width(ch)
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return "^" + chr((ord(ch) + 64) % 128)  # (the buffer holds none; shown, not sent, if it did)
    return ch


def _width(ch: str) -> int:
    return 2 if ord(ch) < 0x20 or ord(ch) == 0x7F else char_width(ch)


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


def layout(prompt: str, continuation: str, text: str, cursor: int, cols: int, max_rows: int = 0) -> Layout:
    """The rows of `prompt` + `text` on a terminal `cols` wide (see the module docstring);
    `max_rows` > 0 cuts it to that many rows around the cursor."""
    cols = max(cols, visible_width(prompt) + 2, visible_width(continuation) + 2, 4)
    rows: list[Row] = []
    crow, ccol = 0, 0
    pos = 0
    for n, line in enumerate(text.split("\n")):
        prefix = prompt if n == 0 else continuation
        col = visible_width(prefix)
        content: list[str] = []
        for i, ch in enumerate(line):
            w = _width(ch)
            if col + w > cols:  # break the row before this character
                rows.append(Row(prefix, "".join(content)))
                prefix, content, col = "", [], 0
            if pos + i == cursor:
                crow, ccol = len(rows), col
            content.append(_shown(ch))
            col += w
        if col >= cols:  # the row is full: the line's end is on an empty row below
            rows.append(Row(prefix, "".join(content)))
            prefix, content, col = "", [], 0
        if pos + len(line) == cursor:
            crow, ccol = len(rows), col
        rows.append(Row(prefix, "".join(content)))
        pos += len(line) + 1
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
        if first == len(old.rows):  # rows were added below: continue after the last one
            out, start_col = _move(old.row, first - 1, 0), -2
        else:
            was, now = old.rows[first], new.rows[first]
            if was.prefix == now.prefix:
                keep = _common(was.content, now.content)
                start_col = keep
                out = _move(old.row, first, visible_width(now.prefix) + _width_of(now.content[:keep])) + "\x1b[J"
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


def _width_of(shown: str) -> int:
    return sum(char_width(ch) for ch in shown)


def end_of(shown: Layout) -> str:
    """From `shown`'s cursor to the start of the row below its last row (where output that
    follows a finished read begins)."""
    return _move(shown.row, len(shown.rows) - 1, 0) + "\r\n"
