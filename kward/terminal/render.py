"""How one turn's events look on a terminal.

`TurnView` writes the answer text to `out` and everything around it (reasoning, one line
per tool call, retries, errors) to `side`; interactive mode passes the same stream twice,
one-shot mode stdout and stderr, so that only the answer reaches stdout. Reasoning is dim.
A tool call is one line: what it did, `ok` or `failed`, and for file changes the diff's
`+added -deleted` line counts; on a terminal a provisional line is shown while the tool
runs and replaced by the final one.

Main thread only (the turn loop calls it); it holds no locks.
"""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

from kward.terminal.style import Style, isatty

_TRUNCATED_STATS = re.compile(r"full diff stats: \+(\d+)\|-(\d+)")
_EXIT_STATUS = re.compile(r"\AExit status: (-?\d+)")
LABEL_WIDTH = 80


def short(text: str, width: int = LABEL_WIDTH) -> str:
    """The first line of `text`, cut to `width` characters (with an ellipsis)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


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
    """`bash npm test`, `edit src/a.py`, ...: the tool and what it works on."""
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


class TurnView:
    """Renders the `turn/event` payloads of one turn (see the module docstring)."""

    def __init__(self, out: TextIO, side: TextIO, out_style: Style, side_style: Style):
        self.out, self.side = out, side
        self.out_style, self.side_style = out_style, side_style
        self._open: dict[int, bool] = {}  # id(stream) -> the cursor is in the middle of a line
        self._kind: str | None = None  # "answer" | "reasoning": the text written last
        self._provisional = False  # a "tool running" line is shown on `side` (a terminal)
        self.answer_text = ""
        self._bullet = "\u2022" if "utf" in (getattr(side, "encoding", "") or "").lower() else "*"

    # --- low-level writing ------------------------------------------------------------

    def _write(self, stream: TextIO, text: str) -> None:
        if not text:
            return
        if self._provisional and stream is self.side:
            self._clear_provisional()
        stream.write(text)
        stream.flush()
        self._open[id(stream)] = not text.endswith("\n")

    def _break(self, stream: TextIO) -> None:
        if self._provisional and stream is self.side:
            self._clear_provisional()  # the final line replaces it later
        elif self._open.get(id(stream)):
            self._write(stream, "\n")

    def _clear_provisional(self) -> None:
        self._provisional = False
        self.side.write("\r\x1b[K")
        self._open[id(self.side)] = False

    def _end_text(self) -> None:
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
            self._break(self.side)
            self._kind = "reasoning"
        self._write(self.side, self.side_style.dim(delta))

    def on_assistantDelta(self, payload: dict[str, Any]) -> None:  # noqa: N802
        self._answer(str(payload.get("delta", "")))

    def _answer(self, delta: str) -> None:
        if self._kind != "answer":
            if self._kind == "reasoning":
                self._break(self.side)
                if self.out is self.side:
                    self._write(self.out, "\n")  # a blank line between reasoning and answer
            self._kind = "answer"
        self.answer_text += delta
        self._write(self.out, delta)

    def on_answer(self, payload: dict[str, Any]) -> None:
        content = payload.get("content")
        if not self.answer_text and isinstance(content, str) and content:
            self._answer(content)  # nothing was streamed: show the answer now

    def on_toolCall(self, payload: dict[str, Any]) -> None:  # noqa: N802
        if not isatty(self.side):
            return  # the final line comes with the result
        label = tool_label(str(payload.get("toolName", "tool")), payload.get("args"))
        self._end_text()
        self._write(self.side, self.side_style.dim(f"  {self._bullet} {label} ..."))
        self._provisional = True

    def on_toolResult(self, payload: dict[str, Any]) -> None:  # noqa: N802
        name = str(payload.get("toolName", "tool"))
        label = tool_label(name, payload.get("args"))
        raw = payload.get("result")
        result: dict[str, Any] = raw if isinstance(raw, dict) else {}
        content = str(result.get("content", payload.get("content", "")) or "")
        style = self.side_style
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
        if self._provisional:
            self._clear_provisional()
        self._line(f"  {self._bullet} {label}  {status}")

    def on_modelRetry(self, payload: dict[str, Any]) -> None:  # noqa: N802
        attempt, total = payload.get("attempt"), payload.get("maxAttempts")
        delay = payload.get("delaySeconds")
        text = f"retrying ({attempt}/{total}) in {delay}s: {short(str(payload.get('error', '')), 120)}"
        self._line(self.side_style.dim(text))

    def on_error(self, payload: dict[str, Any]) -> None:
        self._line(self.side_style.red("error: ") + short(str(payload.get("message", "")), 500))

    def on_turnFinished(self, payload: dict[str, Any]) -> None:  # noqa: N802
        if self._provisional:
            self._clear_provisional()
        self.end()
        if payload.get("status") == "canceled":
            self._line(self.side_style.dim("(canceled)"))

    def note(self, text: str) -> None:
        """A dim line of kward's own (e.g. "canceling...") on `side`."""
        self._line(self.side_style.dim(text))

    def end(self) -> None:
        """End the answer (and any running line) with a newline."""
        self._end_text()

