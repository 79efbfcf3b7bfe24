"""The inline renderer as it was before it was made linear (regular expressions with lazy
spans, quadratic on lines with many constructs left open): the oracle the linear one is
checked against on random short lines (tests/terminal/test_terminal_render_limits.py)."""

from __future__ import annotations

import re

from kward.terminal.style import Style

RESET = "\x1b[0m"
CODE_STYLE = ("cyan",)

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

# What may begin a span of _INLINE that spaces can fall inside (autolinks, bare URLs and
# escapes hold no space): where one stands outside every span found so far, the span
# may still close further on.
_OPENER = re.compile(r"`|\[|\*\*(?=\S)|(?<!\w)__(?=\S)|~~(?=\S)|\*(?=[^\s*])|(?<![\w_])_(?=[^\s_])")
# A `[` whose link may still complete: the text from it to the end is a beginning of one.
_LINK_START = re.compile(r'\[[^\]]*(?:\](?:\((?:[^)\s]+(?:[ \t]+(?:"[^"]*"?)?)?)?)?)?\Z')


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


def stable_end(text: str) -> int:
    """How much of `text`, the beginning of a line's inline text, can be rendered now
    (see the module docstring); 0: nothing yet."""
    gaps: list[tuple[int, int]] = []  # the stretches outside every span, up to the first open construct
    pos = 0
    for m in _INLINE.finditer(text):
        stop = _first_open(text, pos, m.start())
        if stop is None and m.group("code") is not None and _run(text, m.start()) > len(m.group("ticks")):
            stop = m.start()  # ``a` b: the whole run of backticks may still close further on
        if stop is not None:
            gaps.append((pos, stop))
            return _last_break(text, gaps)
        gaps.append((pos, m.start()))
        pos = m.end()
    stop = _first_open(text, pos, len(text))
    gaps.append((pos, len(text) if stop is None else stop))
    return _last_break(text, gaps)


def _first_open(text: str, start: int, stop: int) -> int | None:
    """Where the first construct that may still close begins in text[start:stop]."""
    p = start
    while (m := _OPENER.search(text, p, stop + 2)) is not None and m.start() < stop:
        if m.group() != "[" or _LINK_START.match(text, m.start()):
            return m.start()
        p = m.start() + 1
    return None


def _run(text: str, at: int) -> int:
    """The length of the run of backticks at `at`."""
    end = at
    while end < len(text) and text[end] == "`":
        end += 1
    return end - at


def _last_break(text: str, gaps: list[tuple[int, int]]) -> int:
    for start, stop in reversed(gaps):
        space = max(text.rfind(" ", start, stop), text.rfind("\t", start, stop))
        if space >= 0:
            return space + 1
    return 0
