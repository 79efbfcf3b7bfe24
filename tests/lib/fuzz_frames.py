"""Seeded mutated frames for tests/rpc/test_rpc_fuzz.py.

Everything is drawn from the `random.Random` passed in, so a seed replays a run exactly.
A `Unit` is bytes for the stream plus which request ids in it the server must answer
exactly once (`served`), must never answer (`skipped`: the frame carrying them cannot be
read as a request) and may answer at most once (`maybe`: limits of the child decide, such
as its recursion limit). Ids are keyed as the test client keys responses: `json.dumps` of
the id as JSON decodes it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from kward.rpc.framing import encode_frame


def key(id_text: str) -> str:
    """The response key of an id written as JSON text."""
    return json.dumps(json.loads(id_text))


def dumps(value: Any, rng: random.Random) -> str:
    """JSON text, sometimes with raw UTF-8 (so Content-Length must count bytes)."""
    if rng.random() < 0.5:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
            return json.dumps(value, ensure_ascii=False)
        except UnicodeEncodeError:  # a lone surrogate: only the escaped form is JSON
            pass
    return json.dumps(value)


framed = encode_frame  # a well-formed frame around a body; the malformed ones are built below


@dataclass
class Unit:
    data: bytes
    served: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    maybe: list[str] = field(default_factory=list)
    kind: str = ""


BAD_LENGTHS = [b"abc", b"-5", b"1.5", b"0x10", b"", b"+5", b"1e3", b"99999999999999999999", "１２".encode(),
               b"5 5", b"\x00"]
JUNK_LINES = [b"this is not a header", b"{}", b": no name", b"Bad Header: x", b"\x00\xff\xfe", b"[1,2]"]
NOT_JSON = [b"", b" ", b"{", b"}", b"hello", b'{"jsonrpc":"2.0"', b"\x00\x01\x02", b'{"a":1} trailing',
            b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"workspace/info"}', b"{'single': 'quotes'}", b"[,]",
            b'{"jsonrpc":"2.0","method":"workspace/info",}', b"nul\x00l", b"1 2", b'"unterminated']
NOT_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xe2\x82"]


class FrameFuzz:
    """Units of bytes for the stream, each self-contained: after any unit, the next frame
    written is read as the frame it is (the framing resynchronizes), which the probes
    between units check."""

    def __init__(self, rng: random.Random, max_frame: int):
        self.rng = rng
        self.max_frame = max_frame
        self.n = 0

    def _id(self, prefix: str = "f") -> str:
        self.n += 1
        return json.dumps(f"{prefix}{self.n}")

    def _request(self, id_text: str | None, method: str = "workspace/info", params: str | None = None) -> str:
        parts = ['"jsonrpc":"2.0"', f'"method":{json.dumps(method)}']
        if id_text is not None:
            parts.insert(1, f'"id":{id_text}')
        if params is not None:
            parts.append(f'"params":{params}')
        self.rng.shuffle(parts)
        return "{" + ",".join(parts) + "}"

    def probe(self) -> Unit:
        i = self._id("p")
        method = self.rng.choice(["workspace/info", "sessions/list", "models/current", "tools/list"])
        return Unit(framed(self._request(i, method).encode()), served=[key(i)], kind="probe")

    def unit(self) -> Unit:
        kinds = [self._not_json, self._not_utf8, self._batch, self._scalar, self._deep, self._surrogates,
                 self._non_finite, self._big_numbers, self._duplicate_keys, self._envelope, self._control_chars,
                 self._odd_but_valid, self._headers_ok, self._no_length, self._bad_length, self._junk_line,
                 self._long_header, self._short_length, self._padded, self._too_large, self._blank_lines]
        weights = [3, 3, 2, 1, 2, 3, 2, 2, 2, 4, 1, 3, 3, 2, 3, 2, 1, 2, 2, 0.3, 1]
        make = self.rng.choices(kinds, weights)[0]
        unit = make()
        unit.kind = make.__name__.lstrip("_")
        return unit

    # well-framed bodies

    def _not_json(self) -> Unit:
        body = self.rng.choice(NOT_JSON)
        if self.rng.random() < 0.3:
            body = bytes(self.rng.randrange(32, 127) for _ in range(self.rng.randrange(1, 200)))
        return Unit(framed(body))

    def _not_utf8(self) -> Unit:
        i = self._id()
        text = self._request(i, "workspace/info", '{"workspaceRoot":"@@"}').encode()
        return Unit(framed(text.replace(b"@@", self.rng.choice(NOT_UTF8))), skipped=[key(i)])

    def _batch(self) -> Unit:
        ids = [self._id() for _ in range(self.rng.randrange(0, 3))]
        body = "[" + ",".join(self._request(i) for i in ids) + "]"
        return Unit(framed(body.encode()), skipped=[key(i) for i in ids])

    def _scalar(self) -> Unit:
        return Unit(framed(self.rng.choice([b"1", b'"x"', b"null", b"true", b"-0.0", b"1e999"])))

    def _deep(self) -> Unit:
        if self.rng.random() < 0.3:
            n = self.rng.choice([100, 1000, 20000])
            return Unit(framed(b"[" * n + b"]" * n))
        i = self._id()
        depth = self.rng.choice([60, 63, 64, 65, 100, 300, 5000])
        opener, closer = self.rng.choice([('{"a":', "}"), ("[", "]")])
        text = self._request(i, "workspace/info", '{"p":' + opener * depth + "1" + closer * depth + "}")
        unit = Unit(framed(text.encode()))
        (unit.served if depth <= 300 else unit.maybe).append(key(i))  # deeper: the child's recursion limit decides
        return unit

    def _surrogates(self) -> Unit:
        i = self._id()
        lone = '"%s%d"' % (self.rng.choice(["\\ud800", "\\udfff", "a\\udc80b", "\\ud800\\u0041"]), self.n)
        where = self.rng.choice(["id", "method", "key", "value", "paired"])
        if where == "id":  # a string id; it goes back \u-escaped
            return Unit(framed(self._request(lone).encode()), served=[key(lone)])
        if where == "method":
            text = self._request(i, json.loads(lone))
        elif where == "key":
            text = self._request(i, "workspace/info", "{" + lone + ":1}")
        elif where == "value":
            text = self._request(i, "sessions/create", '{"name":' + lone + "}")
        else:
            text = self._request(i, "workspace/info", '{"x":"\\ud83d\\ude00"}')
        return Unit(framed(text.encode()), served=[key(i)])

    def _non_finite(self) -> Unit:
        i = self._id()
        constant = self.rng.choice(["NaN", "Infinity", "-Infinity"])
        if self.rng.random() < 0.5:
            return Unit(framed(self._request(constant).encode()))
        return Unit(framed(self._request(i, "sessions/list", '{"limit":' + constant + "}").encode()), skipped=[key(i)])

    def _big_numbers(self) -> Unit:
        choice = self.rng.randrange(4)
        if choice == 0:  # a huge integer id is still an id
            self.n += 1
            i = str(10 ** self.rng.choice([20, 300]) + self.n)
            return Unit(framed(self._request(i).encode()), served=[key(i)])
        if choice == 1:  # 1e400 reads as infinity: answered, but its id cannot be written back
            return Unit(framed(self._request("1e400").encode()))
        i = self._id()
        number = self.rng.choice(["1e400", "-1e400", "1e-400", "1" + "0" * 400, "-0", "1" * 5000])
        text = self._request(i, "sessions/list", '{"limit":' + number + "}")
        unit = Unit(framed(text.encode()))
        (unit.maybe if len(number) > 4300 else unit.served).append(key(i))  # int digit limit: a parse error
        return unit

    def _duplicate_keys(self) -> Unit:
        first, last = self._id(), self._id()
        text = ('{"jsonrpc":"2.0","id":%s,"method":"nope","id":%s,"method":"workspace/info","params":[],'
                '"params":{}}' % (first, last))
        return Unit(framed(text.encode()), served=[key(last)], skipped=[key(first)])

    def _envelope(self) -> Unit:
        i = self._id()
        choice = self.rng.randrange(9)
        if choice == 0:
            text = '{"id":%s,"method":"workspace/info"}' % i
        elif choice == 1:
            text = '{"jsonrpc":%s,"id":%s,"method":"workspace/info"}' % (self.rng.choice(['"1.0"', "2.0", "null"]), i)
        elif choice == 2:
            text = '{"jsonrpc":"2.0","id":%s%s}' % (i, self.rng.choice(["", ',"method":""', ',"method":5',
                                                                        ',"method":null', ',"method":["x"]']))
        elif choice == 3:
            text = self._request(i, "workspace/info", self.rng.choice(["[]", '"x"', "5", "true", "[1]"]))
        elif choice == 4:  # an id that is not an id: answered with a null id
            text = self._request(self.rng.choice(["true", "{}", "[1]", '{"id":1}']))
            return Unit(framed(text.encode()))
        elif choice == 5:  # notifications: never answered, whatever is wrong with them
            text = self._request(None, self.rng.choice(["workspace/info", "nope", "turns/start", "sessions/rename"]),
                                 self.rng.choice([None, "[]", '{"sessionId":5}']))
            return Unit(framed(text.encode()))
        elif choice == 6:
            text = self._request("null")
            return Unit(framed(text.encode()))
        elif choice == 7:
            text = self._request(i, self.rng.choice(["nope", "workspace/", "WORKSPACE/INFO", "x" * 5000, "__init__"]))
        else:
            text = self._request(i, "workspace/info", None)[:-1] + ',"trace":%s,"extra":[1]}' % self.rng.choice(
                ['{"traceparent":5}', '"t"', '{"traceparent":"00-x"}'])
        return Unit(framed(text.encode()), served=[key(i)])

    def _control_chars(self) -> Unit:
        i = self._id()
        text = self._request(i, "workspace/info", '{"workspaceRoot":"a\x01\tb"}')
        return Unit(framed(text.encode()), skipped=[key(i)])

    def _odd_but_valid(self) -> Unit:
        i = self._id(self.rng.choice(["f", "é✓🙂-", "Content-Length: 5\r\n\r\n"]))
        value = self.rng.choice(["é✓🙂", "\u202e", "Content-Length: 3\r\n\r\n{}", "\r\n\r\n"])
        text = self._request(i, "workspace/info", dumps({"x": value}, self.rng))
        text = " \r\n\t" * self.rng.randrange(2) + text + " \n" * self.rng.randrange(2)  # white space around
        return Unit(framed(text.encode()), served=[key(i)])

    # header blocks

    def _headers_ok(self) -> Unit:
        i = self._id()
        body = self._request(i).encode()
        name = self.rng.choice([b"Content-Length", b"content-length", b"CONTENT-LENGTH"])
        length = name + b":" + self.rng.choice([b" ", b"", b"   "]) + b"%d" % len(body) + self.rng.choice([b"", b"  "])
        lines = [length] + self.rng.sample([b"Content-Type: application/vscode-jsonrpc; charset=utf-8", b"X-Junk: {}",
                                            b"X-Empty:", b"X-Colon: a:b:c"], self.rng.randrange(3))
        self.rng.shuffle(lines)
        eol = self.rng.choice([b"\r\n", b"\n"])
        return Unit(eol.join(lines) + eol + eol + body, served=[key(i)])

    def _no_length(self) -> Unit:
        if self.rng.random() < 0.5:
            return Unit(b"Content-Type: application/json\r\n\r\n")
        i = self._id()  # the body then runs into the next frame's header, which is still found
        return Unit(b"X-Thing: 1\r\n\r\n" + self._request(i).encode(), skipped=[key(i)])

    def _bad_length(self) -> Unit:
        head = b"Content-Length: " + self.rng.choice(BAD_LENGTHS) + b"\r\n\r\n"
        if self.rng.random() < 0.5:
            return Unit(head)
        i = self._id()
        return Unit(head + self._request(i).encode(), skipped=[key(i)])

    def _junk_line(self) -> Unit:
        i = self._id()
        body = self._request(i).encode()
        length, junk = b"Content-Length: %d" % len(body), self.rng.choice(JUNK_LINES)
        if self.rng.random() < 0.5:  # junk after the length: the block and its body are skipped
            return Unit(length + b"\r\n" + junk + b"\r\n\r\n" + body, skipped=[key(i)])
        # junk first: a fault; the length line then starts a block of its own and is served
        return Unit(junk + b"\r\n" + length + b"\r\n\r\n" + body, served=[key(i)])

    def _long_header(self) -> Unit:
        i = self._id()
        body = self._request(i).encode()
        return Unit(b"X-Long: " + b"a" * self.rng.choice([9000, 70000]) + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
                    + body, skipped=[key(i)])

    def _short_length(self) -> Unit:
        i = self._id()  # no ':' inside its strings, so its tail never looks like a header
        body = self._request(i).encode()
        cut = self.rng.randrange(0, len(body) - 1)
        return Unit(b"Content-Length: %d\r\n\r\n" % cut + body, skipped=[key(i)])

    def _padded(self) -> Unit:
        i = self._id()
        body = self._request(i).encode()
        if self.rng.random() < 0.5:
            return Unit(framed(body + b" " * self.rng.randrange(1, 50)), served=[key(i)])
        return Unit(framed(body + b"x" * self.rng.randrange(1, 50)), skipped=[key(i)])

    def _too_large(self) -> Unit:
        i = self._id()
        body = self._request(i).encode()
        return Unit(framed(body + b" " * (self.max_frame + 1 - len(body) + self.rng.randrange(100))), skipped=[key(i)])

    def _blank_lines(self) -> Unit:
        return Unit(self.rng.choice([b"\r\n", b"\n\n", b"\r\n\r\n\r\n"]))

    def tail(self) -> bytes:
        """What may end a stream: a cut body, a cut header, a length that runs past EOF."""
        return self.rng.choice([b"", b'Content-Length: 100\r\n\r\n{"jsonrpc"', b"Content-Len",
                                b"Content-Length: 999999999999\r\n\r\nabc", b"Content-Length: 5\r\n"])
