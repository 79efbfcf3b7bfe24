"""How wide text is on a terminal, and text from elsewhere made safe to print there.

`char_width` and `display_width` count the columns text takes (an east-asian wide or
full-width character counts 2, a combining mark or a format character 0, a tab
`TAB_WIDTH`; the ANSI sequences matched by `ANSI`, kward's own styles, 0); `cut` shortens
text to a number of columns, keeping its style sequences. Every terminal module measures
with these.

`clean` is the one way text that kward did not write itself (the model's answer,
reasoning, tool arguments and questions, a provider's error, a session's name) is made
safe for a terminal: every escape sequence (CSI, OSC, DCS and the other string
sequences, the two-character ones; also their 8-bit C1 forms) and every other C0 or C1
control character is removed, a carriage return too; newlines and tabs are kept. A
string sequence (an OSC 52 clipboard write, say) ends at its terminator or at the end of
its line, so an unterminated one swallows no more than its own line. `Cleaner` is the same
for a stream that arrives in pieces: `feed` returns what a piece makes printable and holds
nothing back (what belongs to an escape is dropped as it comes), so the pieces' cleaned
texts join to `clean` of the whole however it was split.

`printable` shows one line of a program's output (a command's, a file's) as a terminal
would: after a carriage return the line is overwritten from its start (`abc\\rxy` shows
`xyc`, a progress bar its last state), then cleaned, tabs expanded.

Pure functions, and `Cleaner` instances owned by one thread; any thread.
"""

from __future__ import annotations

import re
import unicodedata

TAB_WIDTH = 4  # a tab is shown as this many spaces

#: An ANSI escape sequence as kward's styles and a prompt's colours are (widths skip them).
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
RESET = "\x1b[0m"

_SPECIAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what `clean` acts on (not \t, \n)
_STRING_END = re.compile(r"[\x07\x1b\n\x9c]")
_CSI_BODY = re.compile(r"[ -?]*")  # parameter and intermediate bytes
_ESC_INTERMEDIATE = re.compile(r"[ -/]*")

# Cleaner states: what the text seen last is inside of.
_TEXT, _ESC, _CSI, _NF, _STRING, _STRING_ESC = range(6)
_STRING_INTRODUCERS = "P]X^_"  # after ESC: DCS, OSC, SOS, PM, APC (terminated by BEL or ST)
_C1_STRINGS = "\x90\x9d\x98\x9e\x9f"


def char_width(ch: str) -> int:
    """The columns one character takes on a terminal: 2 for east-asian wide and
    full-width characters, 0 for combining marks and format characters, `TAB_WIDTH` for
    a tab, else 1."""
    if ch == "\t":
        return TAB_WIDTH
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The columns `text` takes on a terminal (its ANSI style sequences take none)."""
    plain = ANSI.sub("", text)
    if plain.isascii() and "\t" not in plain:
        return len(plain)
    return sum(char_width(ch) for ch in plain)


def cut(text: str, width: int, ellipsis: str = "...") -> str:
    """`text` shortened to at most `width` columns, ending with `ellipsis` when cut; its
    style sequences are kept (and closed after the ellipsis)."""
    if display_width(text) <= width:
        return text
    room = max(0, width - display_width(ellipsis))
    out: list[str] = []
    used, styled, pos = 0, False, 0
    for m in [*ANSI.finditer(text), None]:
        stop = len(text) if m is None else m.start()
        for at in range(pos, stop):
            w = char_width(text[at])
            if used + w > room:
                return "".join(out) + ellipsis + (RESET if styled else "")
            out.append(text[at])
            used += w
        if m is not None:
            out.append(m.group())
            styled, pos = True, m.end()
    return "".join(out) + ellipsis + (RESET if styled else "")  # (not reached: the text was too wide)


class Cleaner:
    """`clean` for text arriving in pieces (see the module docstring)."""

    def __init__(self) -> None:
        self._state = _TEXT

    def feed(self, text: str) -> str:
        """The printable part of `text`, the next piece of the stream."""
        out: list[str] = []
        i, n, state = 0, len(text), self._state
        while i < n:
            if state == _TEXT:
                m = _SPECIAL.search(text, i)
                if m is None:
                    out.append(text[i:])
                    break
                out.append(text[i:m.start()])
                ch, i = m.group(), m.end()
                state = _ESC if ch == "\x1b" else _CSI if ch == "\x9b" else _STRING if ch in _C1_STRINGS else _TEXT
            elif state == _ESC:
                ch = text[i]
                if ch == "[":
                    state, i = _CSI, i + 1
                elif ch in _STRING_INTRODUCERS:
                    state, i = _STRING, i + 1
                elif " " <= ch <= "/":
                    state, i = _NF, i + 1
                elif "0" <= ch <= "~":
                    state, i = _TEXT, i + 1  # a two-character sequence
                elif ch == "\x1b":
                    i += 1  # ESC ESC: the first one is dropped
                else:
                    state = _TEXT  # not a sequence: the ESC is dropped, `ch` read as text
            elif state in (_CSI, _NF):
                body = (_CSI_BODY if state == _CSI else _ESC_INTERMEDIATE).match(text, i)
                i = body.end() if body else i  # (it always matches, maybe nothing)
                if i == n:
                    break
                final = "@" <= text[i] <= "~" if state == _CSI else "0" <= text[i] <= "~"
                state, i = _TEXT, i + 1 if final else i  # an aborted one: what follows is text again
            elif state == _STRING:
                m = _STRING_END.search(text, i)
                if m is None:
                    break
                i = m.end()
                if m.group() == "\x1b":
                    state = _STRING_ESC
                else:
                    state = _TEXT
                    if m.group() == "\n":
                        out.append("\n")
            else:  # _STRING_ESC
                if text[i] == "\\":
                    state, i = _TEXT, i + 1  # ST
                else:
                    state = _ESC  # ESC begins another sequence
        self._state = state
        return "".join(out)


def clean(text: str) -> str:
    """`text` without escape sequences and control characters but newlines and tabs (see
    the module docstring)."""
    if text.isprintable():
        return text
    return Cleaner().feed(text)


def printable(line: str) -> str:
    """One line of a program's output as plain text (see the module docstring)."""
    shown = ""
    for part in line.split("\r"):
        part = clean(part).expandtabs(TAB_WIDTH)
        shown = part + shown[len(part):]
    return shown
