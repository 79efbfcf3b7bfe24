"""The protocol's JSON Schema (draft 2020-12), generated from the wire shapes
(`kward.rpc.shapes`): what `kward rpc --print-schema` prints and docs/protocol.schema.json
holds.

Every entry of the registry (`kward.rpc.shapes.registry`) becomes definitions named after
it (`def_name`): ``sessions/create`` -> `SessionsCreateParams`, `SessionsCreateResult`;
the ``toolResult`` event -> `TurnEventToolResultPayload`; each carries
``x-kward-method`` (the method, notification, server request or ``turn/event:<type>``)
and ``x-kward-stability``. A TypedDict becomes an object definition of its own name
(required keys, properties, ``additionalProperties: false`` unless it is `open`); the
registry's definitions refer to it, or are it when the names agree. A field that is not
of its shape's stability says so (``x-kward-stability``).

Types: str, int, float, bool, None, Any, Literal, unions (``X | None``), list[X],
dict[str, X], TypedDicts, and `Annotated` with the metadata of `kward.rpc.shapes.base`.
Pure; any thread; imported only to print or test the schema.
"""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from kward.rpc.shapes.base import SHAPES, Doc, Length, Open, Range, ShapeInfo, Stability

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://kward.dev/protocol.schema.json"
KINDS = {"METHODS": "request", "NOTIFICATIONS": "notification", "SERVER_REQUESTS": "serverRequest",
         "TURN_EVENTS": "turnEvent", "SESSION_EVENTS": "sessionEvent"}


