"""An MCP ``tools/call`` result as a kward `ToolResult`.

Content blocks, in order: ``text`` as written; ``image`` (base64 ``data``, ``mimeType``)
as an image part when its type is one kward sends to models and it is at most
`MAX_IMAGE_BYTES`, else a line saying it was left out; ``resource`` (an embedded
resource) as its text under its URI, or, for a blob, as an image (an image type) or a
line naming it; ``resource_link`` as a line with its name and URI; ``audio`` and unknown
blocks as a line naming them. A result without content blocks shows its
``structuredContent`` as JSON. ``isError: true`` makes an error result (``Error: ...``).
The text is cut at `MAX_TEXT_CHARS` characters and at most `MAX_IMAGES` images are kept.

Pure functions: any thread.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from kward.limits import IMAGE_MIME_TYPES, MAX_IMAGE_BYTES
from kward.model import ImagePart, ToolResult

__all__ = ["MAX_IMAGES", "MAX_TEXT_CHARS", "tool_result"]

MAX_TEXT_CHARS = 100_000
MAX_IMAGES = 8


def tool_result(result: object, label: str) -> ToolResult:
    """`result` (a ``tools/call`` result object) as a ToolResult; `label` names the tool
    in the text of an error (``MCP tool <label>``)."""
    if not isinstance(result, dict):
        return ToolResult.error(f"MCP tool {label} answered with a result that is not an object")
    lines: list[str] = []
    images: list[ImagePart] = []
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    for block in blocks:
        _block(block, lines, images)
    if not blocks and "structuredContent" in result:
        lines.append(_json(result["structuredContent"]))
    text = "\n".join(line for line in lines if line)
    if len(text) > MAX_TEXT_CHARS:
        text = f"{text[:MAX_TEXT_CHARS]}\n[... {len(text) - MAX_TEXT_CHARS} more characters cut]"
    if result.get("isError") is True:
        return ToolResult(f"Error: {text or f'MCP tool {label} failed'}", True, images=tuple(images))
    if not text and not images:
        text = "(no output)"
    # a server's text that happens to start like kward's error texts is still a success
    return ToolResult(text, False, images=tuple(images))


def _block(block: object, lines: list[str], images: list[ImagePart]) -> None:
    if not isinstance(block, dict):
        lines.append("[a content block that is not an object was left out]")
        return
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        lines.append(text if isinstance(text, str) else "")
    elif kind == "image":
        _image(block.get("data"), block.get("mimeType"), "image", lines, images)
    elif kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            lines.append("[an embedded resource without its resource was left out]")
            return
        uri = _short(resource.get("uri"))
        if isinstance(resource.get("text"), str):
            lines.append(f"[resource {uri}]\n{resource['text']}")
        elif isinstance(resource.get("blob"), str):
            mime = resource.get("mimeType")
            if isinstance(mime, str) and mime in IMAGE_MIME_TYPES:
                _image(resource["blob"], mime, f"resource {uri}", lines, images)
            else:
                size = len(resource["blob"]) * 3 // 4
                lines.append(f"[binary resource {uri} ({_short(mime) if mime else 'no type'}, about {size} bytes)]")
        else:
            lines.append(f"[resource {uri}]")
    elif kind == "resource_link":
        name = block.get("name") or block.get("title") or ""
        lines.append(f"[resource link: {_short(name)} {_short(block.get('uri'))}]".replace("  ", " "))
    elif kind == "audio":
        lines.append(f"[audio ({_short(block.get('mimeType'))}) left out]")
    else:
        lines.append(f"[a {_short(kind)} content block was left out]")


def _image(data: object, mime: object, what: str, lines: list[str], images: list[ImagePart]) -> None:
    if not isinstance(data, str) or not isinstance(mime, str) or mime not in IMAGE_MIME_TYPES:
        lines.append(f"[{what} of type {_short(mime)} left out: kward sends only {', '.join(IMAGE_MIME_TYPES)}]")
        return
    if len(data) * 3 // 4 > MAX_IMAGE_BYTES:
        lines.append(f"[{what} left out: larger than {MAX_IMAGE_BYTES} bytes]")
        return
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        lines.append(f"[{what} left out: its data is not base64]")
        return
    if len(images) >= MAX_IMAGES:
        lines.append(f"[{what} left out: at most {MAX_IMAGES} images per result]")
        return
    images.append(ImagePart(data=data, mime_type=mime, alt=what))
    lines.append(f"[{what} {len(images)}: {mime}]")


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=1)
    except (TypeError, ValueError):
        return repr(value)
