"""`Record`: the class syntax of `typing.NamedTuple` without importing `typing`.

The modules `kward rpc` imports to answer `initialize` do not import `typing`: importing
it costs about as much as the rest of the handshake's own code, and every NamedTuple class
it builds compiles each field's annotation. A `Record` class is the same class built by
`collections.namedtuple` (fields in order, defaults, methods, properties, docstring):

    class RpcSettings(Record):
        workers: int = 32
        max_frame_bytes: int = 64 * 1024 * 1024

Type checkers see `typing.NamedTuple` (the `TYPE_CHECKING` branch), so fields and
constructors are checked as before. Those modules import their annotation-only names from
`typing` under `if TYPE_CHECKING:` (the constant below, which type checkers treat as true).
Pure; any thread.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False

# What a class body may not define (as typing.NamedTuple): namedtuple's own machinery.
_PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                         "_make", "_replace", "_asdict", "_source"})
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

if TYPE_CHECKING:  # pragma: no cover
    from typing import NamedTuple as Record
else:
    class _RecordMeta(type):
        """Turns `class X(Record): ...` into `collections.namedtuple("X", ...)` with the
        body's other attributes, as typing.NamedTupleMeta does."""

        def __new__(mcls, name: str, bases: tuple, namespace: dict):
            if bases != (Record,):
                raise TypeError("a Record class derives from Record alone")
            fields = list(namespace.get("__annotations__", {}))
            defaults = []
            for field in fields:
                if field in namespace:
                    defaults.append(namespace[field])
                elif defaults:
                    raise TypeError(f"{name}: field {field} without a default follows fields with one")
            cls = collections.namedtuple(name, fields, defaults=defaults, module=namespace.get("__module__"))
            cls.__annotations__ = dict(namespace.get("__annotations__", {}))
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in cls._fields:
                    setattr(cls, key, value)
            return cls

    Record = type.__new__(_RecordMeta, "Record", (), {"__module__": __name__, "__doc__": __doc__})
