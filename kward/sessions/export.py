"""Export a conversation as Markdown or HTML, to a confined path, atomically.

Markdown (as the original): ``# Kward Session``, then per non-system message
``## <Role>`` (plus ``Tool: `name` `` for tool rows), a blank line, the text and a blank
line; images as ``[mime: path]``; thinking parts as ``Reasoning:\\n...``; a compaction
summary shows its summary. HTML is that Markdown, fully escaped, in a ``<pre>`` of a page
titled "Kward Session".

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
import os
import stat
from pathlib import Path
from typing import Any, Iterable

from kward.errors import InvalidParams, PathNotAllowed
from kward.fsutil import atomic_write_bytes
from kward.sessions.messages import role_of
from kward.sessions.paths import lock_path_for, presence_path_for
from kward.sessions.reader import is_session_file
from kward.tools.paths import is_inside

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
