"""One line's inline Markdown rendered for a terminal, and how much of a line that is
still streaming can be rendered already.

`inline(text, style)`: `**strong**` bold, `*em*`/`_em_` italic, `~~strike~~`, inline
`code` in the code style, backslash escapes, links `[text](url)` as `text (url)` with the
URL dim and underlined (bare URLs and `<url>` autolinks are left as written).

`stable_end(text)`: the length of the longest prefix of `text` (the part of a line that
has arrived) that ends after a space or a tab and leaves no inline construct open (no
backtick, `[`, `**`, `__`, `~~`, `*` or `_` that could still begin a span ending further
on). Whatever the rest of the line turns out to be, `inline(prefix) + inline(rest)` is
then `inline(prefix + rest)`: no span of the whole line crosses the cut, none starts
before it differently, and the look-arounds at the cut see a space either way. So
`kward.terminal.markdown` writes a line word by word and the line looks as if rendered
whole.

How a line is read (`_Line`): from left to right, the first construct that can begin at
a place is the one taken there, in this order: a code span, an escape, an autolink, a
link, a bare URL, `**`, `__`, `~~`, `*`, `_`; a span ends at its first possible closer (a
code span: the first run of as many backticks as it opened with, or of fewer when none
is that long; the rest of its run is then code). The closers of each kind are found once
per line and looked up by bisection, so a line is read in O(n log n) time however many
constructs it leaves open. Pure functions; any thread.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import Iterator, NamedTuple

from kward.terminal.style import Style

RESET = "\x1b[0m"
CODE_STYLE = ("cyan",)

# Where a span may begin: every kind begins with one of these.
_START = re.compile(r"[`\\<!\[*_~]|\b(?:https?|ftp)://")
_ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto):[^\s<>]+>")
_URL = re.compile(r"""\b(?:https?|ftp)://[^\s<>]*[^\s<>.,;:!?)\]'"*_~]""")
_URL_STOP = re.compile(r"[)\s]")  # what ends a link's URL
_LINK_END = re.compile(r'(?:[ \t]+"[^"]*")?\)')  # after a link's URL: an optional title, `)`
_LINK_END_SO_FAR = re.compile(r'[ \t]+(?:"[^"]*"?)?\Z')  # the same, as much as has arrived
# Emphasis: the opener at a place, a closer's place (zero-width), the marker's length.
_EMPHASIS = {
    "strong": (re.compile(r"\*\*(?=\S)"), re.compile(r"(?<=\S)(?=\*\*)"), 2),
    "strong2": (re.compile(r"(?<!\w)__(?=\S)"), re.compile(r"(?<=\S)(?=__(?!\w))"), 2),
    "strike": (re.compile(r"~~(?=\S)"), re.compile(r"(?<=\S)(?=~~)"), 2),
    "em": (re.compile(r"\*(?=[^\s*])"), re.compile(r"(?<=[^\s*])(?=\*)"), 1),
    "em2": (re.compile(r"(?<![\w_])_(?=[^\s_])"), re.compile(r"(?<=[^\s_])(?=_(?![\w_]))"), 1),
}
_EMPHASIS_AT = {"*": ("strong", "em"), "_": ("strong2", "em2"), "~": ("strike",)}
_STYLES = {"strong": "bold", "strong2": "bold", "strike": "strike", "em": "italic", "em2": "italic"}

# What may begin a span that spaces can fall inside (autolinks, bare URLs and escapes
# hold no space): where one stands outside every span found so far, the span may still
# close further on.
_OPENER = re.compile(r"`|\[|\*\*(?=\S)|(?<!\w)__(?=\S)|~~(?=\S)|\*(?=[^\s*])|(?<![\w_])_(?=[^\s_])")


class _Span(NamedTuple):
    start: int
    end: int
    kind: str  # "code", "escaped", "plain" (an autolink, a URL), "link", or an _EMPHASIS key
    body: str  # the code, the escaped character, the link's text, the emphasised text
    href: str = ""
    ticks: int = 0  # a code span's backticks


