"""`value`, the class builder of the core model's slotted value classes (`kward.model`),
and `EMPTY`, the empty mapping their `extras` default to.

`value` gives what ``dataclass(slots=True)`` gives, defined in a fraction of the time
(every process that touches a session imports the model: a UI's short-lived list refresh
among them). Pure, any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return all(getattr(self, n) == getattr(other, n) for n in self._compared)


def _repr(self: Any) -> str:
    return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._compared)})"


def value(cls: type) -> type:
    """`cls` remade as a slotted value class from its annotated fields, in order, with their
    defaults: ``__init__`` (positional or keyword), ``__eq__`` over every field but
    `record` (same class only; unhashable, as a mutable dataclass), ``__repr__`` (without
    `record`). Class attributes and methods stay as they are."""
    names = list(cls.__dict__.get("__annotations__", {}))
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    namespace = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
    params = ", ".join(f"{n}=_{n}" if n in defaults else n for n in names)
    scope = {f"_{n}": v for n, v in defaults.items()}
    exec(f"def __init__(self, {params}):\n" + "".join(f"    self.{n} = {n}\n" for n in names), scope)
    namespace.update(__slots__=tuple(names), __init__=scope["__init__"], __eq__=_eq, __repr__=_repr, __hash__=None,
                     __match_args__=tuple(names), _compared=tuple(n for n in names if n != "record"))
    return type(cls.__name__, cls.__bases__, namespace)


class _Empty(Mapping):
    """The empty, immutable (hashable) mapping: the default `extras`."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY: Mapping[str, Any] = _Empty()
