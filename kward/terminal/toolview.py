"""What a tool's result shows under its tool line: an edit's or write's diff, a shell
call's last lines of output, and the live tail of a command still running.

`diff_lines` renders a unified diff's hunks (`+` green, `-` red, hunk headers dim, at most
`CONTEXT` lines of context around the changes, capped at `DIFF_LINES` lines and the rest
counted); the `---`/`+++` header lines are left out (the tool line names the file), and
the stats note of a truncated diff (kward.tools.diff) becomes the last line.
`output_lines` gives the last `SHELL_LINES` non-empty lines of a `run_shell_command`
result (its format: kward.tools.shell; stdout, then a `STDERR:` line and stderr) and
`LiveOutput` the tail of the output streamed while the command runs (`toolUpdate`
events). Every line is plain text made printable (kward.terminal.textwidth.printable: a
command's or a file's escapes never reach the terminal), cut to the width, then styled.
Pure; used by the one thread rendering a turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kward.terminal.style import Style
from kward.terminal.textwidth import cut, printable

DIFF_LINES = 40
CONTEXT = 3
SHELL_LINES = 8
LIVE_LINES = 5
LIVE_KEEP = 16384  # characters of live output kept (enough for LIVE_LINES lines)
INDENT = "    "

_HUNK = re.compile(r"@@ -\d+(?:,(?P<old>\d+))? \+\d+(?:,(?P<new>\d+))? @@")
_TRUNCATED = re.compile(r"\.\.\. diff truncated to \d+ bytes; full diff stats: \+(?P<added>\d+)\|-(?P<deleted>\d+)")
_EXIT_LINE = re.compile(r"Exit status: -?\d+\n")


@dataclass(frozen=True, slots=True)
class _Row:
    kind: str  # "@" a hunk header, "+", "-", " " (context), "~" (context left out)
    text: str


def _rows(diff: str) -> tuple[list[_Row], tuple[int, int] | None]:
    """The hunk rows of a unified diff and, when it was truncated, its full stats."""
    rows: list[_Row] = []
    stats = None
    old = new = 0  # the lines of the current hunk still to come
    for line in diff.split("\n"):
        line = line.removesuffix("\r")
        truncated = _TRUNCATED.match(line)
        if truncated:
            stats = int(truncated.group("added")), int(truncated.group("deleted"))
            continue
        hunk = _HUNK.match(line)
        if hunk and old <= 0 and new <= 0:
            old, new = int(hunk.group("old") or 1), int(hunk.group("new") or 1)
            rows.append(_Row("@", line))
            continue
        if old <= 0 and new <= 0:
            continue  # `---`/`+++` headers, `diff --git`, `\ No newline`, ...
        kind = line[:1] or " "
        if kind == "-":
            old -= 1
        elif kind == "+":
            new -= 1
        elif kind == " ":
            old, new = old - 1, new - 1
        else:
            continue
        rows.append(_Row(kind, line[1:]))
    return _trim_context(rows), stats


def _trim_context(rows: list[_Row]) -> list[_Row]:
    """Only the context within CONTEXT rows of a change; a run of context left out
    between two rows kept in a hunk becomes one "~" row (shown as an ellipsis)."""
    kept: list[_Row] = []

    def add_hunk(hunk: list[_Row]) -> None:
        changes = [i for i, row in enumerate(hunk) if row.kind in "+-"]
        shown = gap = False
        for i, row in enumerate(hunk):
            if row.kind != " " or any(abs(i - c) <= CONTEXT for c in changes):
                if gap and shown:
                    kept.append(_Row("~", ""))
                kept.append(row)
                shown, gap = True, False
            else:
                gap = True

    hunk: list[_Row] = []
    for row in rows:
        if row.kind == "@":
            add_hunk(hunk)
            hunk = []
            kept.append(row)
        else:
            hunk.append(row)
    add_hunk(hunk)
    return kept


def diff_lines(diff: str, style: Style, width: int, *, cap: int = DIFF_LINES, unicode: bool = True) -> list[str]:
    """The lines shown under an edit's tool line (see the module docstring)."""
    rows, stats = _rows(diff)
    ellipsis = "\u2026" if unicode else "..."
    colour = {"+": style.green, "-": style.red, "@": style.dim, "~": style.dim}
    out = []
    for row in rows[:cap]:
        text = ellipsis if row.kind == "~" else row.text if row.kind == "@" else row.kind + row.text
        line = cut(printable(text), max(10, width - len(INDENT)), ellipsis)
        paint = colour.get(row.kind)
        out.append(INDENT + (paint(line) if paint else line))
    more = sum(1 for row in rows[cap:] if row.kind in "+- ")
    notes = []
    if more:
        notes.append(f"{more} more line{'s' if more != 1 else ''}")
    if stats:
        notes.append(f"diff cut short: +{stats[0]} -{stats[1]} in all")
    if notes:
        out.append(INDENT + style.dim(f"{ellipsis} " + "; ".join(notes)))
    return out


def command_output(content: str) -> str:
    """A `run_shell_command` result's output (kward.tools.shell.format_outcome): what
    follows its `Exit status:` line, without the label of the stream shown first
    (`STDOUT:`, or `STDERR:` when stdout was empty). A later `STDERR:` line is kept as a
    line of output: stdout may hold that very line, so whether it is the label cannot be
    told; shown, it is true either way."""
    exit_line = _EXIT_LINE.match(content)
    if exit_line is None:
        return content
    body = content[exit_line.end():]
    for label in ("\nSTDOUT:\n", "\nSTDERR:\n"):
        if body.startswith(label):
            return body[len(label):]
    return body


def last_lines(text: str, count: int) -> list[str]:
    """The last `count` lines of `text` that are not empty once printable."""
    found: list[str] = []
    for line in reversed(text.split("\n")):
        line = printable(line).rstrip()
        if line.strip():
            found.append(line)
            if len(found) == count:
                break
    return found[::-1]


def output_lines(lines: list[str], style: Style, width: int, *, unicode: bool = True) -> list[str]:
    """Output lines as shown under a tool line: indented, cut to the width, dim."""
    ellipsis = "\u2026" if unicode else "..."
    return [INDENT + style.dim(cut(line, max(10, width - len(INDENT)), ellipsis)) for line in lines]


class LiveOutput:
    """The output a running command has streamed so far (its last LIVE_KEEP characters)."""

    def __init__(self) -> None:
        self._text = ""

    def add(self, delta: str) -> None:
        self._text = (self._text + delta)[-LIVE_KEEP:]

    def lines(self, count: int = LIVE_LINES) -> list[str]:
        return last_lines(self._text, count)
