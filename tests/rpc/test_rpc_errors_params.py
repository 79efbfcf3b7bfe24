"""Deeply nested params and lone surrogates answer -32602 and change nothing; a config.json
that is too deep or not valid Unicode is a clear `invalid_config`, never a crash."""

import json

import pytest

from lib.rpc_client import RpcClient, frame


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = {"k": [value]}
    return value


def raw_request(c, rid, method, params_json):
    c.write(frame(('{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}' % (json.dumps(rid), method, params_json))
                  .encode()))
    return c.response(rid)


def test_config_update_refuses_deep_values_and_lone_surrogates_and_writes_nothing(isolated_home):
    cfg = isolated_home / ".kward" / "config.json"
    with RpcClient(isolated_home) as c:
        for depth in (40, 450):  # 80 and 900 levels of objects and arrays
            err = c.error("config/update", {"values": {"deep": nested(depth)}})
            assert err.code == -32602 and err.error["data"]["param"].startswith("values.deep.k[0]"), err.error
            assert "nested more than 64 levels" in err.error["message"]
        for rid, body in ((1, '{"values":{"model":"bad\\ud800"}}'), (2, '{"values":{"x\\udfff":1}}'),
                          (3, '{"values":{"list":["ok",["\\udc00"]]}}')):
            err = raw_request(c, rid, "config/update", body)["error"]
            assert err["code"] == -32602 and "unpaired surrogate" in err["message"], err
            assert err["data"]["param"].startswith("values.")
        assert not cfg.exists()
        c.write(frame(b'{"jsonrpc":"2.0","method":"config/update","params":{"values":' + b'[' * 500 + b']' * 500
                      + b'}}'))  # a notification: never answered
        assert c.request("config/read")["config"] == {}
        ok = c.request("config/update", {"values": {"fine": nested(30), "emoji": "\U0001F600"}})
        assert ok["config"]["emoji"] == "\U0001F600"
        assert c.request("config/read")["config"] == json.loads(cfg.read_text())
        assert c.null_id_errors == [] and c.close() == 0 and c.stderr == ""


@pytest.mark.slow
def test_an_odd_config_on_disk_is_reported_and_never_crashes(isolated_home):
    cfg = isolated_home / ".kward" / "config.json"
    cfg.parent.mkdir()
    for text in (json.dumps({"model": "m", "deep": nested(200)}), '{"model": "\\ud800"}'):
        cfg.write_text(text)
        with RpcClient(isolated_home) as c:
            warnings = c.request("initialize")["warnings"]
            assert warnings[0]["reason"] == "invalid_config" and str(cfg) in warnings[0]["message"]
            for method, params in (("config/read", None), ("config/update", {"values": {"model": "x"}})):
                err = c.error(method, params)
                assert err.code == -32002 and err.reason == "invalid_config" and str(cfg) in err.error["message"]
            assert c.request("sessions/list")["sessions"] == []
            assert c.close() == 0 and c.stderr == ""
        assert cfg.read_text() == text


def test_params_too_deep_to_parse_are_answered_to_the_request_id(isolated_home):
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    with RpcClient(isolated_home) as c:
        for rid, head, tail in ((1, b'{"jsonrpc":"2.0","id":1,"method":"config/update","params":', b"}"),
                                ("late", b'{"jsonrpc":"2.0","method":"config/update","params":', b',"id":"late"}'),
                                (3, b'{"jsonrpc":"2.0","id":3,"method":"config/update","params":{"values":[' + b"[" * 5000,
                                 b"]" * 5000 + b"]}}")):
            c.write(frame(head + (deep if rid != 3 else b"") + tail))
            err = c.response(rid)["error"]
            assert (err["code"], err["data"]["reason"]) == (-32602, "invalid_params"), err
            assert "nested more than 64 levels" in err["message"]
        # not a request at top level: a string "id" inside the params, or a notification
        c.write(frame(b'{"jsonrpc":"2.0","method":"x","params":{"id":5,"b":' + b"[" * 5000 + b"]" * 5000 + b"}}"))
        c.write(frame(b'{"jsonrpc":"2.0","method":"x","params":{"s":"\\",\\"id\\":6,","b":' + b"[" * 5000
                      + b"]" * 5000 + b"}}"))
        assert c.request("config/read")["config"] == {}
        assert c.response_counts[json.dumps(5)] == 0 and c.response_counts[json.dumps(6)] == 0
        assert c.null_id_errors == []  # notifications stay unanswered
        assert not (isolated_home / ".kward" / "config.json").exists()
        assert c.close() == 0 and c.stderr == "" and c.protocol_errors == []


def test_frames_too_deep_to_decode_are_read_in_linear_time_and_checked_like_any_request(isolated_home):
    deep = b"[" * 3000
    head = b'{"jsonrpc":"2.0","method":"config/update","params":'
    with RpcClient(isolated_home) as c:
        # a string that never ends, made of quotes and backslashes (each quote could start one)
        c.write(frame(head + deep + b'"\\' * 2_000_000))
        # the token budget runs out before the id
        c.write(frame(head + deep + b'"a",' * 300_000 + b"1" + b"]" * 3000 + b',"id":"over"}'))
        # the id after the deep member, with escaped quotes inside it
        c.write(frame(head + deep + b'"\\"\\\\",' * 20_000 + b"1" + b"]" * 3000 + b',"id":"after"}'))
        after = c.response("after", timeout=30)["error"]
        assert (after["code"], after["data"]["reason"]) == (-32602, "invalid_params"), after
        assert [e["error"]["code"] for e in c.null_id_errors] == [-32700, -32700]
        assert c.response_counts[json.dumps("over")] == 0
        # what the decodable message would be answered: the id's type, then jsonrpc, then method
        c.write(frame(b'{"jsonrpc":"2.0","id":{"a":1},"method":"x","params":' + deep + b"]" * 3000 + b"}"))
        c.write(frame(b'{"jsonrpc":"2.0","id":true,"method":"x","params":' + deep + b"]" * 3000 + b"}"))
        c.write(frame(b'{"jsonrpc":"1.0","id":"v1","method":"x","params":' + deep + b"]" * 3000 + b"}"))
        c.write(frame(b'{"id":"nov","method":"x","params":' + deep + b"]" * 3000 + b"}"))
        c.write(frame(b'{"jsonrpc":"2.0","id":"nom","params":' + deep + b"]" * 3000 + b"}"))
        c.write(frame(b'{"jsonrpc":"2.0","id":"m0","method":"","params":' + deep + b"]" * 3000 + b"}"))
        c.write(frame(b'{"jsonrpc":"2.0","params":' + deep + b"]" * 3000 + b',"id":"late","method":7}'))
        c.write(frame(b'{"params":' + deep + b"]" * 3000 + b',"method":"x"}'))  # no id, no jsonrpc
        for rid, words in (("v1", '"jsonrpc" must be "2.0"'), ("nov", '"jsonrpc" must be "2.0"'),
                           ("nom", "method must be"), ("m0", "method must be"), ("late", "method must be")):
            err = c.response(rid)["error"]
            assert err["code"] == -32600 and words in err["message"], (rid, err)
        assert c.request("config/read")["config"] == {}
        nulls = [e["error"] for e in c.null_id_errors[2:]]
        assert [e["code"] for e in nulls] == [-32600, -32600, -32600], nulls
        assert "id must be" in nulls[0]["message"] and "id must be" in nulls[1]["message"]
        assert '"jsonrpc" must be "2.0"' in nulls[2]["message"]
        assert not (isolated_home / ".kward" / "config.json").exists()
        assert c.close() == 0 and c.stderr == "" and c.protocol_errors == []
