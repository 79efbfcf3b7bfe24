"""How wide text is on a terminal, and text made safe to print there.

`display_width` counts the columns a string takes (an east-asian wide or full-width
character counts 2, a combining mark or a format character 0; ANSI style sequences 0);
`cut` shortens plain text to a number of columns; `printable` turns text from a program
(a command's output, a file's lines) into plain text for one line: its ANSI sequences and
control characters removed, tabs expanded, and of a line redrawn with carriage returns
(a progress bar) only what was drawn last. Pure functions; any thread.
"""

from __future__ import annotations

import re
import unicodedata

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def char_width(ch: str) -> int:
    """The columns one character takes."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The columns `text` takes on a terminal (its ANSI style sequences take none)."""
    plain = ANSI.sub("", text)
    if plain.isascii():
        return len(plain)
    return sum(char_width(ch) for ch in plain)


def cut(text: str, width: int, ellipsis: str = "...") -> str:
    """Plain `text` shortened to at most `width` columns, ending with `ellipsis` when cut."""
    if display_width(text) <= width:
        return text
    room = max(0, width - display_width(ellipsis))
    used, end = 0, 0
    for end, ch in enumerate(text):
        w = char_width(ch)
        if used + w > room:
            break
        used += w
    else:
        end = len(text)
    return text[:end] + ellipsis


def printable(line: str) -> str:
    """One line of a program's output as plain text (see the module docstring)."""
    line = ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    return _CONTROL.sub("", line.expandtabs(4))
