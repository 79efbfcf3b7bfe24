"""How one turn's events look on a terminal.

`TurnView` writes the answer text to `out` and everything around it (reasoning, one line
per tool call, what the tool showed, retries, errors) to `side`; interactive mode passes
the same stream twice, one-shot mode stdout and stderr, so that only the answer reaches
stdout.

The answer: when `out` gets colours its Markdown is rendered as it streams
(kward.terminal.markdown: a paragraph word by word, other lines when they are complete,
the rest of the last line at the end of the message); without colours it is written
exactly as the model wrote it, delta by delta.
Reasoning is dim; with `reasoning_shown` False it is one line, `thinking… (N words)`,
redrawn in place on a terminal and written once at the end of the reasoning elsewhere.
A tool call is one line: what it did, `ok` or `failed`, and for file changes the diff's
`+added -deleted` line counts, with the diff's hunks under it (an edit or write) or the
command's last lines of output (a shell call) (kward.terminal.toolview). On a terminal a
provisional line is shown while the tool runs, with the live tail of a command's output
under it (`toolUpdate` events), all replaced by the final lines at `toolResult`. On a
stream that is not a terminal nothing is redrawn: no carriage return, no escape sequence
unless colours are forced. A command hook's run is one line too (`hook`): its source, `ok`,
`blocked`, `failed` or `timed out`, how long it took, and the first line of its stderr
(or of kward's word on it).

Nothing the model (or a provider, or a tool's arguments, or a hook) wrote reaches a
terminal with its escape sequences or control characters (kward.terminal.textwidth.clean):
the reasoning, tool and hook lines, a failed tool's content, retries and errors on `side`
always, the answer on `out` when `out` is a terminal or gets colours (or `clean_answer`
says so: one-shot mode's text before a tool call, written on stderr). Only into a pipe or
a file without colours is the answer written byte for byte as the model wrote it.
`answer_text` keeps what the model wrote, as it was.

Main thread only (the turn loop calls it); it holds no locks.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, TextIO

from kward.terminal.markdown import MarkdownStream
from kward.terminal.style import Style, is_utf8, isatty
from kward.terminal.textwidth import Cleaner, clean, cut
from kward.terminal.toolview import (
    SHELL_LINES,
    LiveOutput,
    command_output,
    diff_lines,
    last_lines,
    output_lines,
)
from kward.terminal.wording import turn_error_text

_TRUNCATED_STATS = re.compile(r"full diff stats: \+(\d+)\|-(\d+)")
_EXIT_STATUS = re.compile(r"\AExit status: (-?\d+)")
LABEL_WIDTH = 80
DEFAULT_WIDTH = 100  # the columns of a stream that is not a terminal


def short(text: str, width: int = LABEL_WIDTH) -> str:
    """The first line of `text` made safe for a terminal (textwidth.clean), cut to `width`
    characters (with an ellipsis)."""
    text = clean(text).strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def _duration(ms: object) -> str:
    """`12 ms`, `1.5 s`: how long a run took (its `durationMs`)."""
    if not isinstance(ms, int):
        return "?"
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def diff_stats(diff: str) -> tuple[int, int]:
    """(added, deleted) lines of a unified diff (the full counts when it was truncated)."""
    truncated = _TRUNCATED_STATS.search(diff)
    if truncated:
        return int(truncated.group(1)), int(truncated.group(2))
    added = deleted = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            deleted += 1
    return added, deleted


def tool_label(name: str, args: object) -> str:
    """`bash npm test`, `edit src/a.py`, ...: the tool and what it works on (safe for a
    terminal: what the model wrote in its arguments is cleaned)."""
    name = clean(name)
    fields: dict[str, Any] = args if isinstance(args, dict) else {}
    if name == "bash" and isinstance(fields.get("command"), str):
        target = fields["command"]
    elif isinstance(fields.get("path"), str) and name != "search_files":
        target = fields["path"]
    elif name == "search_files":
        target = " ".join(str(fields[k]) for k in ("pattern", "query", "path") if isinstance(fields.get(k), str))
    elif name == "ask_user_question":
        questions = fields.get("questions")
        target = str(questions[0].get("header", "")) if isinstance(questions, list) and questions and isinstance(
            questions[0], dict) else ""
    else:
        target = json.dumps(fields, ensure_ascii=False, sort_keys=True) if fields else ""
    return f"{name} {short(target, LABEL_WIDTH - len(name) - 1)}".rstrip()


def columns(stream: TextIO) -> int:
    """The width of `stream`: its terminal's columns, DEFAULT_WIDTH when not a terminal."""
    if isatty(stream):
        try:
            return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
        except (AttributeError, ValueError, OSError):
            pass
    return DEFAULT_WIDTH


