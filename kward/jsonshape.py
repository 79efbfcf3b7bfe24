"""Bounds on JSON values from outside: request params and config.json.

Recursive code (redaction, encoding, copying) must never meet a value nested deeper than
Python's recursion limit, and nothing may be stored that cannot be written as UTF-8. So
values entering kward are checked once, here: at most `MAX_DEPTH` levels of arrays and
objects, and no string or key holding an unpaired surrogate (JSON's ``"\\ud800"``).

`find_problem` walks iteratively (no recursion of its own). `scan_top_level` reads the
top-level members of a JSON object too deep for the decoder (its `id`, `jsonrpc` and
`method`, and which member goes too deep) from the text, without decoding it, in linear time. `maybe_odd(text)` is a quick
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
#: Every token is matched once and never rescanned (a string that does not end runs to the end
#: of the text), so the reading is linear in the text: about 0.1 s per MB at worst.
SCAN_TOKENS = 400_000

# (the closing quote is optional: an unterminated string is one token up to the end of the
# text, instead of a failed match retried from every later quote)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]+|[\]}]+|[,:]')
_SCALAR_START = frozenset('"-0123456789n')
_SCALAR = json.JSONDecoder()
#: The top-level members whose scalar values `scan_top_level` reports.
_WATCHED = ("id", "jsonrpc", "method")
#: A watched member's value that is not a string, a number or null (an object, an array, a boolean).
class _NotScalar:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_SCALAR"


NOT_SCALAR = _NotScalar()


class TopLevel(NamedTuple):
    """What `scan_top_level` found. `members`: the top-level ``id``, ``jsonrpc`` and
    ``method`` members seen, each with its value (a string, a number or None for null;
    `NOT_SCALAR` for anything else); `complete`: the whole object was read (so a member
    missing from `members` really is missing); `deep_member`: the first top-level member
    nested more than `MAX_DEPTH` levels below the object, and `deep_key` the key inside it
    that does (when that member is an object)."""

    members: dict[str, Any]
    complete: bool
    deep_member: str | None
    deep_key: str | None

    @property
    def has_id(self) -> bool:
        return "id" in self.members

    @property
    def id(self) -> Any:
        return self.members.get("id")


def _key(token: str) -> str | None:
    try:
        value = _SCALAR.decode(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def scan_top_level(text: str, max_depth: int = MAX_DEPTH, budget: int = SCAN_TOKENS) -> TopLevel | None:
    """The top-level members of the JSON object `text` that matter for answering it, read
    token by token (no recursion, at most `budget` tokens, time linear in `text`); None when
    `text` does not start as an object. Only what sits directly in the top-level object
    counts: a string holding ``"id":`` and keys inside nested values are skipped whole. The
    reading stops once the deep member and all of ``id``, ``jsonrpc`` and ``method`` are
    known."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return None
    depth = 0
    key_next = False  # the next string at depth 1 is a key
    pending: str | None = None  # the key just read, before its colon
    member: str | None = None  # the top-level member being read
    inner_key: str | None = None  # the last key read directly inside `member`
    members: dict[str, Any] = {}
    deep_member: str | None = None
    deep_key: str | None = None
    for count, match in enumerate(_TOKEN.finditer(text, start)):
        if count >= budget:
            break
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
                if len(members) == len(_WATCHED):
                    break
        elif first in "]}":
            depth -= len(token)
            if depth <= 0:
                return TopLevel(members, True, deep_member, deep_key)
        elif first == ",":
            key_next = depth <= 2
        elif depth == 1 and pending is not None:  # the colon after a top-level key
            member, pending = pending, None
            if member in _WATCHED and member not in members:
                members[member] = _scalar_at(text, match.end())
                if deep_member is not None and len(members) == len(_WATCHED):
                    break
    return TopLevel(members, False, deep_member, deep_key)


def _scalar_at(text: str, pos: int) -> Any:
    """The string, number or null starting at `pos` (after blanks); `NOT_SCALAR` for anything else."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    if pos >= len(text) or text[pos] not in _SCALAR_START:
        return NOT_SCALAR
    try:
        value = _SCALAR.raw_decode(text, pos)[0]
    except ValueError:
        return NOT_SCALAR
    if value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool)):
        return value
    return NOT_SCALAR
