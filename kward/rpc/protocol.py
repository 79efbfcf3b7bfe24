"""JSON-RPC 2.0 message parsing, validation and encoding.

`parse(body)` turns one frame body into a `Request`, a `Notification` or (an object
with an id, no method, and either `result` or `error`) a `Response` to a server request, or raises
`Rejected`: the KwardError to answer with, the id to answer it with (None when unknown),
and whether the message was a notification (never answered). Batches (JSON arrays) are
not supported and are answered `-32600` with reason `batch_not_supported`.
Params nested more than `jsonshape.MAX_DEPTH` levels deep or holding an unpaired surrogate
anywhere are answered `-32602` naming the param, so no handler, redaction or store ever
sees such a value; also when they are too deep for the decoder itself, answered to the
request's own top-level `id` (read from the text) and never for a notification.
`encode(message)` produces compact UTF-8 JSON. Pure functions, safe from any thread.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from kward import jsonshape
from kward.errors import InvalidParams, InvalidRequest, KwardError, ParseError

_NO_ID = object()


class Request(NamedTuple):
    id: Any  # str, int or float, echoed unchanged
    method: str
    params: dict[str, Any]
    trace: dict[str, str] | None = None


class Notification(NamedTuple):
    method: str
    params: dict[str, Any]
    trace: dict[str, str] | None = None


class Response(NamedTuple):
    """The client's answer to a server request (`kward.rpc.server_requests`): `result`,
    or `error` (the error object as sent; None for a result)."""

    id: Any
    result: Any
    error: Any = None


class Rejected(Exception):
    """A message `parse` refused: `error` is what to answer, `request_id` the id to answer
    with (None: unknown), `notification` whether it was one (then nothing is answered)."""

    def __init__(self, error: KwardError, request_id: Any = None, notification: bool = False):
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id
        self.notification = notification


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# (one encoder and decoder each: json builds a new one per call given any option)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _fail(exc: KwardError, request_id: Any = None) -> Rejected:
    return Rejected(exc, request_id)


def _invalid_params(err: InvalidParams, request_id: Any) -> Rejected:
    """Answered with the request's id; never answered for a notification."""
    if request_id is _NO_ID:
        return Rejected(err, None, notification=True)
    return Rejected(err, request_id)


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _too_deep(text: str) -> Rejected:
    """The answer to a message too deeply nested to decode, as `parse` would answer it
    decoded, from what `jsonshape.scan_top_level` reads of the text: an `id` that is not a
    string, a number or null, a wrong `jsonrpc`, a bad `method` (when seen, or missing from
    an object read whole) are -32600; then nested params are -32602 and any other member
    too deep -32600. Answered to the message's own top-level `id`, never for a
    notification (except -32600 for one that is no valid request, with id null as `parse`
    does); a parse error with id null when neither the `id` nor the end of the object is
    found."""
    top = jsonshape.scan_top_level(text)
    if top is None or not (top.has_id or top.complete):
        return _fail(ParseError("Parse error: the JSON is nested too deeply"))
    if top.has_id and not _valid_id(top.id):
        return _fail(InvalidRequest("Invalid Request: id must be a string, a number or null"))
    answer_id = top.id if top.has_id else None
    seen = top.members
    if ("jsonrpc" in seen or top.complete) and seen.get("jsonrpc") != "2.0":
        return _fail(InvalidRequest('Invalid Request: "jsonrpc" must be "2.0"'), answer_id)
    if "method" in seen or top.complete:
        method = seen.get("method")
        if not isinstance(method, str) or not method:
            return _fail(InvalidRequest("Invalid Request: method must be a non-empty string"), answer_id)
    if top.deep_member == "params":
        name = top.deep_key
        where = f"'{jsonshape.format_path([name])}'" if name is not None else "params"
        err: KwardError = InvalidParams(f"Invalid params: {where} {jsonshape.NESTED_TOO_DEEPLY}",
                                        data={"param": jsonshape.format_path([name])} if name is not None else None)
    else:
        member = top.deep_member if top.deep_member is not None else "the message"
        err = InvalidRequest(f"Invalid Request: {member!r} {jsonshape.NESTED_TOO_DEEPLY}")
    return Rejected(err, top.id) if top.has_id else Rejected(err, None, notification=True)


def parse(body: bytes) -> Request | Notification | Response:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(ParseError(f"Parse error: body is not valid UTF-8 (byte {exc.start})", reason="invalid_utf8"))
    try:
        msg = _DECODER.decode(text)
    except RecursionError:
        raise _too_deep(text) from None
    except ValueError as exc:
        detail = f": {exc.msg} at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise _fail(ParseError("Parse error" + detail))
    if isinstance(msg, list):
        raise _fail(InvalidRequest("Invalid Request: batch requests are not supported; send one request per frame",
                                   reason="batch_not_supported"))
    if not isinstance(msg, dict):
        raise _fail(InvalidRequest("Invalid Request: the message must be a JSON object"))
    raw_id = msg.get("id", _NO_ID)
    if raw_id is _NO_ID:
        request_id = _NO_ID
    elif _valid_id(raw_id):
        request_id = raw_id
    else:
        raise _fail(InvalidRequest("Invalid Request: id must be a string, a number or null"))
    answer_id = None if request_id is _NO_ID else request_id
    if "method" not in msg and request_id is not _NO_ID and ("result" in msg or "error" in msg):
        # a response to a server request (never answered, not even when it lacks "jsonrpc");
        # "error": null beside a result is no error, as some clients send it
        return Response(request_id, msg.get("result"), msg.get("error"))
    if msg.get("jsonrpc") != "2.0":
        raise _fail(InvalidRequest('Invalid Request: "jsonrpc" must be "2.0"'), answer_id)
    method = msg.get("method")
    if not isinstance(method, str) or not method:
        raise _fail(InvalidRequest("Invalid Request: method must be a non-empty string"), answer_id)
    params = msg.get("params")
    if params is None:
        params = {}
    elif not isinstance(params, dict):
        raise _invalid_params(InvalidParams("Invalid params: params must be an object"), request_id)
    if jsonshape.maybe_odd(text):
        problem = jsonshape.find_problem(params)
        if problem is not None:
            name = jsonshape.format_path(problem[0])
            raise _invalid_params(InvalidParams(f"Invalid params: '{name}' {problem[1]}", data={"param": name}),
                                  request_id)
    trace = msg.get("trace")
    if not (isinstance(trace, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in trace.items())):
        trace = None
    if request_id is _NO_ID:
        return Notification(method, params, trace)
    return Request(request_id, method, params, trace)




def _finite(value: Any) -> Any:
    """A copy with NaN and infinities replaced by null (they are not JSON)."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, always valid: lone surrogates (odd file names) fall back to
    \\u escapes, NaN and infinities become null."""
    try:
        return _ENCODER.encode(message).encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(message).encode("ascii")
    except ValueError:
        return encode(_finite(message))


def response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_object(error: KwardError) -> dict[str, Any]:
    """The JSON-RPC ``error`` member of `error`: code, message, data{reason, errorClass, ...}."""
    data = {"reason": error.reason, "errorClass": type(error).__name__}
    data.update(error.data)
    return {"code": error.code, "message": error.message, "data": data}


def error_response(request_id: Any, error: KwardError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error_object(error)}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}
