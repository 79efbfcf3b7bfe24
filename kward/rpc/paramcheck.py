"""Every request's params checked against its shape before its handler runs.

The shapes (`kward.rpc.shapes`) declare each method's params; `kward.rpc.params_table` is
generated from them (`python3 tools/gen_params_table.py`, checked for staleness by
tests/packaging/test_schema.py), so the params the server accepts are the ones the schema
publishes, from one source, without loading the shapes at run time. `check` walks the
JSON Schema subset the generator emits (type, enum, const, anyOf, $ref, properties,
required, items, additionalProperties, numeric bounds, string and array lengths) and raises
`InvalidParams` (-32602) naming the first param that does not fit, with `data.param` its
path (`attachments[0].mimeType`), in the words `kward.rpc.params.Params` uses.

As there: a param that is missing or null takes its default (null only refused where the
param is required), and params no shape declares are ignored (clients send extra ones).
Handlers still read their params through `Params`, which adds what a schema cannot say
(a blank name, a path in the workspace). Pure; any thread.
"""

from __future__ import annotations

from typing import Any

from kward.errors import InvalidParams
from kward.jsonshape import format_path

_WORDS = {"string": "a string", "boolean": "true or false", "integer": "an integer", "number": "a number",
          "object": "an object", "array": "an array", "null": "null"}
Path = list[str | int]


def check(method: str, raw: dict[str, Any]) -> None:
    """Raise `InvalidParams` when `raw` does not fit `method`'s params shape; a method
    without one (registered by a plugin or a test) is not checked."""
    from kward.rpc.params_table import PARAMS

    spec = PARAMS.get(method)
    if spec is not None:
        _check(spec, raw, [])


def _fail(path: Path, words: str) -> InvalidParams:
    name = format_path(path, limit=8) if path else "params"
    return InvalidParams(f"Invalid params: '{name}' {words}", data={"param": name})


def _check(spec: dict[str, Any], value: Any, path: Path) -> None:
    ref = spec.get("$ref")
    if ref is not None:
        from kward.rpc.params_table import DEFS

        spec = DEFS[ref.rsplit("/", 1)[1]]
    options = spec.get("anyOf")
    if options is not None:
        _any_of(options, value, path)
    if "const" in spec and value != spec["const"]:
        raise _fail(path, f"must be {spec['const']!r}")
    if "enum" in spec and value not in spec["enum"]:
        raise _fail(path, "must be one of " + ", ".join(str(v) for v in spec["enum"]))
    kinds = spec.get("type")
    if kinds is not None:
        value = _typed(kinds if isinstance(kinds, list) else [kinds], value, path)
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        _bounds(spec, value, path, "an integer" if kinds == "integer" or kinds == ["integer", "null"] else "a number")
    elif isinstance(value, str):
        _length(spec, len(value), path, "characters")
    elif isinstance(value, list):
        _length(spec, len(value), path, "items")
        items = spec.get("items")
        if items:
            for i, item in enumerate(value):
                _check(items, item, [*path, i])
    elif isinstance(value, dict):
        _object(spec, value, path)


def _any_of(options: list[dict[str, Any]], value: Any, path: Path) -> None:
    first: InvalidParams | None = None
    for option in options:
        try:
            _check(option, value, path)
            return
        except InvalidParams as exc:
            if first is None and option.get("type") != "null":
                first = exc
    raise first or _fail(path, "is not allowed here")


def _typed(kinds: list[str], value: Any, path: Path) -> Any:
    """`value` if it is of one of `kinds` (an integral float counts as an integer and is
    given back as one)."""
    for kind in kinds:
        if kind == "string" and isinstance(value, str) or kind == "boolean" and isinstance(value, bool) \
                or kind == "object" and isinstance(value, dict) or kind == "array" and isinstance(value, list) \
                or kind == "null" and value is None:
            return value
        if isinstance(value, bool):
            continue
        if kind == "integer" and (isinstance(value, int) or isinstance(value, float) and value.is_integer()):
            return int(value)
        if kind == "number" and isinstance(value, (int, float)) and value == value \
                and value not in (float("inf"), float("-inf")):
            return value
    raise _fail(path, "must be " + " or ".join(_WORDS[k] for k in kinds if k != "null"))


def _bounds(spec: dict[str, Any], value: float, path: Path, noun: str) -> None:
    lo, hi, above = spec.get("minimum"), spec.get("maximum"), spec.get("exclusiveMinimum")
    if (lo is None or value >= lo) and (hi is None or value <= hi) and (above is None or value > above):
        return
    if noun == "an integer":
        parts = [f">= {_num(lo)}"] if lo is not None else []
        parts += [f"<= {_num(hi)}"] if hi is not None else []
        raise _fail(path, "must be an integer " + ", ".join(parts))
    words = [f"more than {_num(above)}"] if above is not None else []
    words += [f"at least {_num(lo)}"] if lo is not None else []
    words += [f"at most {_num(hi)}"] if hi is not None else []
    raise _fail(path, "must be a number " + " and ".join(words))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _length(spec: dict[str, Any], size: int, path: Path, unit: str) -> None:
    lo = spec.get("minLength" if unit == "characters" else "minItems")
    hi = spec.get("maxLength" if unit == "characters" else "maxItems")
    if lo is not None and size < lo:
        raise _fail(path, "must not be empty" if lo == 1 else f"must have at least {lo} {unit}")
    if hi is not None and size > hi:
        raise _fail(path, f"must be at most {hi} {unit}")


def _takes_null(spec: dict[str, Any]) -> bool:
    kinds = spec.get("type")
    return kinds == "null" or isinstance(kinds, list) and "null" in kinds \
        or any(_takes_null(option) for option in spec.get("anyOf", ()))


def _object(spec: dict[str, Any], value: dict[str, Any], path: Path) -> None:
    props: dict[str, Any] = spec.get("properties", {})
    required = spec.get("required", ())
    for name, sub in props.items():  # in the order the shape declares them
        item = value.get(name)
        if item is not None:
            _check(sub, item, [*path, name])
        elif name in required and not _takes_null(sub):
            raise _fail([*path, name], "is required")
    extra = spec.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        for name, item in value.items():
            if name not in props and item is not None:
                _check(extra, item, [*path, name])
