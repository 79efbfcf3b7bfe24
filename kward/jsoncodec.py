"""JSON without importing `json`: the stdlib's C accelerator `_json`, driven directly.

`import json` costs a tenth of `kward rpc`'s start-up: json.decoder and json.scanner
compile regular expressions when imported, which imports `re` and `enum`. `loads` and
`dumps` here call the same C functions the `json` module calls (`json.loads` and
`json.JSONEncoder.encode` use exactly these when `_json` is there, as it is in CPython), so
their results are the ones `json` gives, and `json` is imported only when it is needed:

- every error goes to `json`: when the fast path raises anything (a syntax error, a
  value `dumps` cannot encode, NaN with `allow_nan=False`, nesting too deep for the
  recursion limit, a hook that raised), the same call is made again with `json.loads` /
  `json.dumps`, which returns its result or raises its own exception with its own
  message (`json.JSONDecodeError` with `msg`, `lineno`, `colno`). So a hook
  (`parse_constant`) may be called twice for one bad input: it must have no side effects.
- input that is not `str` (bytes), or that starts with a BOM, goes to `json.loads` too;
- without `_json` (another interpreter), or when it does not accept the calls below,
  every call is `json`'s.

The contract used, the same from CPython 3.10 to 3.14 (Modules/_json.c, Lib/json/):
`_json.make_scanner(context)` reads `strict`, `object_hook`, `object_pairs_hook`,
`parse_float`, `parse_int` and `parse_constant` from `context` (what `json.JSONDecoder`
has) and is called as `scan(text, index) -> (value, end)`, raising StopIteration when no
value starts at `index`; `json.loads` skips the whitespace ``[ \\t\\n\\r]*`` before and after
it and refuses anything else after it ("Extra data"). `_json.make_encoder(markers, default,
encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)` is what
`JSONEncoder.iterencode(o, _one_shot=True)` builds when `indent` is None, with `markers` a
new dict per call (check_circular) and `encoder` `_json.encode_basestring_ascii` or
`_json.encode_basestring`; calling it with `(value, 0)` gives the chunks whose join is
the text. A top-level string is encoded by that function alone, as `encode` does.

Only the compact form is offered (`indent` is always None; `dumps` with `indent` is
`json.dumps`). Pure functions, safe from any thread (a scanner is shared as `json` shares
its default decoder); standard library only.
"""

from __future__ import annotations

import sys

from kward.records import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

try:
    from _json import encode_basestring as _c_string
    from _json import encode_basestring_ascii as _c_string_ascii
    from _json import make_encoder as _c_make_encoder
    from _json import make_scanner as _c_make_scanner
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    _c_make_scanner = None

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE: [ \t\n\r]*
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}  # json.decoder's


class _Context:
    """What `_json.make_scanner` reads from a `json.JSONDecoder`, with its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    def __init__(self, parse_constant: Callable[[str], Any] | None):
        self.parse_constant = parse_constant if parse_constant is not None else _CONSTANTS.__getitem__


# parse_constant (None: the default) -> its scanner, for the first few hooks (module-level
# functions); a race builds two, harmlessly
_scanners: dict[Any, Any] = {}


def _scanner(parse_constant: Callable[[str], Any] | None) -> Any:
    scan = _scanners.get(parse_constant)
    if scan is None:
        scan = _c_make_scanner(_Context(parse_constant))
        if len(_scanners) < 8:
            _scanners[parse_constant] = scan
    return scan


def loads(s: str, *, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """`json.loads(s, parse_constant=parse_constant)`."""
    if _c_make_scanner is not None and type(s) is str and not s.startswith("\ufeff"):
        try:
            start = len(s) - len(s.lstrip(_WHITESPACE))
            value, end = _scanner(parse_constant)(s, start)
            if end == len(s) or not s[end:].lstrip(_WHITESPACE):
                return value
        except Exception:  # json raises (or returns) the same, with its own message
            pass
    import json

    return json.loads(s, parse_constant=parse_constant)


def _refuse(value: Any) -> Any:
    raise TypeError  # json.dumps raises its own TypeError naming the type


def dumps(value: Any, *, ensure_ascii: bool = True, separators: tuple[str, str] | None = None,
          sort_keys: bool = False, allow_nan: bool = True) -> str:
    """`json.dumps(value, ensure_ascii=..., separators=..., sort_keys=..., allow_nan=...)`."""
    if _c_make_scanner is not None:
        try:
            encode_string = _c_string_ascii if ensure_ascii else _c_string
            if isinstance(value, str):
                return encode_string(value)
            item_separator, key_separator = separators if separators is not None else (", ", ": ")
            encoder = _c_make_encoder({}, _refuse, encode_string, None, key_separator, item_separator,
                                      sort_keys, False, allow_nan)
            return "".join(encoder(value, 0))
        except Exception:  # json raises (or returns) the same, with its own message
            pass
    import json

    return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys,
                      allow_nan=allow_nan)


def is_decode_error(exc: BaseException) -> bool:
    """Whether `exc` is a `json.JSONDecodeError` (with `msg`, `lineno`, `colno`); only an
    error from `json` can be one, so `json` is imported already when it is."""
    json = sys.modules.get("json")
    return json is not None and isinstance(exc, json.JSONDecodeError)
