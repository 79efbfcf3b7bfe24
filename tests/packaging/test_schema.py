"""The protocol schema: docs/protocol.schema.json is what `kward rpc --print-schema`
prints (a stale copy fails here), every method kward serves has its entry, and the
validator the traffic check uses fails a malformed message, naming it and the path."""

from __future__ import annotations

import json
import subprocess

import pytest

from lib.paths import REPO
from lib.rpc_client import frame, kward_command
from lib.schema_check import SchemaError, problems
from lib.traffic import Traffic, take_violations

SCHEMA_FILE = REPO / "docs" / "protocol.schema.json"


def printed() -> str:
    proc = subprocess.run(kward_command(None, "--print-schema"), capture_output=True, timeout=60, check=True)
    assert proc.stderr == b""
    return proc.stdout.decode("utf-8")


def test_the_committed_schema_is_what_kward_prints():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == printed(), (
        "docs/protocol.schema.json is stale: run `python3 -m kward rpc --print-schema > docs/protocol.schema.json`")


def test_the_schema_is_draft_2020_12_with_one_definition_per_message():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = schema["$defs"]
    for kind, names in schema["x-kward-messages"].items():
        for name, refs in names.items():
            for ref in refs.values():
                definition = defs[ref.rsplit("/", 1)[1]]
                assert definition["x-kward-stability"] in ("original", "addition", "experimental"), (kind, name)
                assert definition["x-kward-method"].split(":")[0] in (name, "turn/event", "session/event")
    assert schema["x-kward-messages"]["request"]["initialize"] == {
        "params": "#/$defs/InitializeParams", "result": "#/$defs/InitializeResult"}


def test_every_def_uses_only_what_the_validator_knows():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    for name, definition in schema["$defs"].items():
        problems(schema, definition, None)  # SchemaError for an unknown keyword


def test_a_malformed_message_is_a_violation_naming_the_message_and_the_path():
    from kward.rpc.capabilities import build

    traffic = Traffic()
    traffic.sent(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
    traffic.received({"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "1", "serverName": "kward", "serverVersion": "x", "experimental": True,
        "userAgent": "kward/x", "configDir": "/c", "platform": {"os": "linux"}, "capabilities": build([]),
        "surprise": 1}})
    found = take_violations()
    assert "initialize result: protocolVersion: '1' is not integer" in found
    assert "initialize result: platform: 'family' is required" in found
    assert "initialize result: surprise: not in the schema (additionalProperties is false)" in found
    traffic.received({"jsonrpc": "2.0", "id": 7, "result": {}})  # an id nobody asked for: not checked
    assert take_violations() == []


def test_the_validator_refuses_a_schema_feature_it_does_not_know():
    with pytest.raises(SchemaError):
        problems({"$defs": {}}, {"patternProperties": {}}, {})


def test_serving_never_loads_the_shapes_or_the_schema(isolated_home):
    from lib.rpc_client import modules_after_initialize

    loaded = modules_after_initialize(isolated_home)
    assert "kward.rpc.experimental" in loaded  # (the index the server gates with)
    assert not {m for m in loaded if m.startswith("kward.rpc.shapes") or m == "kward.rpc.schema"}


def test_the_servers_experimental_index_is_what_the_shapes_mark():
    # kward/rpc/experimental.py gates at run time; the shapes are where stabilities are declared
    from kward.rpc import experimental

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    defs, index = schema["$defs"], schema["x-kward-messages"]

    def definition(ref: str) -> dict:
        return defs[ref.rsplit("/", 1)[1]]

    marked = {(kind, name) for kind, names in index.items() for name, refs in names.items()
              if any(definition(ref)["x-kward-stability"] == "experimental" for ref in refs.values())}
    assert marked == {("request", name) for name in experimental.METHODS}
    fields = set()

    def walk(name: str, d: dict, path: tuple, seen: tuple) -> None:
        if "$ref" in d and d["$ref"] not in seen:  # a message's definition that is a shared one
            walk(name, definition(d["$ref"]), path, (*seen, d["$ref"]))
        for key, prop in d.get("properties", {}).items():
            if prop.get("x-kward-stability") == "experimental":
                fields.add((name, (*path, key)))
            for ref in [prop.get("$ref")] + [o.get("$ref") for o in prop.get("anyOf", [])]:
                if ref and ref not in seen:
                    walk(name, definition(ref), (*path, key), (*seen, ref))

    for kind, names in index.items():
        for name, refs in names.items():
            for ref in refs.values():
                walk(name, definition(ref), (), (ref,))
    assert fields == {(method, path) for method, paths in experimental.FIELDS.items() for path in paths}
