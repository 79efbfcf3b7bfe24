"""Validation of image attachments on `turns/start` (the spec's contract).

Only `{type: "image", data: <raw base64, no data: prefix>, mimeType, name?, sizeBytes?}`;
MIME types png/jpeg/gif/webp (`kward.limits.IMAGE_MIME_TYPES`); at most 10 MiB per image,
declared or decoded. Each violation raises InvalidParams naming the attachment and the
problem; what passes becomes an `ImagePart` (`name` its `alt`). Pure.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Any

from kward.errors import InvalidParams
from kward.limits import IMAGE_MIME_TYPES as MIME_TYPES
from kward.limits import MAX_IMAGE_BYTES as MAX_BYTES
from kward.model import ImagePart

MAX_ATTACHMENTS = 32


def _bad(index: int, problem: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: attachments[{index}] {problem}", data={"param": f"attachments[{index}]"})


def normalize_attachments(raw: Any) -> list[ImagePart]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidParams("Invalid params: 'attachments' must be an array", data={"param": "attachments"})
    if len(raw) > MAX_ATTACHMENTS:
        raise InvalidParams(f"Invalid params: at most {MAX_ATTACHMENTS} attachments per turn",
                            data={"param": "attachments"})
    return [_one(i, a) for i, a in enumerate(raw)]


def _one(i: int, att: Any) -> ImagePart:
    if not isinstance(att, dict):
        raise _bad(i, "must be an object")
    kind = att.get("type")
    if kind != "image":
        raise _bad(i, f"has unsupported type {kind!r}; only \"image\" is supported")
    mime = att.get("mimeType", att.get("mime_type", att.get("media_type")))
    if not isinstance(mime, str) or mime.lower() not in MIME_TYPES:
        raise _bad(i, f"has unsupported MIME type {mime!r}; supported: {', '.join(MIME_TYPES)}")
    data = att.get("data")
    if not isinstance(data, str) or not data:
        raise _bad(i, "needs base64 image data in 'data'")
    if data.startswith("data:"):
        raise _bad(i, "data must be raw base64 without a data: URL prefix")
    declared = att.get("sizeBytes", att.get("size_bytes"))
    if declared is not None and (isinstance(declared, bool) or not isinstance(declared, int) or declared < 0):
        raise _bad(i, "sizeBytes must be a non-negative integer")
    if declared is not None and declared > MAX_BYTES:
        raise _bad(i, f"is too large ({declared} bytes; the limit is {MAX_BYTES})")
    if len(data) > (MAX_BYTES * 4) // 3 + 8:
        raise _bad(i, f"is too large (over {MAX_BYTES} bytes)")
    try:
        decoded = len(b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        raise _bad(i, "data is not valid base64") from None
    if decoded > MAX_BYTES:
        raise _bad(i, f"is too large ({decoded} bytes; the limit is {MAX_BYTES})")
    name = att.get("name")
    return ImagePart(data, mime.lower(), name if isinstance(name, str) and name else None)
