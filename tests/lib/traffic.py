"""Every message the RPC tests exchange with kward, checked against the published schema
(docs/protocol.schema.json, which `tests/packaging/test_schema.py` keeps equal to what
`kward rpc --print-schema` prints) by `lib.schema_check`.

`lib.rpc_client.FrameClient` reports what it writes (`Traffic.sent`) and what it reads
(`Traffic.received`). Checked:

- a response's `result` against its method's Result, and then the request's params
  against its Params (only for a request the server answered with a result: tests send
  refused params on purpose, and a refusal is the server's to make);
- an error response's `error.data` against `ErrorData`;
- a notification's params (a `turn/event`'s and `session/event`'s payload by its type)
  and a server request's params.

A violation is kept in `VIOLATIONS` (the `schema_traffic` fixture of tests/conftest.py
fails the test that caused it, naming the message and the path); a message whose method
or event type the schema does not have is a violation too (`STRICT`; counted in `UNKNOWN`). Thread-safe: the reader thread and the writing threads report."""

from __future__ import annotations

import collections
import json
import threading
from functools import cache
from typing import Any

from lib.paths import REPO
from lib.schema_check import problems

#: Fail on messages the schema does not know: every message kward sends has a shape.
STRICT = True
VIOLATIONS: list[str] = []
UNKNOWN: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


@cache
def schema() -> dict[str, Any]:
    return json.loads((REPO / "docs" / "protocol.schema.json").read_text(encoding="utf-8"))


@cache
def _kward_methods() -> frozenset[str]:
    from kward.rpc.method_table import METHODS

    return frozenset(METHODS)


def _index(kind: str, name: str) -> dict[str, str] | None:
    return schema()["x-kward-messages"].get(kind, {}).get(name)


def _check(what: str, ref: str, value: Any) -> None:
    found = problems(schema(), {"$ref": ref}, value)
    if found:
        with _lock:
            VIOLATIONS.extend(f"{what}: {p}" for p in found[:10])


def _unknown(what: str) -> None:
    with _lock:
        UNKNOWN[what] += 1
        if STRICT:
            VIOLATIONS.append(f"{what}: not in the schema")


class Traffic:
    """The messages of one client connection."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, Any]] = {}  # json id -> (method, params)
        self._buffer = b""

    # --- what the client writes ---------------------------------------------------------

    def sent(self, data: bytes) -> None:
        """Bytes written to the server: complete Content-Length frames are looked at."""
        with self._lock:
            self._buffer += data
            bodies = []
            while True:
                head, sep, rest = self._buffer.partition(b"\r\n\r\n")
                if not sep:
                    break
                length = _length(head)
                if length is None or len(rest) < length:
                    if length is None:  # not a frame (a test writing garbage on purpose)
                        self._buffer = b""
                    break
                bodies.append(rest[:length])
                self._buffer = rest[length:]
        for body in bodies:
            try:
                msg = json.loads(body)
            except (ValueError, RecursionError):  # not JSON, or nested too deep (on purpose)
                continue
            if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
                with self._lock:
                    self._pending[json.dumps(msg["id"])] = (msg["method"], msg.get("params"))

    # --- what the server writes ---------------------------------------------------------

    def received(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if isinstance(method, str):
            if "id" in msg:
                self._params("serverRequest", method, msg.get("params"))
            else:
                self._notification(method, msg.get("params"))
            return
        if "id" not in msg:
            return
        with self._lock:
            asked = self._pending.pop(json.dumps(msg["id"]), None)
        if asked is None:
            return
        name, params = asked
        if name not in _kward_methods():  # a method a test registered on its own table
            return
        refs = _index("request", name)
        if refs is None:
            _unknown(f"request {name}")
            return
        if "result" in msg:
            _check(f"{name} result", refs["result"], msg["result"])
            _check(f"{name} params (answered with a result)", refs["params"], {} if params is None else params)
        elif isinstance(msg.get("error"), dict) and "data" in msg["error"]:
            _check(f"{name} error data", "#/$defs/ErrorData", msg["error"]["data"])

    def _params(self, kind: str, method: str, params: Any) -> None:
        if method.startswith("test/"):  # a test's own notification (tests/rpc/test_rpc_inprocess.py)
            return
        refs = _index(kind, method)
        if refs is None:
            _unknown(f"{kind} {method}")
            return
        _check(f"{kind} {method}", refs["params"], {} if params is None else params)

    def _notification(self, method: str, params: Any) -> None:
        if method in ("turn/event", "session/event") and isinstance(params, dict):
            kind = "turnEvent" if method == "turn/event" else "sessionEvent"
            if _index(kind, str(params.get("type"))) is None:
                _unknown(f"{method} {params.get('type')}")
                return
        self._params("notification", method, params)


def _length(head: bytes) -> int | None:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def take_violations() -> list[str]:
    with _lock:
        found = list(VIOLATIONS)
        VIOLATIONS.clear()
    return found
