"""JSON-RPC 2.0 parsing and encoding."""

import json

import pytest

from kward.errors import KwardError
from kward.rpc import protocol


def parse_error(body):
    with pytest.raises(protocol.Rejected) as info:
        protocol.parse(body if isinstance(body, bytes) else json.dumps(body).encode())
    e = info.value
    assert isinstance(e.error, KwardError)
    return e.error.code, e.error.reason, e.request_id, e.notification


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

    wire = protocol.error_object(InvalidParams("Invalid params: 'x' is required", data={"param": "x"}))
    assert wire == {"code": -32602, "message": "Invalid params: 'x' is required",
                    "data": {"reason": "invalid_params", "errorClass": "InvalidParams", "param": "x"}}
    with pytest.raises(ValueError):
        InvalidParams("x", reason="no_such_reason")
    assert all(k == k.lower() and " " not in k for k in REASONS)


def nested(depth, leaf=0):
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def test_params_nested_too_deeply_or_holding_lone_surrogates_are_invalid_params():
    from kward.jsonshape import MAX_DEPTH

    def request(params, **extra):
        return json.dumps({"jsonrpc": "2.0", "method": "config/update", "params": params, **extra}).encode()

    ok = protocol.parse(request({"values": nested(MAX_DEPTH - 1)}, id=1))  # params is level 1
    assert isinstance(ok, protocol.Request)
    for params, named in [({"values": nested(MAX_DEPTH)}, "values[0].k"),
                          ({"values": nested(900)}, "values"),
                          ({"values": {"model": "bad\ud800"}}, "values.model"),
                          ({"values": {"bad\udfff": 1}}, "values.bad\\udfff"),
                          ({"answers": [{"text": ["x", "\udc80"]}]}, "answers[0].text[1]")]:
        body = request(params, id=9)
        with pytest.raises(protocol.Rejected) as info:
            protocol.parse(body)
        err = info.value.error
        assert (err.code, err.reason, info.value.request_id) == (-32602, "invalid_params", 9), err.message
        assert err.data["param"].startswith(named) and f"'{err.data['param']}'" in err.message
        assert "nested more than 64 levels" in err.message or "unpaired surrogate" in err.message
        with pytest.raises(protocol.Rejected) as info:  # the same as a notification: never answered
            protocol.parse(request(params))
        assert info.value.notification is True
    paired = protocol.parse(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"t":"\\ud83d\\ude00"}}')
    assert paired.params == {"t": "\U0001F600"}


def test_the_quick_test_only_skips_values_that_pass():
    from kward import jsonshape

    assert not jsonshape.maybe_odd('{"a": [1, {"b": "\\u00e9"}]}')
    assert jsonshape.maybe_odd('{"a": "\\ud800"}') and jsonshape.maybe_odd("[" * 70 + "]" * 70)
    assert jsonshape.find_problem(nested(64)) is None
    path, problem = jsonshape.find_problem(nested(65))
    assert len(path) == 64 and problem == jsonshape.NESTED_TOO_DEEPLY
    assert jsonshape.format_path(path) == "k[0].k[0]..."


@pytest.mark.slow
def test_seeded_params_fuzz_never_lets_a_deep_or_invalid_value_through():
    """3000 random params (depths up to 120, odd strings and keys): parse accepts exactly
    those within the bounds, answers the rest -32602, and what it accepts is safe for the
    recursive redaction and encoding every response goes through."""
    import random

    from kward import jsonshape
    from kward.redact import redact

    rng = random.Random(8_7)
    atoms = ["x", "é✓", "\U0001F600", "\ud800", "a\udfffb", 1, 2.5, True, None]

    def value(depth):
        """A chain `depth` containers deep with a few atoms beside it at each level."""
        if depth == 0:
            return rng.choice(atoms)
        siblings = [rng.choice(atoms) for _ in range(rng.randint(0, 2))]
        if rng.random() < 0.5:
            return [*siblings, value(depth - 1)]
        keys = [rng.choice(["k", "é", "v"]) + str(i) for i in range(len(siblings))]
        return {**dict(zip(keys, siblings)), rng.choice(["k", "é", "\udc80", "v"]): value(depth - 1)}

    outcomes = {"accepted": 0, "refused": 0}
    for _ in range(3000):
        params = {"p": value(rng.choice([0, 1, 3, 20, 62, 63, 64, 90, 120]))}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}).encode()
        expected_ok = jsonshape.find_problem(params) is None
        try:
            msg = protocol.parse(body)
        except protocol.Rejected as rejected:
            err = rejected.error
            assert not expected_ok and err.code == -32602 and err.data["param"].startswith("p"), err.message
            outcomes["refused"] += 1
            continue
        assert expected_ok
        redact(msg.params)
        protocol.encode(protocol.response(1, msg.params)).decode("utf-8")
        outcomes["accepted"] += 1
    assert min(outcomes.values()) > 300, outcomes
