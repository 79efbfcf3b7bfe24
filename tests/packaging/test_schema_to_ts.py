"""tools/schema_to_ts.py: the TypeScript declarations of the committed schema
(docs/protocol.schema.json) declare every definition once, by its name, the same on every
run, and say what the schema says (optional keys, closed and open objects, the index of
messages). Nothing is compiled."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from lib.paths import REPO

SCHEMA_FILE = REPO / "docs" / "protocol.schema.json"
TOOL = REPO / "tools" / "schema_to_ts.py"


def run(*args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run([sys.executable, str(TOOL), *args], input=stdin, capture_output=True, timeout=60,
                          check=True, cwd=REPO)
    assert proc.stderr == b""
    return proc.stdout.decode("utf-8")


def declaration(output: str, name: str) -> str:
    """The text of `name`'s declaration, up to the blank line after it (without its comment)."""
    found = re.search(rf"^export (interface|type) {name}\b", output, re.M)
    assert found is not None, f"no declaration of {name}"
    return output[found.start():].split("\n\n", 1)[0].rstrip("\n")


def test_every_definition_is_declared_once_under_its_name_and_the_output_is_stable():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    output = run(str(SCHEMA_FILE))
    assert run(str(SCHEMA_FILE)) == output
    assert run() == output  # the default is the committed schema
    assert run("-", stdin=SCHEMA_FILE.read_bytes()) == output
    declared = re.findall(r"^export (?:interface|type) (\w+)\b", output, re.M)
    assert sorted(declared) == sorted([*schema["$defs"], "KwardMessages"])
    assert len(declared) == len(set(declared))
    names = [name for name in declared if name != "KwardMessages"]
    assert names == sorted(names)


def test_declarations_say_what_the_schema_says():
    output = run()
    result = declaration(output, "InitializeResult")
    assert "\n  userAgent: string;\n" in result
    assert "\n  warnings?: InitializeWarning[];\n" in result
    assert "\n  capabilities: Capabilities;\n" in result
    assert "@stability addition */\n  configDir: string;" in result
    assert "[key: string]" not in result  # a closed object (additionalProperties: false)
    assert " * @method initialize\n * @stability original\n */\nexport interface InitializeResult {" in output
    params = declaration(output, "InitializeParams")
    assert "\n  clientInfo?: ClientInfo | null;\n" in params
    assert "\n  [key: string]: unknown;\n" in params  # what a client sends may hold more
    assert "export type InitializedResult = null;" in output
    error = declaration(output, "ErrorData")
    assert "\n  reason: string;\n" in error and "\n  param?: string;\n" in error
    assert "[key: string]" not in error
    sandbox = declaration(output, "SandboxCapability")
    assert "\n  available: boolean | null;\n" in sandbox and "\n  reason?: string;\n" in sandbox
    messages = declaration(output, "KwardMessages")
    assert '\n    "initialize": { params: InitializeParams; result: InitializeResult };\n' in messages
    assert '\n    "runtime/capabilitiesChanged": { params: RuntimeCapabilitiesChangedParams };\n' in messages


def test_unions_enums_maps_and_envelopes(tmp_path):
    schema = {"$id": "test", "x-kward-messages": {}, "$defs": {
        "Envelope": {"type": "object", "properties": {"type": {"enum": ["a", "b"]}, "payload": {"type": "object"}},
                     "required": ["payload", "type"], "additionalProperties": False,
                     "oneOf": [{"properties": {"type": {"const": "a"}, "payload": {"$ref": "#/$defs/Item"}}},
                               {"properties": {"type": {"const": "b"}, "payload": {"$ref": "#/$defs/Map"}}}]},
        "Item": {"type": "object", "description": "An item.", "properties": {
            "name": {"type": ["string", "null"], "maxLength": 10},
            "either": {"anyOf": [{"$ref": "#/$defs/Map"}, {"type": "integer"}]},
            "list": {"type": "array", "items": {"type": ["integer", "null"]}},
            "kind": {"const": "item"}, "odd-key": {"type": "boolean"}},
            "required": ["name"], "additionalProperties": False},
        "Map": {"type": "object", "additionalProperties": {"type": "string"}},
        "Nothing": {"type": "object", "additionalProperties": False},
    }}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    output = run(str(path))
    assert declaration(output, "Item") == (
        "export interface Item {\n"
        "  /** @maxLength 10 */\n"
        "  name: string | null;\n"
        "  either?: Map | number;\n"
        "  list?: (number | null)[];\n"
        '  kind?: "item";\n'
        '  "odd-key"?: boolean;\n'
        "}")
    assert "/** An item. */\nexport interface Item {" in output
    assert "export type Map = { [key: string]: string };" in output
    assert "export type Nothing = Record<string, never>;" in output
    envelope = declaration(output, "Envelope")
    assert envelope.startswith('export type Envelope = {\n  type: "a" | "b";\n'
                               '  payload: { [key: string]: unknown };\n} & (')
    assert '{\n  type: "a";\n  payload: Item;\n} | {\n  type: "b";\n  payload: Map;\n});' in envelope