class TurnView:
    """Renders the `turn/event` payloads of one turn (see the module docstring)."""

    def __init__(self, out: TextIO, side: TextIO, out_style: Style, side_style: Style, *,
                 reasoning_shown: bool = True, width: int | None = None, clean_answer: bool | None = None):
        """`clean_answer`: whether the answer written unrendered is cleaned (None: when
        `out` is a terminal)."""
        self.out, self.side = out, side
        self.out_style, self.side_style = out_style, side_style
        self.reasoning_shown = reasoning_shown
        self.width = width or columns(side)
        self._open: dict[int, bool] = {}  # id(stream) -> the cursor is in the middle of a line
        self._kind: str | None = None  # "answer" | "reasoning": the text written last
        self._tty = isatty(side)
        self._live = 0  # lines of the provisional block shown on `side` (a terminal): 0 when none
        self._live_call: object = None  # the toolCallId of the provisional tool line
        self._live_label = ""
        self._live_output = LiveOutput()
        self._live_shown: list[str] = []
        self._words = 0  # words of the reasoning so far (its collapsed line counts them)
        self._in_word = False
        self._answer_parts: list[str] = []  # what the model wrote (answer_text, joined when read)
        self._unicode = is_utf8(side)
        self._bullet = "\u2022" if self._unicode else "*"
        self._markdown = MarkdownStream(out_style, unicode=is_utf8(out), width=columns(out)) if out_style.enabled \
            else None
        # The answer written unrendered: cleaned for a terminal, as written into a pipe or file.
        if clean_answer is None:
            clean_answer = isatty(out)
        self._answer_cleaner = Cleaner() if self._markdown is None and clean_answer else None
        self._reasoning_cleaner = Cleaner()

    @property
    def answer_text(self) -> str:
        """The answer's text so far, exactly as the model wrote it."""
        if len(self._answer_parts) > 1:
            self._answer_parts = ["".join(self._answer_parts)]
        return self._answer_parts[0] if self._answer_parts else ""

    # --- low-level writing ------------------------------------------------------------

    def _write(self, stream: TextIO, text: str) -> None:
        if not text:
            return
        if self._live and stream is self.side:
            self._clear_provisional()
        stream.write(text)
        stream.flush()
        self._open[id(stream)] = not text.endswith("\n")

    def _break(self, stream: TextIO) -> None:
        if self._live and stream is self.side:
            self._clear_provisional()  # the final line replaces it later
        elif self._open.get(id(stream)):
            self._write(stream, "\n")

    def _erase(self) -> str:
        """What clears the provisional block (the cursor is at the end of its last line)."""
        lines, self._live = self._live, 0
        if lines <= 1:
            return "\r\x1b[K" if lines else ""
        return f"\r\x1b[{lines - 1}A\x1b[J"

    def _clear_provisional(self) -> None:
        self.side.write(self._erase())
        self._open[id(self.side)] = False

    def _draw_provisional(self, lines: list[str]) -> None:
        """Show `lines` as the provisional block, in place of the one shown (a terminal)."""
        self.side.write(self._erase() + "\n".join(lines))
        self.side.flush()
        self._live = len(lines)
        self._open[id(self.side)] = True

    def _leave_text(self) -> None:
        """End the running answer or reasoning: the rendered answer's partial line and
        held lines; the collapsed reasoning's line where it is not redrawn in place."""
        if self._kind == "answer" and self._markdown is not None:
            self._write(self.out, self._markdown.finish())
        elif self._kind == "reasoning" and not self.reasoning_shown and not self._tty:
            self._write(self.side, self.side_style.dim(self._thinking()) + "\n")

    def _end_text(self) -> None:
        self._leave_text()
        self._break(self.side)
        if self.out is not self.side:
            self._break(self.out)
        self._kind = None

    def _line(self, text: str) -> None:
        """A whole line on `side`, after ending whatever text was running there."""
        self._end_text()
        self._write(self.side, text + "\n")

    # --- events -----------------------------------------------------------------------

    def event(self, event: dict[str, Any]) -> None:
        kind, payload = event.get("type"), event.get("payload") or {}
        handler = getattr(self, f"on_{kind}", None)
        if handler is not None:
            handler(payload)

    def on_reasoningDelta(self, payload: dict[str, Any]) -> None:  # noqa: N802 - event names
        delta = str(payload.get("delta", ""))
        if self._kind != "reasoning":
            self._leave_text()
            self._break(self.side)
            self._kind = "reasoning"
            self._words, self._in_word = 0, False
            self._reasoning_cleaner = Cleaner()
        delta = self._reasoning_cleaner.feed(delta)
        if self.reasoning_shown:
            self._write(self.side, self.side_style.dim(delta))
            return
        words = self._words
        self._count_words(delta)
        if self._tty and (self._words != words or not self._open.get(id(self.side))):
            self._write(self.side, "\r\x1b[K" + self.side_style.dim(self._thinking()))

    def _count_words(self, delta: str) -> None:
        for ch in delta:
            space = ch.isspace()
            if not space and not self._in_word:
                self._words += 1
            self._in_word = not space

    def _thinking(self) -> str:
        dots = "\u2026" if self._unicode else "..."
        return f"thinking{dots} ({self._words} word{'s' if self._words != 1 else ''})"

    def on_assistantDelta(self, payload: dict[str, Any]) -> None:  # noqa: N802
        self._answer(str(payload.get("delta", "")))

    def _answer(self, delta: str) -> None:
        if self._kind != "answer":
            if self._kind == "reasoning":
                self._leave_text()
                self._break(self.side)
                if self.out is self.side:
                    self._write(self.out, "\n")  # a blank line between reasoning and answer
            self._kind = "answer"
        self._answer_parts.append(delta)
        if self._markdown is not None:
            delta = self._markdown.feed(delta)
        elif self._answer_cleaner is not None:
            delta = self._answer_cleaner.feed(delta)
        self._write(self.out, delta)

    def on_assistantMessage(self, payload: dict[str, Any]) -> None:  # noqa: N802
        if self._kind == "answer" and self._markdown is not None:
            self._write(self.out, self._markdown.finish())  # the message's partial last line

    def on_answer(self, payload: dict[str, Any]) -> None:
        content = payload.get("content")
        if not self.answer_text and isinstance(content, str) and content:
            self._answer(content)  # nothing was streamed: show the answer now

    def on_toolCall(self, payload: dict[str, Any]) -> None:  # noqa: N802
        if not self._tty:
            return  # the final line comes with the result
        label = tool_label(str(payload.get("toolName", "tool")), payload.get("args"))
        self._end_text()
        self._live_call = payload.get("toolCallId")
        self._live_label = self.side_style.dim(cut(f"  {self._bullet} {label} ...", self.width - 1))
        self._live_output, self._live_shown = LiveOutput(), []
        self._draw_provisional([self._live_label])

    def on_toolUpdate(self, payload: dict[str, Any]) -> None:  # noqa: N802
        """Live output of a running command: its last lines under the provisional line."""
        if not self._live or payload.get("toolCallId") != self._live_call:
            return  # not a terminal, or the provisional line was replaced meanwhile
        self._live_output.add(str(payload.get("delta", "")))
        lines = output_lines(self._live_output.lines(), self.side_style, self.width - 1, unicode=self._unicode)
        if lines != self._live_shown:
            self._live_shown = lines
            self._draw_provisional([self._live_label, *lines])

    def on_toolResult(self, payload: dict[str, Any]) -> None:  # noqa: N802
        name = str(payload.get("toolName", "tool"))
        label = tool_label(name, payload.get("args"))
        raw = payload.get("result")
        result: dict[str, Any] = raw if isinstance(raw, dict) else {}
        content = str(result.get("content", payload.get("content", "")) or "")
        style = self.side_style
        below: list[str] = []
        if result.get("isError"):
            status = style.red("failed") + style.dim(": " + short(content, 100))
        else:
            status = style.green("ok")
            exit_status = _EXIT_STATUS.match(content) if name == "bash" else None
            if exit_status and exit_status.group(1) != "0":
                status = style.yellow(f"exit {exit_status.group(1)}")
            diff = result.get("diff")
            if isinstance(diff, str) and diff:
                added, deleted = diff_stats(diff)
                status += " " + style.green(f"+{added}") + " " + style.red(f"-{deleted}")
                below = diff_lines(diff, style, self.width, unicode=self._unicode)
            elif exit_status:
                lines = last_lines(command_output(content), SHELL_LINES)
                below = output_lines(lines, style, self.width, unicode=self._unicode)
        if self._live:
            self._clear_provisional()
        self._live_call = None
        self._line(f"  {self._bullet} {label}  {status}")
        for line in below:
            self._write(self.side, line + "\n")

    def hook(self, params: dict[str, Any]) -> None:
        """A command hook's run that is over (`hook/completed` params): one line, such as
        `hook hooks.beforeTool[0]  blocked (12 ms): <its stderr's first line>`; a provisional
        tool line it interrupted is drawn again under it (as after an approval question)."""
        raw = params.get("run")
        run: dict[str, Any] = raw if isinstance(raw, dict) else {}
        style = self.side_style
        status, exit_status = run.get("status"), run.get("exitStatus")
        said = {o.get("kind"): str(o.get("text", "")) for o in run.get("output") or [] if isinstance(o, dict)}
        took = _duration(run.get("durationMs"))
        detail = said.get("stderr", "").strip() or said.get("error", "")
        if status == "completed":
            shown, detail = style.green("ok") + f" ({took})", ""
        elif status == "blocked":
            shown = style.yellow("blocked") + f" ({took})"
        elif status == "timedOut":
            shown = style.red("timed out") + f" ({took})"
        else:
            shown = style.red("failed") + (f" (exit status {exit_status}, {took})" if isinstance(
                exit_status, int) else f" ({took})")
            if isinstance(exit_status, int) and not said.get("stderr", "").strip():
                detail = ""  # (its error output only repeats the exit status)
        if detail:
            shown += style.dim(": " + short(detail, 100))
        self._line(f"  {self._bullet} hook {short(str(run.get('source', run.get('event', ''))), 40)}  {shown}")
        self.resume()

    def on_modelRetry(self, payload: dict[str, Any]) -> None:  # noqa: N802
        attempt, total = payload.get("attempt"), payload.get("maxAttempts")
        delay = payload.get("delaySeconds")
        text = f"retrying ({attempt}/{total}) in {delay}s: {short(str(payload.get('error', '')), 120)}"
        self._line(self.side_style.dim(text))

    def on_error(self, payload: dict[str, Any]) -> None:
        self._line(self.side_style.red("error: ") + short(turn_error_text(payload), 500))

    def on_turnFinished(self, payload: dict[str, Any]) -> None:  # noqa: N802
        if self._live:
            self._clear_provisional()
        self.end()
        if payload.get("status") == "canceled":
            self._line(self.side_style.dim("(canceled)"))

    def lines(self, texts: list[str]) -> None:
        """Whole lines of kward's own on `side` (an approval question's), after ending what
        was running there (a provisional tool line is cleared; its result draws it again)."""
        for text in texts:
            self._line(text)

    def resume(self) -> None:
        """After an approval question: the provisional line of the call asked about drawn
        again (a terminal), so its live output shows under it."""
        if self._tty and self._live_call is not None and not self._live:
            self._live_output, self._live_shown = LiveOutput(), []
            self._draw_provisional([self._live_label])

    def note(self, text: str) -> None:
        """A dim line of kward's own (e.g. "canceling...") on `side`."""
        self._line(self.side_style.dim(text))

    def end(self) -> None:
        """End the answer (and any running line) with a newline."""
        self._end_text()
