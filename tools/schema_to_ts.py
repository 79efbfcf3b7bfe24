#!/usr/bin/env python3
"""TypeScript declarations of the kward protocol, from its JSON Schema.

    python3 tools/schema_to_ts.py                       # docs/protocol.schema.json
    python3 tools/schema_to_ts.py path/to/schema.json
    python3 -m kward rpc --print-schema | python3 tools/schema_to_ts.py -

Prints one declaration per `$defs` entry, of the same name, sorted by name: an
`export interface` for an object with properties, else an `export type`. Optional
properties get `?`; an object that may hold keys it does not declare gets an index
signature (`[key: string]: unknown`, or the value type of a map); enums and consts become
literal unions, `type: [a, null]` `A | null`, `anyOf`/`oneOf` unions, `$ref` the name.
Descriptions become `/** */` comments, with `@stability` (``x-kward-stability``), `@method`
(``x-kward-method``) and the limits as tags. Last, `KwardMessages`, the index
``x-kward-messages``: kind -> message -> {params, result} (events: {payload}), e.g.
``KwardMessages["request"]["initialize"]["result"]``.

Standard library only; output depends on the schema alone (two runs print the same).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parent.parent / "docs" / "protocol.schema.json"
IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
LIMITS = ("minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "minItems", "maxItems")
PRIMITIVES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def ref_name(ref: str) -> str:
    if not ref.startswith("#/$defs/"):
        raise ValueError(f"only local $defs refs are supported, not {ref!r}")
    return ref[len("#/$defs/"):]


def literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def prop_name(name: str) -> str:
    return name if IDENTIFIER.match(name) else literal(name)


def union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return " | ".join(unique) if unique else "never"


def comment(schema: dict[str, Any], indent: str) -> list[str]:
    """The `/** */` lines of a schema's description and tags (none: no lines)."""
    lines = []
    if schema.get("description"):
        lines += str(schema["description"]).split("\n")
    if "x-kward-method" in schema:
        lines.append(f"@method {schema['x-kward-method']}")
    if "x-kward-stability" in schema:
        lines.append(f"@stability {schema['x-kward-stability']}")
    lines += [f"@{key} {literal(schema[key])}" for key in LIMITS if key in schema]
    lines = [line.replace("*/", "*\\/") for line in lines]
    if not lines:
        return []
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


