"""Export a conversation as Markdown or HTML, to a confined path, atomically.

Markdown (as the original): ``# Kward Session``, then per non-system message
``## <Role>`` (plus ``Tool: `name` `` for tool rows), a blank line, the text and a blank
line; images as ``[mime: path]``; thinking parts as ``Reasoning:\\n...``; a compaction
summary shows its summary. HTML is that Markdown, fully escaped, in a ``<pre>`` of a page
titled "Kward Session".

Where the export goes, what it may replace, and the race-free write: see
`kward.sessions.export_target`.

Pure functions plus one atomic write: safe from any thread.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

from kward.errors import InvalidParams
from kward.sessions.export_target import resolve_target, write_export
from kward.sessions.messages import role_of

FORMATS = {"markdown": ".md", "html": ".html"}


def export_format(value: Any) -> str:
    """``markdown`` (default; alias ``md``) or ``html``; InvalidParams otherwise."""
    if value is None:
        return "markdown"
    if not isinstance(value, str):
        raise InvalidParams(f"Unsupported export format: {value!r}", data={"param": "format"})
    fmt = value.strip().lower()
    if fmt in ("", "md"):
        return "markdown"
    if fmt not in FORMATS:
        raise InvalidParams(f"Unsupported export format: {value}", data={"param": "format"})
    return fmt


def render_markdown(messages: Iterable[dict[str, Any]]) -> str:
    lines = ["# Kward Session", ""]
    for message in messages:
        role = role_of(message)
        if role == "system":
            continue
        lines.append(f"## {role.capitalize()}")
        name = message.get("name")
        if role == "tool" and name:
            lines.append(f"Tool: `{name}`")
        lines.append("")
        if role == "compactionSummary":
            body = message.get("summary")
        elif role == "user":
            shown = message.get("display_content")
            body = shown if shown is not None else message.get("content")
        else:
            body = message.get("content")
        lines.append(_markdown_content(body))
        lines.append("")
    return "\n".join(lines)


def render_html(markdown: str) -> str:
    return (
        "<!doctype html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>Kward Session</title>\n"
        f"</head>\n<body>\n<pre>{html.escape(markdown, quote=True)}</pre>\n</body>\n</html>\n"
    )


def render(messages: Iterable[dict[str, Any]], fmt: str) -> str:
    markdown = render_markdown(messages)
    return markdown if fmt == "markdown" else render_html(markdown)


def _markdown_content(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(text for text in (_markdown_part(p) for p in content) if text is not None)
    return "" if content is None else str(content)


def _markdown_part(part: Any) -> str | None:
    if not isinstance(part, dict):
        return str(part)
    kind = part.get("type")
    if kind == "image":
        mime = part.get("mimeType") or part.get("media_type") or part.get("mime_type") or "image"
        path = part.get("path")
        return f"[{mime}: {path}]" if path else f"[{mime}]"
    if kind in ("thinking", "reasoning"):
        thinking = part.get("thinking", part.get("reasoning", part.get("text")))
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
