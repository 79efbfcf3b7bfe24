"""An answer's Markdown rendered for a terminal as it streams, a line at a time.

`MarkdownStream(style, unicode=..., width=...)`: `feed(delta)` takes the next piece of
the answer and returns the rendered text of every line the piece completed; `finish()`
renders the partial last line, closes whatever was still open (an unclosed fence ends
cleanly, a held table is printed) and makes the stream ready for the next message. A line
is rendered once, when its newline arrives, and never redrawn. Two things are held back:
a table until its last row (its column widths need every row), and a line holding `|`
until the next line says whether it is a table's header.

What is rendered: ATX headings (bold and coloured, no `#` markers); `**strong**` bold,
`*em*`/`_em_` italic, `~~strike~~`, inline `code` in the code style; bullet lists (`•`,
nested `◦` and `▪`; `-` without UTF-8) and numbered lists, nested by indentation; block
quotes behind a dim `│ ` bar (`> ` without UTF-8); links `[text](url)` as `text (url)`
with the URL dim and underlined (bare URLs and `<url>` autolinks are left as written);
horizontal rules; fenced code (``` or ~~~, any length) without its fence lines: a dim
header naming the language (`── python`), then each line indented two spaces in the code
style, nothing inside interpreted; GitHub tables aligned by display width with a bold
header, a `─` rule under it and the `:---:` alignments honoured. CRLF line ends are read
as LF.

For a stream that gets colours only: the caller (kward.terminal.render.TurnView) writes
the answer exactly as the model wrote it when colours are off. Pure (no I/O); one instance
per view, used by the one thread that renders the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from kward.terminal.style import Style
from kward.terminal.textwidth import display_width

RESET = "\x1b[0m"
CODE_STYLE = ("cyan",)
HEADING_STYLES = {1: ("bold", "magenta", "underline"), 2: ("bold", "magenta")}
HEADING_STYLE = ("bold", "yellow")
RULE_WIDTH = 60

_FENCE_OPEN = re.compile(r"(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*?)[ \t]*\Z")
_FENCE_CLOSE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*\Z")
_HEADING = re.compile(r" {0,3}(?P<marks>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_RULE = re.compile(r" {0,3}([-*_])[ \t]*(?:\1[ \t]*){2,}\Z")
_QUOTE = re.compile(r" {0,3}>[ \t]?")
_ITEM = re.compile(r"(?P<indent>[ \t]*)(?P<marker>[-*+]|\d{1,9}[.)])(?:[ \t]+(?P<text>.*))?\Z")
_TASK = re.compile(r"\[(?P<mark>[ xX])\][ \t]+")
_DELIMITER_CELL = re.compile(r"[ \t]*(?P<left>:?)-+(?P<right>:?)[ \t]*\Z")

_INLINE = re.compile(r"""
    (?P<code>(?P<ticks>`+)(?P<code_text>.+?)(?<!`)(?P=ticks)(?!`))
  | \\(?P<escaped>[!-/:-@\[-`{-~])
  | (?P<autolink><(?:https?|ftp|mailto):[^\s<>]+>)
  | !?\[(?P<link_text>[^\]]*)\]\((?P<href>[^)\s]+)(?:[ \t]+"[^"]*")?\)
  | (?P<url>\b(?:https?|ftp)://[^\s<>]*[^\s<>.,;:!?)\]'"*_~])
  | \*\*(?=\S)(?P<strong>.+?)(?<=\S)\*\*
  | (?<!\w)__(?=\S)(?P<strong2>.+?)(?<=\S)__(?!\w)
  | ~~(?=\S)(?P<strike>.+?)(?<=\S)~~
  | \*(?=[^\s*])(?P<em>.+?)(?<=[^\s*])\*
  | (?<![\w_])_(?=[^\s_])(?P<em2>.+?)(?<=[^\s_])_(?![\w_])
""", re.X)


def span(style: Style, text: str, *names: str) -> str:
    """`text` in the styles `names`, kept through the styled pieces already inside it
    (their reset is followed by this span's opening again)."""
    styled = style(text, *names)
    if styled == text:
        return text
    opening = styled[:styled.index("m") + 1]
    return opening + text.replace(RESET, RESET + opening) + RESET


def inline(text: str, style: Style) -> str:
    """One line's inline Markdown rendered (see the module docstring)."""
    out: list[str] = []
    end = 0
    for m in _INLINE.finditer(text):
        out.append(text[end:m.start()])
        end = m.end()
        groups = m.groupdict()
        if groups["code"] is not None:
            body = groups["code_text"]
            if len(body) > 2 and body.startswith(" ") and body.endswith(" "):
                body = body[1:-1]
            out.append(span(style, body, *CODE_STYLE))
        elif groups["escaped"] is not None:
            out.append(groups["escaped"])
        elif groups["autolink"] is not None or groups["url"] is not None:
            out.append(m.group())
        elif groups["href"] is not None:
            href, label = groups["href"], groups["link_text"]
            url = span(style, href, "dim", "underline")
            out.append(url if label in ("", href, href.removeprefix("mailto:")) else f"{inline(label, style)} ({url})")
        elif groups["strong"] is not None or groups["strong2"] is not None:
            out.append(span(style, inline(groups["strong"] or groups["strong2"], style), "bold"))
        elif groups["strike"] is not None:
            out.append(span(style, inline(groups["strike"], style), "strike"))
        else:
            out.append(span(style, inline(groups["em"] or groups["em2"], style), "italic"))
    out.append(text[end:])
    return "".join(out)


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
    """A GitHub table being read: its header, alignments and body rows (raw cells)."""

    header: list[str]
    alignments: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def render(self, style: Style, unicode: bool) -> list[str]:
        rows = [[inline(cell, style) for cell in row] for row in [self.header, *self.rows]]
        columns = max(len(row) for row in rows)
        for row in rows:
            row.extend([""] * (columns - len(row)))
        alignments = self.alignments + ["left"] * (columns - len(self.alignments))
        widths = [max(display_width(row[c]) for row in rows) for c in range(columns)]

        def line(row: list[str]) -> str:
            return "  ".join(_pad(cell, widths[c], alignments[c]) for c, cell in enumerate(row)).rstrip()

        rule = span(style, "  ".join(("\u2500" if unicode else "-") * w for w in widths), "dim")
        return [line([span(style, cell, "bold") for cell in rows[0]]), rule, *(line(row) for row in rows[1:])]


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
        self._partial = ""
        self._fence: _Fence | None = None
        self._table: Table | None = None
        self._held: str | None = None  # a line holding `|`: a table's header, or not
        self._indents: list[int] = []  # the indentation of each open list level

    def feed(self, delta: str) -> str:
        """The rendered text of the lines `delta` completed (each ending with a newline)."""
        text = self._partial + delta
        lines = text.split("\n")
        self._partial = lines.pop()
        return self._join(out for line in lines for out in self._line(line.removesuffix("\r")))

    def finish(self) -> str:
        """The partial last line rendered and everything still held or open closed; the
        stream starts afresh afterwards."""
        partial, self._partial = self._partial, ""
        out = self._line(partial.removesuffix("\r")) if partial else []
        out += self._flush_held()
        self._fence = None
        self._indents = []
        return self._join(out)

    @staticmethod
    def _join(lines: Iterable[str]) -> str:
        return "".join(f"{line}\n" for line in lines)

    # --- block structure --------------------------------------------------------------

    def _line(self, line: str) -> list[str]:
        if self._fence is not None:
            return self._code_line(line)
        if self._table is not None:
            if line.strip() and "|" in line:
                self._table.rows.append(split_row(line))
                return []
            return self._flush_held() + self._line(line)
        if self._held is not None:
            header, self._held = self._held, None
            alignments = delimiter_row(line)
            cells = split_row(header)
            if alignments is not None and len(alignments) == len(cells):
                self._table = Table(cells, alignments)
                return []
            return self._block(header) + self._line(line)
        if "|" in line and line.strip() and self._may_head_table(line):
            self._held = line
            return []
        return self._block(line)

    def _may_head_table(self, line: str) -> bool:
        return not (_FENCE_OPEN.match(line) or _HEADING.match(line) or _QUOTE.match(line) or _RULE.match(line))

    def _flush_held(self) -> list[str]:
        out: list[str] = []
        if self._table is not None:
            out = self._table.render(self.style, self.unicode)
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
        quote = _QUOTE.match(line)
        if quote:
            depth, rest = 0, line
            while quote:
                depth, rest = depth + 1, rest[quote.end():]
                quote = _QUOTE.match(rest)
            bar = span(style, ("\u2502 " if self.unicode else "> ") * depth, "dim")
            return [bar + inline(rest, style)]
        item = _ITEM.match(line)
        if item:
            return [self._item(item)]
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            self._indents = []
        return [line[:indent] + inline(line[indent:], style)]

    def _item(self, item: re.Match[str]) -> str:
        indent = len(item.group("indent").expandtabs(4))
        while self._indents and indent < self._indents[-1]:
            self._indents.pop()
        if not self._indents or indent > self._indents[-1]:
            self._indents.append(indent)
        level = len(self._indents) - 1
        marker = item.group("marker")
        if marker in "-*+":
            marker = ("\u2022", "\u25e6", "\u25aa")[min(level, 2)] if self.unicode else "-"
        text = item.group("text") or ""
        task = _TASK.match(text)
        if task:
            done = task.group("mark") != " "
            box = ("\u2611" if done else "\u2610") if self.unicode else ("[x]" if done else "[ ]")
            text = f"{box} {text[task.end():]}"
        return f"{'  ' * level}{marker} {inline(text, self.style)}"