class Converter:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("$defs", {})

    # --- types --------------------------------------------------------------------------

    def type(self, schema: Any, indent: str = "") -> str:
        """The TypeScript type of `schema`, written at `indent` (for nested objects)."""
        if schema is False:
            return "never"
        if not isinstance(schema, dict) or not schema:
            return "unknown"
        if "$ref" in schema:
            return ref_name(schema["$ref"])
        if "const" in schema:
            return literal(schema["const"])
        if "enum" in schema:
            return union([literal(v) for v in schema["enum"]])
        for key in ("anyOf", "oneOf"):
            if key in schema and not self._is_object(schema):
                return union([self._member(option, indent) for option in schema[key]])
        kinds = schema.get("type")
        if isinstance(kinds, list):
            return union([self._member({**schema, "type": kind}, indent) for kind in kinds])
        if kinds in PRIMITIVES:
            return PRIMITIVES[kinds]
        if kinds == "array" or (kinds is None and "items" in schema):
            items = self._member(schema["items"], indent) if "items" in schema else "unknown"
            return f"{items}[]"
        if kinds == "object" or self._is_object(schema):
            return self._object(schema, indent)
        return "unknown"

    def _member(self, schema: Any, indent: str) -> str:
        """A type inside a union or an array: parenthesized when it is a union itself."""
        text = self.type(schema, indent)
        return f"({text})" if " | " in text and not text.startswith("{") else text

    @staticmethod
    def _is_object(schema: dict[str, Any]) -> bool:
        return schema.get("type") == "object" or "properties" in schema

    def _index(self, schema: dict[str, Any]) -> str | None:
        """The index signature's value type (None: no index signature)."""
        extra = schema.get("additionalProperties", True)
        if extra is False:
            return None
        if extra is True or extra == {} or schema.get("properties"):
            return "unknown"  # (declared properties need not match a map's value type)
        return self.type(extra)

    def members(self, schema: dict[str, Any], indent: str) -> list[str]:
        """The member lines of an object's body, at `indent`."""
        required = set(schema.get("required", ()))
        lines: list[str] = []
        for name, prop in schema.get("properties", {}).items():
            lines += comment(prop if isinstance(prop, dict) else {}, indent)
            mark = "" if name in required else "?"
            lines.append(f"{indent}{prop_name(name)}{mark}: {self.type(prop, indent)};")
        index = self._index(schema)
        if index is not None:
            lines.append(f"{indent}[key: string]: {index};")
        return lines

    def _object(self, schema: dict[str, Any], indent: str) -> str:
        variants = self._variants(schema, indent)
        if not schema.get("properties"):
            index = self._index(schema)
            body = "Record<string, never>" if index is None else f"{{ [key: string]: {index} }}"
        else:
            inner = indent + "  "
            body = "{\n" + "\n".join(self.members(schema, inner)) + f"\n{indent}}}"
        return f"{body} & ({variants})" if variants else body

    def _variants(self, schema: dict[str, Any], indent: str) -> str:
        """A `oneOf` on an object with properties (an envelope whose payload follows its
        type): the union of the variants, each as an object of its properties."""
        if "oneOf" not in schema or not schema.get("properties"):
            return ""
        return " | ".join(self._object({**option, "required": list(option["properties"]),
                                        "additionalProperties": False}, indent)
                          if isinstance(option, dict) and option.get("properties") else self._member(option, indent)
                          for option in schema["oneOf"])

    # --- declarations -------------------------------------------------------------------

    def declaration(self, name: str, schema: dict[str, Any]) -> str:
        lines = comment(schema, "")
        if schema.get("properties") and schema.get("type", "object") == "object" and "oneOf" not in schema:
            lines.append(f"export interface {name} {{")
            lines += self.members(schema, "  ")
            lines.append("}")
        else:
            lines.append(f"export type {name} = {self.type(schema)};")
        return "\n".join(lines)

    def messages(self) -> str:
        """`KwardMessages`: kind -> message name -> its roles (params, result, payload)."""
        lines = ["/** The messages of the protocol (x-kward-messages): kind -> name -> its shapes. */",
                 "export interface KwardMessages {"]
        for kind, names in sorted(self.schema.get("x-kward-messages", {}).items()):
            if not names:
                lines.append(f"  {prop_name(kind)}: Record<string, never>;")
                continue
            lines.append(f"  {prop_name(kind)}: {{")
            for message, refs in sorted(names.items()):
                roles = "; ".join(f"{role}: {ref_name(ref)}" for role, ref in sorted(refs.items()))
                lines.append(f"    {literal(message)}: {{ {roles} }};")
            lines.append("  };")
        lines.append("}")
        return "\n".join(lines)

    def render(self) -> str:
        head = (f"// Generated by tools/schema_to_ts.py from {self.schema.get('$id', 'the kward protocol schema')}"
                " (`kward rpc --print-schema`); do not edit.")
        parts = [head] + [self.declaration(name, self.defs[name]) for name in sorted(self.defs)] + [self.messages()]
        return "\n\n".join(parts) + "\n"


def convert(schema: dict[str, Any]) -> str:
    """The TypeScript declarations of `schema` (the module doc says what)."""
    return Converter(schema).render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print TypeScript declarations of the kward protocol schema.")
    parser.add_argument("schema", nargs="?", default=str(DEFAULT),
                        help="the schema file (default: docs/protocol.schema.json; -: standard input)")
    args = parser.parse_args(argv)
    text = sys.stdin.read() if args.schema == "-" else Path(args.schema).read_text(encoding="utf-8")
    sys.stdout.write(convert(json.loads(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
