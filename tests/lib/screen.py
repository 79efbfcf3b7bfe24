"""A small terminal screen for tests: what an xterm shows after some output.

It knows what kward's line editor writes: printable text (wide characters take two
cells; a combining mark joins the cell left of the cursor, as xterm's does; at the right
margin the cursor waits in the "pending wrap" state and the next character wraps, as
xterm's autowrap does), CR, LF (with the tty's output processing: LF
also returns the carriage), and the CSI sequences `A` `B` `C` `D` (cursor moves, clamped
to the screen), `J` (erase below, 0 only), `K` (erase to the end of the row), `H` (home)
and `2J`; `m` (styles) and `?2004h/l` are ignored. A row written past the bottom scrolls
the screen up. Pure Python, any thread.
"""

from __future__ import annotations

import re

from kward.terminal.textwidth import char_width

_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


class Screen:
    def __init__(self, cols: int, rows: int = 60):
        self.cols, self.rows = cols, rows
        self.cells = [[" "] * cols for _ in range(rows)]
        self.row = self.col = 0
        self.pending = False  # the cursor is past the last column: the next character wraps
        self.scrolled = 0

    def lines(self) -> list[str]:
        """The rows, trailing blanks and blank rows at the bottom left out."""
        out = ["".join(cell for cell in row).rstrip() for row in self.cells]
        while out and not out[-1]:
            out.pop()
        return out

    @property
    def cursor(self) -> tuple[int, int]:
        return self.row, self.col

    def _down(self) -> None:
        if self.row == self.rows - 1:
            self.cells.pop(0)
            self.cells.append([" "] * self.cols)
            self.scrolled += 1
        else:
            self.row += 1

    def _put(self, ch: str) -> None:
        w = char_width(ch)
        if w == 0:  # (a combining mark: onto the character before the cursor)
            col = self.cols - 1 if self.pending else self.col - 1
            if col > 0 and self.cells[self.row][col] == "":
                col -= 1  # (the right half of a wide character)
            if col >= 0:
                self.cells[self.row][col] += ch
            return
        if self.pending or self.col + w > self.cols:
            self.col, self.pending = 0, False
            self._down()
        self.cells[self.row][self.col] = ch
        if w == 2:
            self.cells[self.row][self.col + 1] = ""
        self.col += w
        if self.col >= self.cols:
            self.col, self.pending = self.cols - 1, True

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            m = _CSI.match(text, i)
            if m:
                self._csi(m.group(1), m.group(2))
                i = m.end()
                continue
            ch = text[i]
            i += 1
            if ch == "\r":
                self.col, self.pending = 0, False
            elif ch == "\n":
                self.col, self.pending = 0, False
                self._down()
            elif ch >= " ":
                self._put(ch)

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?") or final == "m":
            return
        n = int(params.split(";")[0] or 1) if final in "ABCD" else 0
        self.pending = False
        if final == "A":
            self.row = max(0, self.row - n)
        elif final == "B":
            self.row = min(self.rows - 1, self.row + n)
        elif final == "C":
            self.col = min(self.cols - 1, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "H":
            self.row = self.col = 0
        elif final == "J":
            if params == "2":
                self.cells = [[" "] * self.cols for _ in range(self.rows)]
                return
            self.cells[self.row][self.col:] = [" "] * (self.cols - self.col)
            for r in range(self.row + 1, self.rows):
                self.cells[r] = [" "] * self.cols
        elif final == "K":
            self.cells[self.row][self.col:] = [" "] * (self.cols - self.col)
