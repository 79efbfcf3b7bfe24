"""`Record`: the class syntax of `typing.NamedTuple` without importing `typing`.

The modules `kward rpc` imports to answer `initialize` do not import `typing`: importing
it costs about as much as the rest of the handshake's own code, and every NamedTuple class
it builds compiles each field's annotation. A `Record` class is what
`collections.namedtuple` builds (a tuple subclass: fields in order, defaults, `_make`,
`_replace`, `_asdict`, properties, docstring, pickling), built without compiling source:
namedtuple compiles a `__new__` for every class (half its cost, ~2 ms over the classes
`kward rpc` defines before it answers `initialize`); here the one of each number of fields
comes compiled with this module and is renamed for each class (`code.replace`), and the
methods are shared:

    class RpcSettings(Record):
        workers: int = 32
        max_frame_bytes: int = 64 * 1024 * 1024

Type checkers see `typing.NamedTuple` (the `TYPE_CHECKING` branch), so fields and
constructors are checked as before. Those modules import their annotation-only names from
`typing` under `if TYPE_CHECKING:` (the constant below, which type checkers treat as true).
Pure; any thread.
"""

from __future__ import annotations

TYPE_CHECKING = False

# What a class body may not define (as typing.NamedTuple): namedtuple's own machinery.
_PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                         "_make", "_replace", "_asdict", "_source"})
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

if TYPE_CHECKING:  # pragma: no cover
    from typing import NamedTuple as Record
else:
    from operator import itemgetter

    try:
        from _collections import _tuplegetter  # what namedtuple uses
    except ImportError:  # pragma: no cover (other Pythons)
        def _tuplegetter(index, doc):
            return property(itemgetter(index), doc=doc)

    # number of fields -> the code of `__new__(_cls, _0, _1, ...)`: up to 12 fields compiled
    # with this module (an `eval` costs ~0.3 M instructions, parsing and compiling: ~3 M over
    # the Records `kward rpc` defines before it answers `initialize`), more on first use
    _NEW_CODE: dict = {f.__code__.co_argcount - 1: f.__code__ for f in (
        lambda _cls: _tuple_new(_cls, ()),
        lambda _cls, _0: _tuple_new(_cls, (_0,)),
        lambda _cls, _0, _1: _tuple_new(_cls, (_0, _1)),
        lambda _cls, _0, _1, _2: _tuple_new(_cls, (_0, _1, _2)),
        lambda _cls, _0, _1, _2, _3: _tuple_new(_cls, (_0, _1, _2, _3)),
        lambda _cls, _0, _1, _2, _3, _4: _tuple_new(_cls, (_0, _1, _2, _3, _4)),
        lambda _cls, _0, _1, _2, _3, _4, _5: _tuple_new(_cls, (_0, _1, _2, _3, _4, _5)),
        lambda _cls, _0, _1, _2, _3, _4, _5, _6: _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6)),
        lambda _cls, _0, _1, _2, _3, _4, _5, _6, _7: _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7)),
        lambda _cls, _0, _1, _2, _3, _4, _5, _6, _7, _8: _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8)),
        (lambda _cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9:
         _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9))),
        (lambda _cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10:
         _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10))),
        (lambda _cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11:
         _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11))),
    )}
    _FUNCTION = type(lambda: None)
    _NEW_GLOBALS = {"_tuple_new": tuple.__new__, "__builtins__": {}, "__name__": "kward.records"}

    def _new(name: str, fields: tuple, defaults: tuple):
        """`__new__(_cls, <fields>)` returning `tuple.__new__(_cls, (<fields>))`."""
        code = _NEW_CODE.get(len(fields))
        if code is None:
            args = ", ".join(f"_{i}" for i in range(len(fields)))
            code = eval(f"lambda _cls, {args}: _tuple_new(_cls, ({args}{',' if len(fields) == 1 else ''}))",
                        _NEW_GLOBALS).__code__
            _NEW_CODE[len(fields)] = code
        function = _FUNCTION(code.replace(co_varnames=("_cls", *fields), co_name="__new__"), _NEW_GLOBALS,
                             "__new__", defaults or None)
        function.__qualname__ = f"{name}.__new__"
        function.__doc__ = f"Create new instance of {name}({', '.join(fields)})"
        return function

    @classmethod
    def _make(cls, iterable):
        """Make a new instance from a sequence or iterable."""
        result = tuple.__new__(cls, iterable)
        if len(result) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
        return result

    def _replace(self, /, **changes):
        """Return a new instance replacing the fields named with new values."""
        result = self._make(map(changes.pop, self._fields, self))
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return result

    def _repr(self):
        return f"{self.__class__.__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self))})"

    def _asdict(self):
        """Return a new dict which maps field names to their values."""
        return dict(zip(self._fields, self))

    def _getnewargs(self):
        return tuple(self)

    class _RecordMeta(type):
        """Turns `class X(Record): ...` into the class `collections.namedtuple("X", ...)`
        would build, with the body's other attributes, as typing.NamedTupleMeta does."""

        def __new__(mcls, name: str, bases: tuple, namespace: dict):
            if bases != (Record,):
                raise TypeError("a Record class derives from Record alone")
            fields = tuple(namespace.get("__annotations__", {}))
            defaults = []
            for field in fields:
                if field in namespace:
                    defaults.append(namespace[field])
                elif defaults:
                    raise TypeError(f"{name}: field {field} without a default follows fields with one")
            body = {"__doc__": f"{name}({', '.join(fields)})", "__slots__": (), "_fields": fields,
                    "_field_defaults": dict(zip(fields[len(fields) - len(defaults):], defaults)),
                    "__new__": _new(name, fields, tuple(defaults)), "_make": _make, "_replace": _replace,
                    "__repr__": _repr, "_asdict": _asdict, "__getnewargs__": _getnewargs, "__match_args__": fields}
            for index, field in enumerate(fields):
                body[field] = _tuplegetter(index, f"Alias for field number {index}")
            for key, value in namespace.items():  # (into the body: one type creation, no setattr each)
                if key in _PROHIBITED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in fields:
                    body[key] = value
            body["__module__"] = namespace.get("__module__", __name__)
            body["__annotations__"] = dict(namespace.get("__annotations__", {}))
            return type.__new__(type, name, (tuple,), body)

    Record = type.__new__(_RecordMeta, "Record", (), {"__module__": __name__, "__doc__": __doc__})
