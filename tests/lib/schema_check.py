"""A small JSON Schema validator for the features docs/protocol.schema.json uses (no
runtime dependency): `$ref` (local), `type` (one or a list), `properties`, `required`,
`additionalProperties` (boolean or schema), `items`, `enum`, `const`, `anyOf`, `oneOf`
(with ``x-kward-discriminator``: the variant its property names, else exactly one that
matches), `allOf`, `minimum`, `maximum`, `exclusiveMinimum`, `minLength`, `maxLength`,
`minItems`, `maxItems`. Anything else in a schema is an error of the schema (so a feature
the generator starts using is noticed, not silently ignored).

`problems(schema_root, schema, value)` lists every violation as "<path>: <what>", the path
in JSON Pointer-ish dots (``params.payload.result.isError``)."""

from __future__ import annotations

from typing import Any

_ANNOTATIONS = {"description", "title", "x-kward-method", "x-kward-stability", "x-kward-discriminator",
                "$schema", "$id", "default", "examples"}
_KEYWORDS = {"$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
             "oneOf", "allOf", "minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "minItems",
             "maxItems"}
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


class SchemaError(Exception):
    """The schema uses something this validator does not know."""


def _is(kind: str, value: Any) -> bool:
    if kind == "integer":  # (draft 2020-12: any number with a zero fractional part, 1.0 and 1e308 too)
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind not in _TYPES:
        raise SchemaError(f"unknown type {kind!r}")
    return isinstance(value, _TYPES[kind])


def resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/$defs/"):
        raise SchemaError(f"only local $defs refs are supported, not {ref!r}")
    try:
        return root["$defs"][ref[len("#/$defs/"):]]
    except KeyError:
        raise SchemaError(f"no definition {ref!r}") from None


def problems(root: dict[str, Any], schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise SchemaError(f"unsupported keywords {sorted(unknown)} at {path or '(top)'}")
    here = path or "(top)"
    out: list[str] = []
    if "$ref" in schema:
        out += problems(root, resolve(root, schema["$ref"]), value, path)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(k, value) for k in kinds):
            return out + [f"{here}: {_shown(value)} is not {' or '.join(kinds)}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{here}: {_shown(value)} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{here}: {_shown(value)} is not one of {schema['enum']}")
    if isinstance(value, dict):
        out += _object(root, schema, value, path)
    if isinstance(value, list):
        if "items" in schema:
            for i, item in enumerate(value):
                out += problems(root, schema["items"], item, f"{path}[{i}]")
        out += _bounds(schema, len(value), "minItems", "maxItems", "items", here)
    if isinstance(value, str):
        out += _bounds(schema, len(value), "minLength", "maxLength", "characters", here)
    if _is("number", value):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{here}: {value} is less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{here}: {value} is more than {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            out.append(f"{here}: {value} is not more than {schema['exclusiveMinimum']}")
    for sub in schema.get("allOf", []):
        out += problems(root, sub, value, path)
    if "anyOf" in schema:
        found = [problems(root, sub, value, path) for sub in schema["anyOf"]]
        if all(found):
            out.append(f"{here}: matches none of {len(found)} options: " + "; ".join(min(found, key=len)))
    if "oneOf" in schema:
        out += _one_of(root, schema, value, path)
    return out


def _object(root: dict[str, Any], schema: dict[str, Any], value: dict[str, Any], path: str) -> list[str]:
    out: list[str] = []
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            out.append(f"{path or '(top)'}: {key!r} is required")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key in props:
            out += problems(root, props[key], item, where)
        elif extra is False:
            out.append(f"{where}: not in the schema (additionalProperties is false)")
        elif isinstance(extra, dict):
            out += problems(root, extra, item, where)
    return out


def _one_of(root: dict[str, Any], schema: dict[str, Any], value: Any, path: str) -> list[str]:
    here = path or "(top)"
    picker = schema.get("x-kward-discriminator")
    if picker is not None and isinstance(value, dict):
        ref = picker["mapping"].get(value.get(picker["propertyName"]))
        if ref is None:
            return [f"{here}: {picker['propertyName']} {_shown(value.get(picker['propertyName']))} has no variant"]
        payload = next(k for k, v in schema["oneOf"][0]["properties"].items() if "$ref" in v)
        return problems(root, {"$ref": ref}, value.get(payload), f"{path}.{payload}" if path else payload)
    matching = [sub for sub in schema["oneOf"] if not problems(root, sub, value, path)]
    if len(matching) != 1:
        return [f"{here}: matches {len(matching)} of the oneOf options, not exactly one"]
    return []


def _bounds(schema: dict[str, Any], n: int, low: str, high: str, unit: str, here: str) -> list[str]:
    out = []
    if low in schema and n < schema[low]:
        out.append(f"{here}: {n} {unit}, fewer than {schema[low]}")
    if high in schema and n > schema[high]:
        out.append(f"{here}: {n} {unit}, more than {schema[high]}")
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + "...'"