def camel(name: str) -> str:
    """``sessions/forkMessages`` -> ``SessionsForkMessages``; ``turn/event`` -> ``TurnEvent``;
    ``$/ping`` -> ``Ping`` (an identifier in every language the schema is turned into)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[/_.:$-]", name) if part)


def def_name(kind: str, name: str, role: str) -> str:
    """The definition of `name`'s `role` (Params, Result, Payload)."""
    if kind == "turnEvent":
        return f"TurnEvent{camel(name)}Payload"
    if kind == "sessionEvent":
        return f"SessionEvent{camel(name)}Payload"
    return f"{camel(name)}{role}"


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._building: set[str] = set()

    def ref(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs and name not in self._building:
            self._building.add(name)
            self.defs[name] = self.object(cls)
            self._building.discard(name)
        elif name in self.defs and self.defs[name].get("x-kward-class") != f"{cls.__module__}.{cls.__qualname__}":
            raise ValueError(f"two shapes are named {name}")
        return {"$ref": f"#/$defs/{name}"}

    def object(self, cls: type) -> dict[str, Any]:
        info = SHAPES.get(cls, ShapeInfo())
        hints = get_type_hints(cls, include_extras=True)
        required = sorted(getattr(cls, "__required_keys__", ()))
        props = {key: self.field(hint) for key, hint in hints.items()}
        out: dict[str, Any] = {"type": "object"}
        if cls.__doc__ and cls.__doc__ != dict.__doc__:
            out["description"] = " ".join(cls.__doc__.split())
        out["properties"] = props
        if required:
            out["required"] = required
        out["additionalProperties"] = True if info.open else False
        if info.stability is not None:
            out["x-kward-stability"] = info.stability
        out["x-kward-class"] = f"{cls.__module__}.{cls.__qualname__}"
        return out

    def field(self, hint: Any) -> dict[str, Any]:
        meta: tuple[Any, ...] = ()
        if get_origin(hint) is typing.Annotated:
            hint, *rest = get_args(hint)
            meta = tuple(rest)
        out = dict(self.type(hint))
        for m in meta:
            if isinstance(m, Doc):
                out["description"] = m.text
            elif isinstance(m, Stability):
                out["x-kward-stability"] = m.level
            elif isinstance(m, Range):
                _bounds(out, m)
            elif isinstance(m, Length):
                _lengths(out, m)
            elif isinstance(m, Open):
                out = {"type": "object", "additionalProperties": self.type(m.values) if m.values is not None else True}
        return out

    def type(self, tp: Any) -> dict[str, Any]:
        if tp is Any:
            return {}
        if tp is None or tp is type(None):
            return {"type": "null"}
        if tp is str:
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if is_typeddict(tp):
            return self.ref(tp)
        origin = get_origin(tp)
        if origin is typing.Annotated:
            return self.field(tp)
        if origin is Literal:
            values = list(get_args(tp))
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if origin in (Union, types.UnionType):
            options = [self.type(a) for a in get_args(tp)]
            simple = [o["type"] for o in options if set(o) == {"type"} and isinstance(o["type"], str)]
            if len(simple) == len(options):
                return {"type": simple}
            return {"anyOf": options}
        if origin in (list, tuple):
            args = get_args(tp)
            return {"type": "array", "items": self.type(args[0]) if args else {}}
        if origin is dict:
            key, value = get_args(tp)
            if key is not str:
                raise TypeError(f"object keys must be strings, not {key}")
            return {"type": "object", "additionalProperties": self.type(value)}
        if tp is dict:
            return {"type": "object"}
        if tp is list:
            return {"type": "array"}
        raise TypeError(f"no JSON Schema for {tp!r}")


def _bounds(out: dict[str, Any], r: Range) -> None:
    if r.minimum is not None:
        out["minimum"] = r.minimum
    if r.maximum is not None:
        out["maximum"] = r.maximum
    if r.above is not None:
        out["exclusiveMinimum"] = r.above


def _lengths(out: dict[str, Any], r: Length) -> None:
    kinds = [out.get("type")] + [option.get("type") for option in out.get("anyOf", ())]
    array = any(kind == "array" or isinstance(kind, list) and "array" in kind for kind in kinds)
    if r.minimum is not None:
        out["minItems" if array else "minLength"] = r.minimum
    if r.maximum is not None:
        out["maxItems" if array else "maxLength"] = r.maximum


def _entry(builder: _Builder, kind: str, name: str, role: str, shape: Any, stability: str,
           method: str) -> tuple[str, dict[str, Any]]:
    """The registry's definition of one role of one entry."""
    key = def_name(kind, name, role)
    marks = {"x-kward-method": method, "x-kward-stability": stability}
    if shape is None:  # no params read (an object or nothing may come), or a null result
        return key, {"type": "object" if role == "Params" else "null", **marks}
    if is_typeddict(shape) and shape.__name__ == key:
        builder.ref(shape)
        return key, {**builder.defs[key], **marks}
    return key, {**builder.type(shape), **marks}


def build() -> dict[str, Any]:
    """The whole schema: `$defs` of every shape, and `x-kward-messages`, the index a
    validator or a code generator walks (kind -> name -> {params|payload, result})."""
    from kward.rpc.shapes import registry

    builder = _Builder()
    entries: dict[str, dict[str, Any]] = {}
    index: dict[str, dict[str, dict[str, str]]] = {}
    for table, kind in KINDS.items():
        index[kind] = {}
        for name, entry in sorted(getattr(registry, table).items()):
            method = {"turnEvent": f"turn/event:{name}", "sessionEvent": f"session/event:{name}"}.get(kind, name)
            roles = {"turnEvent": ("Payload",), "sessionEvent": ("Payload",), "notification": ("Params",)}.get(
                kind, ("Params", "Result"))
            refs: dict[str, str] = {}
            for role in roles:
                shape = entry.params if role in ("Params", "Payload") else entry.result
                key, definition = _entry(builder, kind, name, role, shape, entry.stability, method)
                entries[key] = definition
                refs[role.lower()] = f"#/$defs/{key}"
            index[kind][name] = refs
    from kward.rpc.shapes.envelopes import SessionEvent, TurnEvent
    from kward.rpc.shapes.errors import ErrorData

    builder.ref(ErrorData)
    for envelope, kind in ((TurnEvent, "turnEvent"), (SessionEvent, "sessionEvent")):
        builder.ref(envelope)
        _discriminate(builder.defs[envelope.__name__], index[kind])
    defs = {**builder.defs, **entries}
    # what a client sends may hold more than kward reads (docs/protocol.md: extra params are ignored)
    client_sent = [refs["params"] for refs in index["request"].values()]
    client_sent += [refs["result"] for refs in index["serverRequest"].values()]
    for name in _reachable(defs, [ref.rsplit("/", 1)[1] for ref in client_sent]):
        if defs[name].get("type") == "object" and "properties" in defs[name]:
            defs[name]["additionalProperties"] = True
    for definition in defs.values():
        definition.pop("x-kward-class", None)
    return {"$schema": DIALECT, "$id": SCHEMA_ID, "title": "kward JSON-RPC protocol",
            "description": "Generated by `kward rpc --print-schema` from kward/rpc/shapes; see docs/protocol.md.",
            "x-kward-messages": index, "x-kward-internal": dict(sorted(registry.INTERNAL.items())),
            "$defs": dict(sorted(defs.items()))}


def _discriminate(envelope: dict[str, Any], payloads: dict[str, dict[str, str]]) -> None:
    """Tie the envelope's `payload` to its `type`: `type` is one of the types, and a `oneOf`
    of one variant per type requires the payload of that type (``x-kward-discriminator``
    names the property, for validators that pick the variant instead of trying each)."""
    if not payloads:
        return
    envelope["properties"]["type"] = {"enum": sorted(payloads)}
    envelope["oneOf"] = [{"properties": {"type": {"const": name}, "payload": {"$ref": refs["payload"]}}}
                         for name, refs in sorted(payloads.items())]
    envelope["x-kward-discriminator"] = {"propertyName": "type",
                                         "mapping": {name: refs["payload"] for name, refs in sorted(payloads.items())}}


def _reachable(defs: dict[str, Any], roots: list[str]) -> set[str]:
    """The definitions `roots` refer to, directly or through others (themselves too)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo += re.findall(r'"#/\$defs/([^"]+)"', json.dumps(defs[name]))
    return seen


#: What `params_table` leaves out of a definition: words for people, marks for generators.
_NOT_CHECKED = ("description", "x-kward-method", "x-kward-stability", "x-kward-discriminator")


def params_table(schema: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """`(params, defs)`: each request method's params definition and the definitions they
    refer to, without descriptions and marks: what `kward.rpc.paramcheck` checks."""
    schema = build() if schema is None else schema
    defs = schema["$defs"]

    def bare(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (dict((n, bare(v)) for n, v in node[k].items()) if k == "properties" else bare(node[k]))
                    for k in node if k not in _NOT_CHECKED}
        if isinstance(node, list):
            return [bare(v) for v in node]
        return node

    roots = {method: refs["params"].rsplit("/", 1)[1] for method, refs in schema["x-kward-messages"]["request"].items()}
    params = {method: bare(defs[name]) for method, name in sorted(roots.items())}
    used = _reachable(defs, sorted(set(roots.values())))
    referred = {name for name in used if f'"#/$defs/{name}"' in json.dumps(params) + json.dumps(
        [defs[n] for n in sorted(used)])}
    return params, {name: bare(defs[name]) for name in sorted(referred)}


def params_table_source() -> str:
    """The text of kward/rpc/params_table.py (`tools/gen_params_table.py` writes it)."""
    import pprint

    params, defs = params_table()
    return ('"""Each request method\'s params, generated from kward/rpc/shapes by tools/gen_params_table.py:\n'
            'do not edit (tests/packaging/test_schema.py fails when it is stale). Read by kward.rpc.paramcheck."""\n\n'
            "from typing import Any\n\n"
            f"PARAMS: dict[str, Any] = {pprint.pformat(params, width=110, sort_dicts=False)}\n\n"
            f"DEFS: dict[str, Any] = {pprint.pformat(defs, width=110, sort_dicts=False)}\n")


def dumps() -> str:
    """The schema as `--print-schema` prints it (sorted, indented, one trailing newline)."""
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
