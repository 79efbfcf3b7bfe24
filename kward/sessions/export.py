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
from typing import Any, Iterable

from kward.errors import InvalidParams
from kward.sessions.export_target import resolve_target, write_export
from kward.sessions.messages import compact, role_of

FORMATS = {"markdown": ".md", "html": ".html"}
TITLES = {"compactionSummary": "Compaction summary", "toolResult": "Tool"}
CALL_ARGS_CHARS = 200  # a tool call's arguments are shown compacted, cut to this many characters


def export_format(value: Any) -> str:
    """``markdown`` (default; alias ``md``) or ``html``, in any case; InvalidParams otherwise."""
    if value is None:
        return "markdown"
    if not isinstance(value, str):
        raise InvalidParams(f"Unsupported export format: {value!r}", data={"param": "format"})
    fmt = value.strip().lower()
    if fmt in ("", "md"):
        return "markdown"
    if fmt not in FORMATS:
        raise InvalidParams(f"Unsupported export format: {value} (markdown, md or html)", data={"param": "format"})
    return fmt


def render_markdown(messages: Iterable[dict[str, Any]]) -> str:
    lines = ["# Kward Session", ""]
    for message in messages:
        role = role_of(message)
        if role == "system":
            continue
        body = _assistant_body(message) if role == "assistant" else _body(message, role)
        if body is None:
            continue
        lines.append(f"## {TITLES.get(role, role.capitalize())}")
        name = message.get("name")
        if role in ("tool", "toolResult") and name:
            lines.append(f"Tool: `{name}`")
        lines.extend(["", body, ""])
    return "\n".join(lines)


def render_html(markdown: str) -> str:
    return (
        "<!doctype html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>Kward Session</title>\n"
        f"</head>\n<body>\n<pre>{html.escape(markdown, quote=True)}</pre>\n</body>\n</html>\n"
    )


def render(messages: Iterable[dict[str, Any]], fmt: str) -> str:
    markdown = render_markdown(messages)
    return markdown if fmt == "markdown" else render_html(markdown)


def _body(message: dict[str, Any], role: str) -> str:
    if role == "compactionSummary":
        return _markdown_content(message.get("summary", message.get("content")))
    if role == "user" and message.get("display_content") is not None:
        return _markdown_content(message["display_content"])
    return _markdown_content(message.get("content"))


def _assistant_body(message: dict[str, Any]) -> str | None:
    """Reasoning block, text, tool calls (blank lines between); None when all are empty."""
    content = message.get("content")
    parts = content if isinstance(content, list) else [content]
    thinking = [_thinking(p) for p in parts if _is_thinking(p)]
    reasoning = "\n".join(t for t in thinking if t)
    if not reasoning:
        summary = message.get("reasoning_summary", message.get("reasoningSummary"))
        reasoning = summary if isinstance(summary, str) else ""
    text = "\n".join(t for t in (_markdown_part(p) for p in parts if not _is_thinking(p)) if t)
    blocks = []
    if reasoning.strip():
        blocks.append("\n".join(f"> {line}".rstrip() for line in ["Reasoning:", *reasoning.splitlines()]))
    if text.strip():
        blocks.append(text)
    calls = [_tool_call_line(c) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    if calls:
        blocks.append("\n".join(calls))
    if blocks and message.get("interrupted"):
        blocks.append("_(interrupted)_")
    return "\n\n".join(blocks) if blocks else None


def _tool_call_line(call: dict[str, Any]) -> str:
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    name = function.get("name") or "tool"
    args = function.get("arguments")
    args = args if isinstance(args, str) else ("" if args is None else json.dumps(args, ensure_ascii=False))
    shown = compact(args, CALL_ARGS_CHARS + 1)
    if len(shown) > CALL_ARGS_CHARS:
        shown = shown[:CALL_ARGS_CHARS - 3] + "..."
    return f"Tool call: `{name}` {shown}".rstrip()


def _is_thinking(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("thinking", "reasoning")


def _thinking(part: dict[str, Any]) -> str:
    value = part.get("thinking", part.get("reasoning", part.get("text")))
    return value if isinstance(value, str) else ""


def _markdown_content(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(text for text in (_markdown_part(p) for p in content) if text is not None)
    return "" if content is None else str(content)


def _markdown_part(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None if part is None else str(part)
    kind = part.get("type")
    if kind == "image":
        mime = part.get("mimeType") or part.get("media_type") or part.get("mime_type") or "image"
        path = part.get("path")
        return f"[{mime}: {path}]" if path else f"[{mime}]"
    if _is_thinking(part):
        thinking = _thinking(part)
        return f"Reasoning:\n{thinking}" if thinking else None
    text = part.get("text")
    return None if text is None else str(text)


def export_conversation(messages: Iterable[dict[str, Any]], *, fmt: Any, path: Any, session_path: str,
                        workspace_root: str) -> dict[str, str]:
    """Write the export and return ``{path, format}``."""
    fmt = export_format(fmt)
    target = resolve_target(path, FORMATS[fmt], FORMATS.values(), session_path=session_path,
                            workspace_root=workspace_root)
    write_export(target, render(messages, fmt).encode("utf-8"))
    return {"path": target.shown, "format": fmt}
