"""Export a conversation as Markdown or HTML, to a confined path, atomically.

Markdown (as the original, made easier to read): ``# Kward Session``, then per non-system
message ``## User`` / ``## Assistant`` / ``## Tool`` (plus ``Tool: `name` `` for tool rows)
/ ``## Compaction summary``, a blank line, the text and a blank line; images as
``[mime: path]``. An assistant's reasoning (thinking parts, else its reasoning summary)
is a quoted ``> Reasoning:`` block before its text, its tool calls follow as
``Tool call: `name` {args}`` lines, and an assistant message with none of these is left
out; one the user interrupted ends with ``_(interrupted)_``. HTML is that Markdown, fully
escaped, in a ``<pre>`` of a page titled "Kward Session".

Where the export goes, what it may replace, and the race-free write: see
`kward.sessions.export_target`.

Pure functions plus one atomic write: safe from any thread.
"""

from __future__ import annotations

import html
import json
from typing import Iterable, Literal, NamedTuple

from kward.errors import InvalidParams
from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    Message,
    OtherPart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from kward.sessions.entries import compact
from kward.sessions.export_target import resolve_target, write_export

FORMATS = {"markdown": ".md", "html": ".html"}
TITLES = {"compactionSummary": "Compaction summary"}
CALL_ARGS_CHARS = 200  # a tool call's arguments are shown compacted, cut to this many characters


class Exported(NamedTuple):
    """Where an export was written (`path`, as shown to the user) and its `format`
    (``markdown`` or ``html``)."""

    path: str
    format: ExportFormat


#: The formats of an export.
ExportFormat = Literal["markdown", "html"]


def export_format(value: object) -> ExportFormat:
    """``markdown`` (default; alias ``md``) or ``html``, in any case; InvalidParams otherwise."""
    if value is None:
        return "markdown"
    if not isinstance(value, str):
        raise InvalidParams(f"Unsupported export format: {value!r}", data={"param": "format"})
    fmt = value.strip().lower()
    if fmt in ("", "md"):
        return "markdown"
    if fmt == "html":
        return "html"
    if fmt != "markdown":
        raise InvalidParams(f"Unsupported export format: {value} (markdown, md or html)", data={"param": "format"})
    return "markdown"


def render_markdown(messages: Iterable[Message]) -> str:
    lines = ["# Kward Session", ""]
    for message in messages:
        role = message.role
        if role == "system":
            continue
        body = _assistant_body(message) if isinstance(message, AssistantMessage) else _body(message)
        if body is None:
            continue
        lines.append(f"## {TITLES.get(role, role.capitalize())}")
        if isinstance(message, ToolResultMessage) and message.name:
            lines.append(f"Tool: `{message.name}`")
        lines.extend(["", body, ""])
    return "\n".join(lines)


def render_html(markdown: str) -> str:
    return (
        "<!doctype html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>Kward Session</title>\n"
        f"</head>\n<body>\n<pre>{html.escape(markdown, quote=True)}</pre>\n</body>\n</html>\n"
    )


def render(messages: Iterable[Message], fmt: str) -> str:
    markdown = render_markdown(messages)
    return markdown if fmt == "markdown" else render_html(markdown)


def _body(message: Message) -> str:
    if isinstance(message, CompactionSummary):
        return message.summary
    if isinstance(message, UserMessage) and message.display is not None:
        return _markdown_content(message.display)
    return _markdown_content(message.content)


def _assistant_body(message: AssistantMessage) -> str | None:
    """Reasoning block, text, tool calls (blank lines between); None when all are empty."""
    content = message.content
    parts = content if isinstance(content, tuple) else (TextPart(content),)
    reasoning = "\n".join(p.thinking for p in parts if isinstance(p, ThinkingPart) and p.thinking)
    if not reasoning:
        reasoning = message.reasoning or ""
    text = "\n".join(t for t in (_markdown_part(p) for p in parts if not isinstance(p, ThinkingPart)) if t)
    blocks = []
    if reasoning.strip():
        blocks.append("\n".join(f"> {line}".rstrip() for line in ["Reasoning:", *reasoning.splitlines()]))
    if text.strip():
        blocks.append(text)
    calls = [_tool_call_line(c) for c in message.tool_calls]
    if calls:
        blocks.append("\n".join(calls))
    if blocks and message.interrupted:
        blocks.append("_(interrupted)_")
    return "\n\n".join(blocks) if blocks else None


def _tool_call_line(call: ToolCall) -> str:
    name = call.name or "tool"
    args = call.arguments
    args = args if isinstance(args, str) else ("" if args is None else json.dumps(args, ensure_ascii=False))
    shown = compact(args, CALL_ARGS_CHARS + 1)
    if len(shown) > CALL_ARGS_CHARS:
        shown = shown[:CALL_ARGS_CHARS - 3] + "..."
    return f"Tool call: `{name}` {shown}".rstrip()


def _markdown_content(content: Content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(text for text in (_markdown_part(p) for p in content) if text is not None)


def _markdown_part(part: Part) -> str | None:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart):
        mime = part.mime_type or "image"
        return f"[{mime}: {part.path}]" if part.path else f"[{mime}]"
    if isinstance(part, ThinkingPart):
        return f"Reasoning:\n{part.thinking}" if part.thinking else None
    if isinstance(part, OtherPart):
        return part.text
    return None


def export_conversation(messages: Iterable[Message], *, fmt: object, path: object, session_path: str,
                        workspace_root: str) -> Exported:
    """Write the export; where it went and its format (`fmt` and `path` as a client sent
    them: `export_format`, `export_target.resolve_target`)."""
    checked = export_format(fmt)
    target = resolve_target(path, FORMATS[checked], FORMATS.values(), session_path=session_path,
                            workspace_root=workspace_root)
    write_export(target, render(messages, checked).encode("utf-8"))
    return Exported(target.shown, checked)
