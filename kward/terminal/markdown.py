"""An answer's Markdown rendered for a terminal as it streams.

`MarkdownStream(style, unicode=..., width=...)`: `feed(delta)` takes the next piece of
the answer and returns the rendered text it makes ready; `finish()` renders what is left
of the last line, closes whatever was still open (an unclosed fence ends cleanly, a held
table is printed) and makes the stream ready for the next message. Nothing is redrawn.

A paragraph line, a list item's text and a quote's text are written word by word while
the line arrives: once its first characters say what the line is (a list item's marker
and task box, a quote's bars, or plain text), the longest part that ends at a space and
leaves no inline construct open (kward.terminal.mdinline.stable_end) is written, and the
rest at the next word or at the newline; the concatenation is exactly the rendering of the
whole line. Every other line is written when its newline arrives: a heading, a rule, a
fence line, a code line, a line beginning with `|` (a table's header, or not: it is
held until the next line says), a line that is still too short to tell (`1`, `- `,
`#`, two backticks), and a line whose beginning is still undecided or whose unwritten
rest is still open after `HOLD_LIMIT` characters. A table is held until its last row (its
column widths need every row). Each delta costs time in proportion to its own length
(a line is kept as its pieces until its newline), so a long answer or a long line renders
in linear time.

What is rendered: ATX headings (bold and coloured, no `#` markers); the inline Markdown
of kward.terminal.mdinline (emphasis, strike, code, links with their URL); bullet lists
(`•`, nested `◦` and `▪`; `-` without UTF-8) and numbered lists, nested by indentation,
task boxes; block quotes behind a dim `│ ` bar (`> ` without UTF-8); horizontal rules;
fenced code (``` or ~~~, any length) without its fence lines: a dim header naming the
language (`── python`), then each line indented two spaces in the code style, nothing
inside interpreted; GitHub tables whose header row begins with `|`, aligned by display
width with a bold header, a `─` rule under it and the `:---:` alignments honoured; a
table wider than the stream has its widest columns cut (their cells end with an
ellipsis) until its rows fit, and one with too many columns to fit even so is written as
its rows were. CRLF line ends are read as LF.

Everything is made safe for a terminal first (kward.terminal.textwidth.Cleaner: the
model's escape sequences and control characters are dropped as they arrive), so the only
escapes written are the renderer's own styles.

For a stream that gets colours only: the caller (kward.terminal.render.TurnView) writes
the answer exactly as the model wrote it when colours are off. Pure (no I/O); one instance
per view, used by the one thread that renders the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from kward.terminal.mdinline import CODE_STYLE, inline, span, stable_end
from kward.terminal.style import Style
from kward.terminal.textwidth import Cleaner, cut, display_width

HEADING_STYLES = {1: ("bold", "magenta", "underline"), 2: ("bold", "magenta")}
HEADING_STYLE = ("bold", "yellow")
RULE_WIDTH = 60
HOLD_LIMIT = 400  # a line's unwritten characters (a construct left open) from which it waits for its newline
COLUMN_GAP = 2  # spaces between a table's columns

_FENCE_OPEN = re.compile(r"(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*?)[ \t]*\Z")
_FENCE_CLOSE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*\Z")
_HEADING = re.compile(r" {0,3}(?P<marks>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_RULE = re.compile(r" {0,3}([-*_])[ \t]*(?:\1[ \t]*){2,}\Z")
_QUOTE = re.compile(r" {0,3}>[ \t]?")
_ITEM = re.compile(r"(?P<indent>[ \t]*)(?P<marker>[-*+]|\d{1,9}[.)])(?:[ \t]+(?P<text>.*))?\Z")
_TASK = re.compile(r"\[(?P<mark>[ xX])\][ \t]+")
_DELIMITER_CELL = re.compile(r"[ \t]*(?P<left>:?)-+(?P<right>:?)[ \t]*\Z")
_BREAK = re.compile(r"[ \t]")
_TABLE_HEAD = re.compile(r"[ \t]*\|")
_DELIMITER_CHARS = re.compile(r"[ \t|:-]*")
# The beginning of a line that is not written before its newline, or not yet.
_HOLD = re.compile(r"""
    \s*\Z                                           # blank so far
  | [ \t]*(?:`{1,2}|~{1,2})\Z | [ \t]*(?:`{3}|~{3})  # a fence, maybe
  | \ {0,3}\#{1,6}(?:[ \t]|\Z)                       # a heading, maybe
  | \ {0,3}([-*_])[ \t]*(?:\1[ \t]*)*\Z              # a rule, maybe
  | [ \t]*\|                                         # a table's header, maybe
  | (?:\ {0,3}>[ \t]?)+[ \t]*\Z                       # a quote's bars, and maybe more
  | [ \t]*(?:[-*+]|\d{1,9}[.)]?)\Z                    # a list item's marker, maybe
  | [ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[(?:[ xX](?:\][ \t]*)?)?)?\Z  # an item, its task box maybe
