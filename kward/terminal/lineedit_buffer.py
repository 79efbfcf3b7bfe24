"""The line editor's buffer: text that may hold newlines, a cursor, and the edits on them.

`Buffer.text` is the whole input (lines separated by LF); `Buffer.cursor` an index into
it (0 ... len). The operations are the editor's keys: moves by character, word and line,
deletions, and the kills (Ctrl-K, Ctrl-U, Ctrl-W, Alt-D), which return the killed text
for the editor's yank. A character is taken with the combining marks after it (`is_mark`):
Left, Right, Backspace and Delete move over or delete the whole cluster, and a word's
marks are part of the word, so the cursor is never between a character and its marks.
Up and down keep the display column (`text_width`, wide characters counted twice) and
return False on the first or last line, where the editor turns to the history instead.

Pure; no I/O. One buffer per read, owned by the editor.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from kward.terminal.textwidth import char_width


def is_mark(ch: str) -> bool:
    """Whether `ch` is a combining mark (it goes with the character before it)."""
    return bool(unicodedata.combining(ch)) or unicodedata.category(ch) in ("Mn", "Me")


def text_width(text: str) -> int:
    return sum(char_width(ch) for ch in text)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or is_mark(ch)


@dataclass(slots=True)
class Buffer:
    """The input being edited (see the module docstring)."""

    text: str = ""
    cursor: int = 0

    def set(self, text: str, cursor: int | None = None) -> None:
        self.text = text
        self.cursor = len(text) if cursor is None else max(0, min(cursor, len(text)))

    # --- where things are -------------------------------------------------------------

    def line_start(self, at: int | None = None) -> int:
        at = self.cursor if at is None else at
        return self.text.rfind("\n", 0, at) + 1

    def line_end(self, at: int | None = None) -> int:
        at = self.cursor if at is None else at
        end = self.text.find("\n", at)
        return len(self.text) if end < 0 else end

    def on_first_line(self) -> bool:
        return "\n" not in self.text[:self.cursor]

    def on_last_line(self) -> bool:
        return "\n" not in self.text[self.cursor:]

    def first_line_end(self) -> int:
        return self.line_end(0)

    # --- edits ------------------------------------------------------------------------

    def insert(self, text: str) -> None:
        self.text = self.text[:self.cursor] + text + self.text[self.cursor:]
        self.cursor += len(text)

    def backspace(self) -> None:
        self._cut(self._before(), self.cursor)

    def delete(self) -> None:
        self._cut(self.cursor, self._after())

    def _cut(self, start: int, end: int) -> str:
        killed = self.text[start:end]
        self.text = self.text[:start] + self.text[end:]
        self.cursor = start
        return killed

    def kill_to_end(self) -> str:
        """Ctrl-K: to the end of the line; at the end of a line, the line break."""
        end = self.line_end()
        if end == self.cursor and end < len(self.text):
            end += 1
        return self._cut(self.cursor, end)

    def kill_to_start(self) -> str:
        """Ctrl-U: from the start of the line to the cursor."""
        return self._cut(self.line_start(), self.cursor)

    def kill_word_back(self) -> str:
        """Ctrl-W: the whitespace-delimited word before the cursor (and the blanks after it)."""
        start = self.cursor
        while start > 0 and self.text[start - 1].isspace():
            start -= 1
        while start > 0 and not self.text[start - 1].isspace():
            start -= 1
        return self._cut(start, self.cursor)

    def kill_word_forward(self) -> str:
        """Alt-D: to the end of the next word."""
        return self._cut(self.cursor, self._word_end())

    def kill_word_backward(self) -> str:
        """Alt-Backspace: to the start of the previous word."""
        return self._cut(self._word_start(), self.cursor)

    # --- moves ------------------------------------------------------------------------

    def _before(self) -> int:
        """Where the character before the cursor (with its marks) starts."""
        at = max(0, self.cursor - 1)
        while at > 0 and is_mark(self.text[at]):
            at -= 1
        return at

    def _after(self) -> int:
        """Where the character after the cursor (with its marks) ends."""
        at = min(len(self.text), self.cursor + 1)
        while at < len(self.text) and is_mark(self.text[at]):
            at += 1
        return at

    def left(self) -> None:
        self.cursor = self._before()

    def right(self) -> None:
        self.cursor = self._after()

    def home(self) -> None:
        self.cursor = self.line_start()

    def end(self) -> None:
        self.cursor = self.line_end()

    def _word_start(self) -> int:
        at = self.cursor
        while at > 0 and not _is_word(self.text[at - 1]):
            at -= 1
        while at > 0 and _is_word(self.text[at - 1]):
            at -= 1
        return at

    def _word_end(self) -> int:
        at = self.cursor
        while at < len(self.text) and not _is_word(self.text[at]):
            at += 1
        while at < len(self.text) and _is_word(self.text[at]):
            at += 1
        return at

    def word_left(self) -> None:
        self.cursor = self._word_start()

    def word_right(self) -> None:
        self.cursor = self._word_end()

    def up(self) -> bool:
        """To the line above at the same column; False on the first line."""
        if self.on_first_line():
            return False
        column = text_width(self.text[self.line_start():self.cursor])
        above_end = self.line_start() - 1
        self.cursor = self._at_column(self.line_start(above_end), above_end, column)
        return True

    def down(self) -> bool:
        """To the line below at the same column; False on the last line."""
        if self.on_last_line():
            return False
        column = text_width(self.text[self.line_start():self.cursor])
        below = self.line_end() + 1
        self.cursor = self._at_column(below, self.line_end(below), column)
        return True

    def _at_column(self, start: int, end: int, column: int) -> int:
        width = 0
        at = start
        while at < end and width + char_width(self.text[at]) <= column:
            width += char_width(self.text[at])
            at += 1
        return at
