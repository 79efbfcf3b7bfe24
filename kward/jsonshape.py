"""Bounds on JSON values from outside: request params and config.json.

Recursive code (redaction, encoding, copying) must never meet a value nested deeper than
Python's recursion limit, and nothing may be stored that cannot be written as UTF-8. So
values entering kward are checked once, here: at most `MAX_DEPTH` levels of arrays and
objects, and no string or key holding an unpaired surrogate (JSON's ``"\\ud800"``).

`find_problem` walks iteratively (no recursion of its own). `maybe_odd(text)` is a quick
test on raw JSON text that is false for nearly every message, so the walk is only paid
for messages that could fail it. Pure functions; any thread; standard library only.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 64

NESTED_TOO_DEEPLY = f"must not be nested more than {MAX_DEPTH} levels deep"
NOT_UNICODE = "must be valid Unicode (it holds an unpaired surrogate)"

# A \u escape of a surrogate (paired ones match too: they are then walked and pass)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def maybe_odd(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """False when the JSON `text` certainly decodes to a value `find_problem` accepts:
    fewer brackets than `max_depth` and no surrogate escape. Lone surrogates can only come
    from escapes, since `text` itself was decoded from UTF-8."""
    if text.count("[") + text.count("{") > max_depth:
        return True
    if "\\u" not in text:
        return False
    return _SURROGATE_ESCAPE.search(text) is not None


def _bad_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def find_problem(value: Any, max_depth: int = MAX_DEPTH) -> tuple[list[str | int], str] | None:
    """The first problem in a decoded JSON `value`: (path to it, what is wrong), or None.

    The path lists the keys and indexes from `value` down (empty for `value` itself); the
    problem is `NESTED_TOO_DEEPLY` (for the container at level `max_depth` + 1, `value`
    itself being level 1) or `NOT_UNICODE` (for a string or a key)."""
    stack: list[tuple[Any, int, list[str | int]]] = [(value, 1, [])]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            if _bad_text(item):
                return path, NOT_UNICODE
            continue
        if isinstance(item, dict):
            if depth > max_depth:
                return path, NESTED_TOO_DEEPLY
            for key, sub in item.items():
                if isinstance(key, str) and _bad_text(key):
                    return path + [key], NOT_UNICODE
                if isinstance(sub, (str, dict, list)):
                    stack.append((sub, depth + 1, path + [key]))
        elif isinstance(item, list):
            if depth > max_depth:
                return path, NESTED_TOO_DEEPLY
            for index, sub in enumerate(item):
                if isinstance(sub, (str, dict, list)):
                    stack.append((sub, depth + 1, path + [index]))
    return None


def format_path(path: list[str | int], limit: int = 4) -> str:
    """`values.a[2].b`, cut after `limit` parts (`...`); a key with odd characters is shown
    escaped, so the message itself stays valid Unicode."""
    out = ""
    for i, part in enumerate(path):
        if i == limit:
            return out + "..."
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            shown = part.encode("utf-8", "backslashreplace").decode("utf-8")
            out += ("." if out else "") + shown
    return out