""", re.X)


def split_row(line: str) -> list[str]:
    """A table row's cells: split on `|` outside code spans (`\\|` is a literal bar), the
    outer bars dropped, each cell stripped."""
    cells, current = [], []
    i, ticks = 0, 0  # ticks: the length of the open code span's backtick run (0: none)
    while i < len(line):
        ch = line[i]
        if ch == "\\" and line[i + 1:i + 2] == "|":
            current.append("|" if ticks == 0 else "\\|")
            i += 2
            continue
        if ch == "`":
            run = len(line) - i - len(line[i:].lstrip("`"))
            if ticks == 0:
                ticks = run
            elif run == ticks:
                ticks = 0
            current.append("`" * run)
            i += run
            continue
        if ch == "|" and ticks == 0:
            cells.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    cells.append("".join(current))
    stripped = line.strip()
    if stripped.startswith("|") and cells and not cells[0].strip():
        cells.pop(0)
    if stripped.endswith("|") and not stripped.endswith("\\|") and cells and not cells[-1].strip():
        cells.pop()
    return [c.strip() for c in cells]


def delimiter_row(line: str) -> list[str] | None:
    """A table's delimiter row (`| --- | :---: | ---: |`) as one alignment per column
    ("left", "center", "right"); None when `line` is not one."""
    if "-" not in line or "|" not in line:
        return None
    alignments = []
    for cell in split_row(line):
        m = _DELIMITER_CELL.match(cell)
        if m is None:
            return None
        left, right = bool(m.group("left")), bool(m.group("right"))
        alignments.append("center" if left and right else "right" if right else "left")
    return alignments or None


@dataclass(slots=True)
class Table:
    """A GitHub table being read: its header, alignments and body rows (raw cells), and
    its lines as they were written."""

    header: list[str]
    alignments: list[str]
    rows: list[list[str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def render(self, style: Style, unicode: bool, width: int) -> list[str]:
        """The table aligned in at most `width` columns (see the module docstring)."""
        rows = [[inline(cell, style) for cell in row] for row in [self.header, *self.rows]]
        columns = max(len(row) for row in rows)
        for row in rows:
            row.extend([""] * (columns - len(row)))
        alignments = self.alignments + ["left"] * (columns - len(self.alignments))
        ellipsis = "\u2026" if unicode else "..."
        widths = fit([max(display_width(row[c]) for row in rows) for c in range(columns)], width,
                     least=display_width(ellipsis) + 2)
        if widths is None:
            return list(self.lines)
        gap = " " * COLUMN_GAP

        def line(row: list[str]) -> str:
            return gap.join(_pad(cut(cell, widths[c], ellipsis), widths[c], alignments[c])
                            for c, cell in enumerate(row)).rstrip()

        rule = span(style, gap.join(("\u2500" if unicode else "-") * w for w in widths), "dim")
        return [line([span(style, cell, "bold") for cell in rows[0]]), rule, *(line(row) for row in rows[1:])]


def fit(widths: list[int], room: int, *, least: int) -> list[int] | None:
    """Column widths that fit in `room` columns with their gaps: `widths` themselves when
    they fit, else the widest cut down to one limit (the largest that fits; the columns
    left over shared among the cut ones); None when even `least` columns each (or less,
    for a narrower column) would not fit."""
    budget = room - COLUMN_GAP * (len(widths) - 1)
    if sum(widths) <= budget:
        return widths
    if sum(min(w, least) for w in widths) > budget:
        return None
    low, high = least, max(widths)
    while low < high:
        limit = (low + high + 1) // 2
        if sum(min(w, limit) for w in widths) <= budget:
            low = limit
        else:
            high = limit - 1
    fitted = [min(w, low) for w in widths]
    spare = budget - sum(fitted)
    for c, w in enumerate(widths):
        if spare and w > fitted[c]:
            fitted[c] += 1
            spare -= 1
    return fitted


def _pad(cell: str, width: int, alignment: str) -> str:
    room = width - display_width(cell)
    if alignment == "right":
        return " " * room + cell
    if alignment == "center":
        return " " * (room // 2) + cell + " " * (room - room // 2)
    return cell + " " * room


@dataclass(slots=True)
class _Fence:
    char: str
    length: int
    indent: int


class MarkdownStream:
    """Renders one answer as it streams (see the module docstring)."""

    def __init__(self, style: Style, *, unicode: bool = True, width: int = 80):
        self.style = style
        self.unicode = unicode
        self.width = width
        self._cleaner = Cleaner()
        self._parts: list[str] = []  # what arrived of the line being received and is not written yet
        self._size = 0  # the characters in `_parts`
        self._started = False  # the line's beginning is written (its lead, maybe words)
        self._waiting = False  # the line is written when its newline comes
        self._seen = 0  # how much of `_parts` was looked at for a place to cut
        self._fence: _Fence | None = None
        self._table: Table | None = None
        self._held: str | None = None  # a line beginning with `|`: a table's header, or not
        self._indents: list[int] = []  # the indentation of each open list level

    def feed(self, delta: str) -> str:
        """The rendered text `delta` makes ready: the rest of each line it completed
        (each ending with a newline), and what can be written of the line still arriving."""
        delta = self._cleaner.feed(delta)
        out: list[str] = []
        start = 0
        while (newline := delta.find("\n", start)) >= 0:
            self._parts.append(delta[start:newline])
            out.append(self._complete(self._take()))
            start = newline + 1
        if start < len(delta):
            self._parts.append(delta[start:])
            self._size += len(delta) - start
            out.append(self._stream())
        return "".join(out)

    def finish(self) -> str:
        """The rest of the last line rendered and everything still held or open closed;
        the stream starts afresh afterwards."""
        self._cleaner = Cleaner()
        partial = self._take()
        out = self._complete(partial) if partial or self._started else ""
        self._waiting = False
        out += self._join(self._flush_held())
        self._fence = None
        self._indents = []
        return out

    def _take(self) -> str:
        """What `_parts` holds, as one string; `_parts` emptied."""
        text = "".join(self._parts)
        self._parts, self._size = [], 0
        return text

    @staticmethod
    def _join(lines: Iterable[str]) -> str:
        return "".join(f"{line}\n" for line in lines)

    # --- streaming --------------------------------------------------------------------

    def _complete(self, line: str) -> str:
        """A whole line (`_parts` taken, its newline come): rendered, or (when its
        beginning was written) the rest of it."""
        started = self._started
        self._started, self._waiting, self._seen = False, False, 0
        if not started:
            return self._join(self._line(line))
        return inline(line, self.style) + "\n"

    def _stream(self) -> str:
        """What can be written of the line still arriving (see the module docstring)."""
        if self._waiting:
            return ""
        out = ""
        if not self._started:
            if self._fence is not None or self._table is not None or self._size > HOLD_LIMIT:
                self._waiting = True  # a code line, a table row, a beginning undecided that long
                return ""
            line = "".join(self._parts)
            if self._held is not None:
                if _DELIMITER_CHARS.fullmatch(line):
                    return ""  # maybe the held line's table's delimiter row
                header, self._held = self._held, None
                out = self._join(self._block(header))
            if _HOLD.match(line):
                return out
            lead, start = self._lead(line)
            self._started = True
            self._parts, self._size = [line[start:]], len(line) - start
            out += lead
        if self._size >= HOLD_LIMIT:
            self._waiting = True  # a construct open that long waits for the newline
            return out
        pending = "".join(self._parts)
        if not _BREAK.search(pending, self._seen):
            self._seen = len(pending)
            return out  # no new space, no new cut
        end = stable_end(pending)
        out += inline(pending[:end], self.style)
        rest = pending[end:]
        self._parts, self._size, self._seen = [rest], len(rest), len(rest)
        return out

    # --- block structure --------------------------------------------------------------

    def _line(self, line: str) -> list[str]:
        if self._fence is not None:
            return self._code_line(line)
        if self._table is not None:
            if line.strip() and "|" in line:
                self._table.rows.append(split_row(line))
                self._table.lines.append(line)
                return []
            return self._flush_held() + self._line(line)
        if self._held is not None:
            header, self._held = self._held, None
            alignments = delimiter_row(line)
            cells = split_row(header)
            if alignments is not None and len(alignments) == len(cells):
                self._table = Table(cells, alignments, lines=[header, line])
                return []
            return self._block(header) + self._line(line)
        if _TABLE_HEAD.match(line):
            self._held = line
            return []
        return self._block(line)

    def _flush_held(self) -> list[str]:
        out: list[str] = []
        if self._table is not None:
            out = self._table.render(self.style, self.unicode, self.width)
            self._table = None
        if self._held is not None:
            held, self._held = self._held, None
            out += self._block(held)
        return out

    def _code_line(self, line: str) -> list[str]:
        fence = self._fence
        assert fence is not None
        close = _FENCE_CLOSE.match(line)
        if close and close.group("fence")[0] == fence.char and len(close.group("fence")) >= fence.length:
            self._fence = None
            return []
        strip = len(line) - len(line.lstrip(" "))
        code = line[min(strip, fence.indent):]
        return ["  " + span(self.style, code, *CODE_STYLE) if code else ""]

    def _block(self, line: str) -> list[str]:
        style = self.style
        fence = _FENCE_OPEN.match(line)
        if fence and not (fence.group("fence")[0] == "`" and "`" in fence.group("info")):
            marker = fence.group("fence")
            self._fence = _Fence(marker[0], len(marker), len(fence.group("indent").expandtabs(4)))
            language = fence.group("info").split()[0] if fence.group("info").split() else ""
            bar = "\u2500\u2500" if self.unicode else "--"
            return [span(style, f"{bar} {language}".rstrip(), "dim")]
        if not line.strip():
            return [""]
        heading = _HEADING.match(line)
        if heading:
            self._indents = []
            level = len(heading.group("marks"))
            return [span(style, inline(heading.group("text") or "", style), *HEADING_STYLES.get(level, HEADING_STYLE))]
        if _RULE.match(line):
            self._indents = []
            return [span(style, ("\u2500" if self.unicode else "-") * min(self.width, RULE_WIDTH), "dim")]
        lead, start = self._lead(line)
        return [lead + inline(line[start:], style)]

    def _lead(self, line: str) -> tuple[str, int]:
        """A quote's bars, a list item's marker (and task box) or a paragraph's indentation
        rendered, and where the line's inline text begins; the list nesting updated."""
        quote = _QUOTE.match(line)
        if quote:
            depth, rest = 0, line
            while quote:
                depth, rest = depth + 1, rest[quote.end():]
                quote = _QUOTE.match(rest)
            return span(self.style, ("\u2502 " if self.unicode else "> ") * depth, "dim"), len(line) - len(rest)
        item = _ITEM.match(line)
        if item:
            return self._item(item)
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            self._indents = []
        return line[:indent], indent

    def _item(self, item: re.Match[str]) -> tuple[str, int]:
        indent = len(item.group("indent").expandtabs(4))
        while self._indents and indent < self._indents[-1]:
            self._indents.pop()
        if not self._indents or indent > self._indents[-1]:
            self._indents.append(indent)
        level = len(self._indents) - 1
        marker = item.group("marker")
        if marker in "-*+":
            marker = ("\u2022", "\u25e6", "\u25aa")[min(level, 2)] if self.unicode else "-"
        lead = f"{'  ' * level}{marker} "
        if item.group("text") is None:
            return lead, item.end()
        start = item.start("text")
        task = _TASK.match(item.group("text"))
        if task:
            done = task.group("mark") != " "
            box = ("\u2611" if done else "\u2610") if self.unicode else ("[x]" if done else "[ ]")
            lead, start = f"{lead}{box} ", start + task.end()
        return lead, start
