"""Export a conversation as Markdown or HTML, to a confined path, atomically.

Markdown (as the original, made easier to read): ``# Kward Session``, then per non-system
message ``## User`` / ``## Assistant`` / ``## Tool`` (plus ``Tool: `name` `` for tool rows)
/ ``## Compaction summary``, a blank line, the text and a blank line; images as
``[mime: path]``. An assistant's reasoning (thinking parts, else its reasoning summary)
is a quoted ``> Reasoning:`` block before its text, its tool calls follow as
``Tool call: `name` {args}`` lines, and an assistant message with none of these is left
out. HTML is that Markdown, fully escaped, in a ``<pre>`` of a page titled "Kward Session".

Path rules: no path -> beside the session file (``.md`` / ``.html``). An explicit path is
resolved against the workspace; its parent must exist, must not be a symlink, and its real
path must lie inside the real workspace or the session's directory; an existing target
must be a regular file, not a symlink. Inside the session directory only ``.md`` and
``.html`` names are allowed (never a ``.jsonl`` or a ``.lock``/``.open`` sidecar), and
nowhere may an export replace a session file or a session's sidecar: the atomic replace
would swap the live file for a new inode and every later append would be lost. Anything
else is PathNotAllowed.

Pure functions plus one atomic write: safe from any thread.
"""

from __future__ import annotations

import html
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable

from kward.errors import InvalidParams, PathNotAllowed
from kward.fsutil import atomic_write_bytes
from kward.sessions.messages import compact, role_of
from kward.sessions.paths import lock_path_for, presence_path_for
from kward.sessions.reader import is_session_file
from kward.tools.paths import is_inside

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


def resolve_export_path(path: Any, fmt: str, *, session_path: str, workspace_root: str) -> str:
    """Where to write an export (see the module docstring for the rules)."""
    if path is None or (isinstance(path, str) and not path.strip()):
        base = session_path[:-len(".jsonl")] if session_path.endswith(".jsonl") else session_path
        return base + FORMATS[fmt]
    if not isinstance(path, str):
        raise InvalidParams("path must be a string", data={"param": "path"})
    target = os.path.normpath(os.path.join(workspace_root, os.path.expanduser(path.strip())))
    parent = os.path.dirname(target)
    refuse = PathNotAllowed(f"Export path outside workspace or session directory: {path}",
                            data={"path": target})
    if os.path.islink(parent) or not os.path.isdir(parent):
        raise refuse
    real_parent = os.path.realpath(parent)
    session_dir = os.path.realpath(os.path.dirname(session_path))
    if not any(is_inside(real_parent, root) for root in (os.path.realpath(workspace_root), session_dir)):
        raise refuse
    real_target = os.path.join(real_parent, os.path.basename(target))
    if is_inside(real_parent, session_dir) and not real_target.lower().endswith(tuple(FORMATS.values())):
        raise PathNotAllowed(f"Only .md and .html exports may be written in the session directory: {path}",
                             data={"path": real_target})
    try:
        st = os.lstat(real_target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise refuse  # a symlink, a directory, a device...
    if _is_session_or_sidecar(real_target, st is not None):
        raise PathNotAllowed(f"Export would overwrite a session file: {path}", data={"path": real_target})
    return real_target


def _is_session_or_sidecar(real_target: str, exists: bool) -> bool:
    """A session file, or the lock/presence sidecar of one (existing or not)."""
    if exists and is_session_file(real_target):
        return True
    base = Path(os.path.splitext(real_target)[0])
    sidecars = (str(lock_path_for(base)), str(presence_path_for(base)))
    return real_target in sidecars and base.is_file() and is_session_file(base)


def export_conversation(messages: Iterable[dict[str, Any]], *, fmt: Any, path: Any, session_path: str,
                        workspace_root: str) -> dict[str, str]:
    """Write the export and return ``{path, format}``."""
    fmt = export_format(fmt)
    target = resolve_export_path(path, fmt, session_path=session_path, workspace_root=workspace_root)
    if os.path.basename(target) in ("", ".", ".."):
        raise PathNotAllowed(f"Export path is not a file name: {path}", data={"path": target})
    atomic_write_bytes(Path(target), render(messages, fmt).encode("utf-8"))
    return {"path": target, "format": fmt}
