"""Typed access to request params for the thin RPC handlers.

Every accessor raises `InvalidParams` (-32602) naming the param when it is missing (and
required) or of the wrong type. A missing param (or `null`) gives the default (None unless
given); `required=True` refuses it. Params a handler never asks for are ignored: real
clients send extra ones. Values arrive checked by `protocol.parse` (at most 64 levels
deep, no unpaired surrogate in any string). The overloads give a handler the type it gets:
`str` for a required text, `str | None` for an optional one without a default. Pure; used
on whichever thread runs the handler.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar, overload

from kward.errors import InvalidParams

_D = TypeVar("_D")


class Params:
    def __init__(self, raw: dict[str, Any]):
        self.raw = raw

    def _get(self, name: str, required: bool) -> object:
        """The param's value, or None when it is missing or null (InvalidParams when required)."""
        value = self.raw.get(name)
        if value is None and required:
            raise InvalidParams(f"Invalid params: '{name}' is required", data={"param": name})
        return value

    @staticmethod
    def _wrong(name: str, expected: str) -> InvalidParams:
        return InvalidParams(f"Invalid params: '{name}' must be {expected}", data={"param": name})

    def has(self, name: str) -> bool:
        return self.raw.get(name) is not None

    # --- text -----------------------------------------------------------------------------

    @overload
    def text(self, name: str, *, required: Literal[True], non_empty: bool = ..., max_len: int | None = ...) -> str: ...

    @overload
    def text(self, name: str, default: _D, *, required: bool = ..., non_empty: bool = ...,
             max_len: int | None = ...) -> str | _D: ...

    @overload
    def text(self, name: str, *, required: bool = ..., non_empty: bool = ..., max_len: int | None = ...) -> str | None: ...

    def text(self, name: str, default: object = None, *, required: bool = False, non_empty: bool = False,
             max_len: int | None = None) -> object:
        value = self._get(name, required)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._wrong(name, "a string")
        if non_empty and not value.strip():
            raise self._wrong(name, "a non-empty string")
        if max_len is not None and len(value) > max_len:
            raise self._wrong(name, f"at most {max_len} characters")
        return value

    # --- true or false ----------------------------------------------------------------------

    @overload
    def flag(self, name: str, *, required: Literal[True]) -> bool: ...

    @overload
    def flag(self, name: str, default: bool) -> bool: ...

    @overload
    def flag(self, name: str) -> bool | None: ...

    def flag(self, name: str, default: bool | None = None, *, required: bool = False) -> bool | None:
        value = self._get(name, required)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false")
        return value

    # --- numbers ------------------------------------------------------------------------------

    @overload
    def integer(self, name: str, default: int, *, min: int | None = ..., max: int | None = ...) -> int: ...

    @overload
    def integer(self, name: str, *, required: Literal[True], min: int | None = ..., max: int | None = ...) -> int: ...

    @overload
    def integer(self, name: str, *, min: int | None = ..., max: int | None = ...) -> int | None: ...

    def integer(self, name: str, default: int | None = None, *, required: bool = False, min: int | None = None,
                max: int | None = None) -> int | None:
        value = self._get(name, required)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(name, "an integer")
        if (min is not None and value < min) or (max is not None and value > max):
            lo = "" if min is None else f" >= {min}"
            hi = "" if max is None else f" <= {max}"
            raise self._wrong(name, "an integer" + lo + ("," if lo and hi else "") + hi)
        return value

    @overload
    def number(self, name: str, *, required: Literal[True], above: float | None = ...,
               max: float | None = ...) -> float: ...

    @overload
    def number(self, name: str, *, above: float | None = ..., max: float | None = ...) -> float | None: ...

    def number(self, name: str, *, required: bool = False, above: float | None = None,
               max: float | None = None) -> float | None:
        """A finite number (integer or not) more than `above` and at most `max`."""
        value = self._get(name, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
                or value in (float("inf"), float("-inf")):
            raise self._wrong(name, "a number")
        if (above is not None and value <= above) or (max is not None and value > max):
            lo = "" if above is None else f" more than {above:g}"
            hi = "" if max is None else f" at most {max:g}"
            raise self._wrong(name, "a number" + lo + (" and" if lo and hi else "") + hi)
        return value

    # --- objects and arrays -------------------------------------------------------------------

    @overload
    def mapping(self, name: str, default: dict[str, Any]) -> dict[str, Any]: ...

    @overload
    def mapping(self, name: str, *, required: Literal[True]) -> dict[str, Any]: ...

    @overload
    def mapping(self, name: str) -> dict[str, Any] | None: ...

    def mapping(self, name: str, default: dict[str, Any] | None = None, *,
                required: bool = False) -> dict[str, Any] | None:
        value = self._get(name, required)
        if value is None:
            return default
        if not isinstance(value, dict):
            raise self._wrong(name, "an object")
        return value

    @overload
    def array(self, name: str, default: list[Any], *, of: type | None = ...) -> list[Any]: ...

    @overload
    def array(self, name: str, *, required: Literal[True], of: type | None = ...) -> list[Any]: ...

    @overload
    def array(self, name: str, *, of: type | None = ...) -> list[Any] | None: ...

    def array(self, name: str, default: list[Any] | None = None, *, required: bool = False,
              of: type | None = None) -> list[Any] | None:
        """A JSON array; `of`: every item must be of that type (bool never counts as int)."""
        value = self._get(name, required)
        if value is None:
            return default
        if not isinstance(value, list):
            raise self._wrong(name, "an array")
        if of is not None and not all(isinstance(v, of) and (of is bool or not isinstance(v, bool)) for v in value):
            raise self._wrong(name, f"an array of {of.__name__}")
        return value

    def choice(self, name: str, options: tuple[str, ...], *, aliases: dict[str, str] | None = None) -> str | None:
        """One of `options` (after `aliases`), or None when missing."""
        value = self.text(name)
        if value is None:
            return None
        value = (aliases or {}).get(value, value)
        if value not in options:
            raise self._wrong(name, "one of " + ", ".join(options))
        return value
