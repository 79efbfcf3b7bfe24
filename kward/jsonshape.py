"""Bounds on JSON values from outside: request params and config.json.

Recursive code (redaction, encoding, copying) must never meet a value nested deeper than
Python's recursion limit, and nothing may be stored that cannot be written as UTF-8. So
values entering kward are checked once, here: at most `MAX_DEPTH` levels of arrays and
objects, and no string or key holding an unpaired surrogate (JSON's ``"\\ud800"``).

`find_problem` walks iteratively (no recursion of its own). `scan_top_level` reads the
top-level members of a JSON object too deep for the decoder (its `id`, and which member
goes too deep) from the text, without decoding it. `maybe_odd(text)` is a quick
test on raw JSON text that is false for nearly every message, so the walk is only paid
for messages that could fail it. Pure functions; any thread; standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

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


#: At most this many tokens (strings, runs of brackets, separators) are read by `scan_top_level`.
SCAN_TOKENS = 400_000  # about 0.25 s at worst

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]+|[\]}]+|[,:]')
_SCALAR_START = frozenset('"-0123456789n')
_SCALAR = json.JSONDecoder()


class TopLevel(NamedTuple):
    """What `scan_top_level` found. `has_id`: the object has a top-level ``id`` member whose
    value is `id` (a string, a number or None; anything else is reported as None);
    `complete`: the whole object was read (so a missing ``id`` really is missing);
    `deep_member`: the first top-level member nested more than `MAX_DEPTH` levels below
    the object, and `deep_key` the key inside it that does (when that member is an object)."""

    has_id: bool
    id: Any
    complete: bool
    deep_member: str | None
    deep_key: str | None


def _key(token: str) -> str | None:
    try:
        value = _SCALAR.decode(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def scan_top_level(text: str, max_depth: int = MAX_DEPTH, budget: int = SCAN_TOKENS) -> TopLevel | None:
    """The top-level members of the JSON object `text` that matter for answering it, read
    token by token (no recursion, at most `budget` tokens); None when `text` does not start
    as an object. Only what sits directly in the top-level object counts: a string holding
    ``"id":`` and keys inside nested values are skipped whole. The reading stops once the
    id and the deep member are known."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return None
    depth = 0
    key_next = False  # the next string at depth 1 is a key
    pending: str | None = None  # the key just read, before its colon
    member: str | None = None  # the top-level member being read
    inner_key: str | None = None  # the last key read directly inside `member`
    has_id, id_value, deep_member, deep_key = False, None, None, None
    for count, match in enumerate(_TOKEN.finditer(text, start)):
        if count >= budget:
            return TopLevel(has_id, id_value, False, deep_member, deep_key)
        token = match.group()
        first = token[0]
        if first == '"':
            if depth == 1 and key_next:
                pending = _key(token)
                key_next = False
            elif depth == 2 and key_next:
                inner_key = _key(token)
                key_next = False
        elif first in "[{":
            if depth == 1:
                inner_key = None
            depth += len(token)
            key_next = token[-1] == "{" and depth <= 2
            if depth > max_depth + 1 and deep_member is None:
                deep_member, deep_key = member, inner_key
                if has_id:
                    return TopLevel(has_id, id_value, False, deep_member, deep_key)
        elif first in "]}":
            depth -= len(token)
            if depth <= 0:
                return TopLevel(has_id, id_value, True, deep_member, deep_key)
        elif first == ",":
            key_next = depth <= 2
        elif depth == 1 and pending is not None:  # the colon after a top-level key
            member, pending = pending, None
            if member == "id":
                has_id, id_value = True, _scalar_at(text, match.end())
                if deep_member is not None:
                    return TopLevel(has_id, id_value, False, deep_member, deep_key)
    return TopLevel(has_id, id_value, False, deep_member, deep_key)


def _scalar_at(text: str, pos: int) -> Any:
    """The string, number or null starting at `pos` (after blanks); None for anything else."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    if pos >= len(text) or text[pos] not in _SCALAR_START:
        return None
    try:
        value = _SCALAR.raw_decode(text, pos)[0]
    except ValueError:
        return None
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
