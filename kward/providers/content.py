"""Helpers shared by the wire converters: reading typed message content and tool arguments.

Content is a string or a tuple of parts (`kward.model`); images carry a (data:) URL or
base64 `data` with a MIME type. Pure functions, any thread.
"""

from __future__ import annotations

import json
from typing import Any

from kward.model import ImagePart
from kward.model import content_text as text_of  # noqa: F401 (the text of message content)


def image_url(part: ImagePart) -> str | None:
    """A URL (usually a data: URL) for an image part, or None."""
    if part.url:
        return part.url
    if part.data:
        return f"data:{part.mime_type or 'image/png'};base64,{part.data}"
    return None


def arguments_json(value: Any) -> str:
    """Tool-call arguments as the JSON string the wire formats carry."""
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def reasoning_enabled(effort: str | None) -> bool:
    """False for None, "" and "off" (no reasoning requested)."""
    return bool(effort) and str(effort).lower() not in ("off", "none")
