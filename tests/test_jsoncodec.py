"""kward.jsoncodec gives what `json` gives (same text, same values, same errors), without
importing `json` on the way, and is `json` itself where the accelerator is missing."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kward import jsoncodec

REPO = Path(__file__).resolve().parents[1]

VALUES = [
    None, True, False, 0, -1, 10**30, -(10**40), 1.5, -0.0, 1e300, 5e-324, 0.1 + 0.2, "", "plain", "é ü ß 日本 😀",
    "quote \" back \\ slash / tab \t nl \n cr \r bs \b ff \f nul \x00 unit \x1f del \x7f", "\u2028\u2029",
    "lone \ud800 high", "lone \udfff low", [], {}, [1, [2, [3, {"a": [None]}]]], {"b": 1, "a": 2, "é": "x"},
    {"nested": {"k": [1.25, "v", {"z": None}]}, "list": list(range(20))}, (1, 2), {1: "int key", 2.5: "float key",
                                                                                     True: "bool key", None: "none"},
    [float("nan"), float("inf"), float("-inf")], {"deep": [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]},
]
OPTIONS = [{}, {"ensure_ascii": False}, {"separators": (",", ":")}, {"sort_keys": True}, {"allow_nan": False},
           {"ensure_ascii": False, "separators": (",", ":"), "allow_nan": False}]


def outcome(call):
    try:
        return "ok", call()
    except Exception as exc:  # the same class and message, or the same result
        return type(exc), str(exc)


@pytest.mark.parametrize("options", OPTIONS)
def test_dumps_is_json_dumps(options):
    for value in VALUES + [{"k": object()}, [1, {2, 3}], b"bytes", {(1, 2): "tuple key"}, {"a": 1, 2: "mixed"}]:
        expected = outcome(lambda: json.dumps(value, **options))
        assert outcome(lambda: jsoncodec.dumps(value, **options)) == expected, (value, options)


def test_dumps_refuses_a_circular_value_as_json_does():
    loop: list = []
    loop.append(loop)
    assert outcome(lambda: jsoncodec.dumps(loop)) == outcome(lambda: json.dumps(loop)) != ("ok", None)
    assert jsoncodec.dumps([1, 2]) == "[1, 2]"  # (nothing is left over from the failed call)


TEXTS = [json.dumps(v, **o) for v in VALUES for o in ({}, {"ensure_ascii": False})] + [
    " \t\n\r {\"a\" : [1 , 2]} \r\n\t ", "1e400", "-1e400", "12345678901234567890123456789", "1" * 5000,
    "NaN", "Infinity", "-Infinity", "[NaN]", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\uDFFF\"", "{\"a\":1,\"a\":2}",
    # bad input: json's error (class, message, position) each time
    "", " ", "nul", "[1,]", "{\"a\" 1}", "[1] x", "{} {}", "\"unterminated", "\"bad \\x escape\"", "\"ctl \x01\"",
    "\ufeff{}", "[" * 100000 + "]" * 100000, "{\"a\":" * 3000 + "1" + "}" * 3000, "\"\\u12\"", "01", "-", "tru",
    "[1, 2", "{\"a\": }", "\x00", "1" * 5000 + "x",
]


def decode_outcome(loads, text, **kw):
    try:
        return "ok", repr(loads(text, **kw))  # (repr: NaN != NaN)
    except json.JSONDecodeError as exc:
        return "JSONDecodeError", exc.msg, exc.pos, exc.lineno, exc.colno
    except Exception as exc:
        return type(exc), str(exc)


def reject(name):
    raise ValueError(f"{name} is not valid JSON")


@pytest.mark.parametrize("hook", [None, reject])
def test_loads_is_json_loads(hook):
    for text in TEXTS:
        assert decode_outcome(jsoncodec.loads, text, parse_constant=hook) == decode_outcome(
            json.loads, text, parse_constant=hook), text[:80]


def test_loads_of_bytes_and_odd_values_is_json_loads():
    for data in (b'{"a": 1}', '{"a": 1}'.encode("utf-16"), b"\xef\xbb\xbf[1]", bytearray(b"[2]")):
        assert jsoncodec.loads(data) == json.loads(data)
    assert math.isnan(jsoncodec.loads("NaN")) and jsoncodec.loads("[Infinity]") == [math.inf]
    assert type(jsoncodec.loads("1.0")) is float and type(jsoncodec.loads("10")) is int


def test_decode_errors_are_jsons_and_json_is_imported_only_for_them():
    code = (
        "import sys\n"
        "from kward import jsoncodec\n"
        "assert jsoncodec.loads(' {\"a\": [1, 2.5, \"\\\\u00e9\"]} ') == {'a': [1, 2.5, '\\u00e9']}\n"
        "assert jsoncodec.dumps({'a': [1, None]}, separators=(',', ':')) == '{\"a\":[1,null]}'\n"
        "assert jsoncodec.dumps('\\u00e9') == '\"\\\\u00e9\"'\n"
        "assert not {'json', 're', 'enum'} & set(sys.modules), sorted(sys.modules)\n"
        "try:\n"
        "    jsoncodec.loads('[1,')\n"
        "except ValueError as exc:\n"
        "    assert jsoncodec.is_decode_error(exc) and exc.msg == 'Expecting value' and exc.colno == 4\n"
        "assert 'json' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr


def test_without_the_accelerator_every_call_is_jsons(monkeypatch):
    monkeypatch.setattr(jsoncodec, "_c_make_scanner", None)
    for value in VALUES:
        for options in OPTIONS:
            assert outcome(lambda: jsoncodec.dumps(value, **options)) == outcome(lambda: json.dumps(value, **options))
    for text in TEXTS[:40]:
        assert decode_outcome(jsoncodec.loads, text) == decode_outcome(json.loads, text)
    assert not jsoncodec.is_decode_error(ValueError("not json's"))
