"""Helpers shared by the wire converters: reading v1 message content and tool arguments.

v1 user content is a string or a list of parts (`{type:"text", text}`, `{type:"image",
...}`); images may carry a data URL (`image_url`, `url`) or base64 `data` with a MIME
type. Pure functions, any thread.
"""

from __future__ import annotations

import json
from typing import Any


def image_url(part: dict[str, Any]) -> str | None:
    """A URL (usually a data: URL) for an image part, or None."""
    url = part.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url:
        return url
    if isinstance(part.get("url"), str) and part["url"]:
        return part["url"]
    data = part.get("data")
    if isinstance(data, str) and data:
        mime = part.get("mimeType") or part.get("mime_type") or part.get("media_type") or "image/png"
        return f"data:{mime};base64,{data}"
    return None


def text_of(content: Any) -> str:
    """The text of message content: the string itself, or its text parts joined."""
    if isinstance(content, str):
        return content
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            text = part.get("text")
            if isinstance(text, str):
                out.append(text)
    return "".join(out)


def arguments_json(value: Any) -> str:
    """Tool-call arguments as the JSON string the wire formats carry."""
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def reasoning_enabled(effort: str | None) -> bool:
    """False for None, "" and "off" (no reasoning requested)."""
    return bool(effort) and str(effort).lower() not in ("off", "none")