class _Line:
    """One line (no newline) and what is known of its closers (see the module docstring)."""

    def __init__(self, text: str):
        self.text = text
        self._closers: dict[str, list[int]] = {}
        self._runs: list[tuple[int, int]] | None = None  # the runs of backticks: (start, end)
        self._run_starts: dict[int, list[int]] = {}  # run length -> where such runs start
        self._brackets: list[int] | None = None  # where each `]` is
        self._url_stops: list[int] | None = None
        self._link_ends: dict[int, int | None] = {}
        self._links_so_far: dict[int, bool] = {}

    # --- spans --------------------------------------------------------------------------

    def spans(self) -> Iterator[_Span]:
        """The line's spans from left to right."""
        text, pos = self.text, 0
        while (m := _START.search(text, pos)) is not None:
            at = m.start()
            found = self._span_at(at)
            if found is None:
                pos = self._run(at)[1] if text[at] == "`" else at + 1  # (a run that cannot close: all of it)
                continue
            yield found
            pos = found.end

    def _span_at(self, at: int) -> _Span | None:
        text = self.text
        ch = text[at]
        if ch == "`":
            return self._code(at)
        if ch == "\\":
            m = _ESCAPED.match(text, at)
            return _Span(at, m.end(), "escaped", text[at + 1]) if m else None
        if ch == "<":
            m = _AUTOLINK.match(text, at)
            return _Span(at, m.end(), "plain", m.group()) if m else None
        if ch == "[" or ch == "!":
            return self._link(at)
        if ch in _EMPHASIS_AT:
            for kind in _EMPHASIS_AT[ch]:
                opener, _, length = _EMPHASIS[kind]
                if opener.match(text, at):
                    close = self._first_closer(kind, at + length + 1)
                    if close is not None:
                        return _Span(at, close + length, kind, text[at + length:close])
            return None
        m = _URL.match(text, at)
        return _Span(at, m.end(), "plain", m.group()) if m else None

    def _first_closer(self, kind: str, start: int) -> int | None:
        closers = self._closers.get(kind)
        if closers is None:
            closers = self._closers[kind] = [m.start() for m in _EMPHASIS[kind][1].finditer(self.text)]
        i = bisect_left(closers, start)
        return closers[i] if i < len(closers) else None

    def _run(self, at: int) -> tuple[int, int]:
        """The run of backticks holding `at`."""
        if self._runs is None:
            self._runs = [m.span() for m in re.finditer("`+", self.text)]
            for start, end in self._runs:
                self._run_starts.setdefault(end - start, []).append(start)
        return self._runs[bisect_right(self._runs, (at, len(self.text))) - 1]

    def _code(self, at: int) -> _Span | None:
        end = self._run(at)[1]
        for ticks in range(end - at, 0, -1):  # as many backticks as open it, else fewer
            starts = self._run_starts.get(ticks)
            if starts and starts[-1] > end:
                close = starts[bisect_right(starts, end)]
                return _Span(at, close + ticks, "code", self.text[at + ticks:close], ticks=ticks)
        return None

    def _link(self, at: int) -> _Span | None:
        text = self.text
        bracket = at if text[at] == "[" else at + 1
        if text[bracket:bracket + 1] != "[":
            return None
        close = self._next_bracket(bracket)
        if close is None or text[close + 1:close + 2] != "(":
            return None
        href_end = self._url_stop(close + 2)
        if href_end is None or href_end == close + 2:
            return None
        if href_end not in self._link_ends:
            m = _LINK_END.match(text, href_end)
            self._link_ends[href_end] = m.end() if m else None
        end = self._link_ends[href_end]
        return None if end is None else _Span(at, end, "link", text[bracket + 1:close], text[close + 2:href_end])

    def _next_bracket(self, after: int) -> int | None:
        if self._brackets is None:
            self._brackets = [m.start() for m in re.finditer(r"\]", self.text)]
        i = bisect_right(self._brackets, after)
        return self._brackets[i] if i < len(self._brackets) else None

    def _url_stop(self, start: int) -> int | None:
        if self._url_stops is None:
            self._url_stops = [m.start() for m in _URL_STOP.finditer(self.text)]
        i = bisect_left(self._url_stops, start)
        return self._url_stops[i] if i < len(self._url_stops) else None

    # --- what may still close ----------------------------------------------------------

    def first_open(self, start: int, stop: int) -> int | None:
        """Where the first construct that may still close begins in text[start:stop]."""
        p = start
        while (m := _OPENER.search(self.text, p, stop + 2)) is not None and m.start() < stop:
            if m.group() != "[" or self._link_may_complete(m.start()):
                return m.start()
            p = m.start() + 1
        return None

    def _link_may_complete(self, bracket: int) -> bool:
        """Whether the text from the `[` at `bracket` to the end is a beginning of a link."""
        text, n = self.text, len(self.text)
        close = self._next_bracket(bracket)
        if close is None or close + 1 == n:
            return True
        if text[close + 1] != "(":
            return False
        href_end = self._url_stop(close + 2)
        if href_end is None:
            return True  # (also `](` at the very end)
        if href_end == close + 2:
            return False
        if href_end not in self._links_so_far:
            self._links_so_far[href_end] = _LINK_END_SO_FAR.match(text, href_end) is not None
        return self._links_so_far[href_end]

    def backticks_after(self, at: int) -> int:
        """The length of the run of backticks from `at` on."""
        return self._run(at)[1] - at


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
    if "\n" in text:
        return "\n".join(inline(part, style) for part in text.split("\n"))
    out: list[str] = []
    end = 0
    for found in _Line(text).spans():
        out.append(text[end:found.start])
        end = found.end
        kind, body = found.kind, found.body
        if kind == "code":
            if len(body) > 2 and body.startswith(" ") and body.endswith(" "):
                body = body[1:-1]
            out.append(span(style, body, *CODE_STYLE))
        elif kind in ("escaped", "plain"):
            out.append(body)
        elif kind == "link":
            url = span(style, found.href, "dim", "underline")
            out.append(url if body in ("", found.href, found.href.removeprefix("mailto:"))
                       else f"{inline(body, style)} ({url})")
        else:
            out.append(span(style, inline(body, style), _STYLES[kind]))
    out.append(text[end:])
    return "".join(out)


def stable_end(text: str) -> int:
    """How much of `text`, the beginning of a line's inline text, can be rendered now
    (see the module docstring); 0: nothing yet."""
    line = _Line(text)
    gaps: list[tuple[int, int]] = []  # the stretches outside every span, up to the first open construct
    pos = 0
    for found in line.spans():
        stop = line.first_open(pos, found.start)
        if stop is None and found.kind == "code" and line.backticks_after(found.start) > found.ticks:
            stop = found.start  # ``a` b: the whole run of backticks may still close further on
        if stop is not None:
            gaps.append((pos, stop))
            return _last_break(text, gaps)
        gaps.append((pos, found.start))
        pos = found.end
    stop = line.first_open(pos, len(text))
    gaps.append((pos, len(text) if stop is None else stop))
    return _last_break(text, gaps)


def _last_break(text: str, gaps: list[tuple[int, int]]) -> int:
    for start, stop in reversed(gaps):
        space = max(text.rfind(" ", start, stop), text.rfind("\t", start, stop))
        if space >= 0:
            return space + 1
    return 0
