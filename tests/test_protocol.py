"""JSON-RPC 2.0 parsing and encoding."""

import json

import pytest

from kward.errors import KwardError
from kward.rpc import protocol


def parse_error(body):
    with pytest.raises(KwardError) as info:
        protocol.parse(body if isinstance(body, bytes) else json.dumps(body).encode())
    e = info.value
    return e.code, e.reason, getattr(e, "request_id", "unset"), getattr(e, "notification", False)


def test_request_and_notification():
    r = protocol.parse(b'{"jsonrpc":"2.0","id":"a-1","method":"m","params":{"x":1}}')
    assert isinstance(r, protocol.Request) and r.id == "a-1" and r.params == {"x": 1}
    n = protocol.parse(b'{"jsonrpc":"2.0","method":"initialized"}')
    assert isinstance(n, protocol.Notification) and n.params == {}


@pytest.mark.parametrize("rid", [0, 7, -3, 2.5, "x", None])
def test_ids_kept_unchanged(rid):
    assert protocol.parse(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "m"}).encode()).id == rid


def test_params_omitted_or_null_become_empty():
    assert protocol.parse(b'{"jsonrpc":"2.0","id":1,"method":"m","params":null}').params == {}


def test_trace_passed_through_when_well_formed():
    r = protocol.parse(b'{"jsonrpc":"2.0","id":1,"method":"m","trace":{"traceparent":"00-ab-cd-01"}}')
    assert r.trace == {"traceparent": "00-ab-cd-01"}
    assert protocol.parse(b'{"jsonrpc":"2.0","id":1,"method":"m","trace":5}').trace is None


def test_errors():
    assert parse_error(b"{nope")[:3] == (-32700, "parse_error", None)
    assert parse_error(b'{"a":"\xff"}')[:3] == (-32700, "invalid_utf8", None)
    assert parse_error([])[:3] == (-32600, "batch_not_supported", None)
    assert parse_error([{"jsonrpc": "2.0", "id": 1, "method": "m"}])[:2] == (-32600, "batch_not_supported")
    assert parse_error("just a string")[:3] == (-32600, "invalid_request", None)
    assert parse_error({"jsonrpc": "1.0", "id": 4, "method": "m"})[:3] == (-32600, "invalid_request", 4)
    assert parse_error({"id": 4, "method": "m"})[:3] == (-32600, "invalid_request", 4)
    assert parse_error({"jsonrpc": "2.0", "id": 5, "method": 3})[:3] == (-32600, "invalid_request", 5)
    assert parse_error({"jsonrpc": "2.0", "id": 5})[:3] == (-32600, "invalid_request", 5)
    assert parse_error({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"})[:3] == (-32600, "invalid_request", None)
    assert parse_error({"jsonrpc": "2.0", "id": True, "method": "m"})[:2] == (-32600, "invalid_request")
    assert parse_error({"jsonrpc": "2.0", "id": 6, "method": "m", "params": [1]}) == (-32602, "invalid_params", 6, False)
    assert parse_error({"jsonrpc": "2.0", "method": "m", "params": [1]})[3] is True


def test_encode_non_ascii_and_surrogates():
    assert protocol.encode({"t": "é✓"}) == '{"t":"é✓"}'.encode()
    assert protocol.encode({"t": "bad\udcff"}) == b'{"t":"bad\\udcff"}'


def test_error_wire_shape():
    from kward.errors import InvalidParams, REASONS

    wire = InvalidParams("Invalid params: 'x' is required", data={"param": "x"}).to_wire()
    assert wire == {"code": -32602, "message": "Invalid params: 'x' is required",
                    "data": {"reason": "invalid_params", "errorClass": "InvalidParams", "param": "x"}}
    with pytest.raises(ValueError):
        InvalidParams("x", reason="no_such_reason")
    assert all(k == k.lower() and " " not in k for k in REASONS)
