"""Typed access to request params for the thin RPC handlers.

Every accessor raises `InvalidParams` (-32602) naming the param when it is missing (and
required) or of the wrong type. Params a handler never asks for are ignored: real clients
send extra ones. Values arrive checked by `protocol.parse` (at most 64 levels deep, no
unpaired surrogate in any string). Pure; used on whichever thread runs the handler.
"""

from __future__ import annotations

from typing import Any

from kward.errors import InvalidParams

_MISSING = object()


class Params:
    def __init__(self, raw: dict[str, Any]):
        self.raw = raw

    def _get(self, name: str, required: bool) -> Any:
        value = self.raw.get(name, _MISSING)
        if value is _MISSING or value is None:
            if required:
                raise InvalidParams(f"Invalid params: '{name}' is required", data={"param": name})
            return _MISSING
        return value

    @staticmethod
    def _wrong(name: str, expected: str) -> InvalidParams:
        return InvalidParams(f"Invalid params: '{name}' must be {expected}", data={"param": name})

    def has(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def text(self, name: str, default: Any = None, *, required: bool = False, non_empty: bool = False,
            max_len: int | None = None) -> Any:
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise self._wrong(name, "a string")
        if non_empty and not value.strip():
            raise self._wrong(name, "a non-empty string")
        if max_len is not None and len(value) > max_len:
            raise self._wrong(name, f"at most {max_len} characters")
        return value

    def flag(self, name: str, default: Any = None, *, required: bool = False) -> Any:
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false")
        return value

    def integer(self, name: str, default: Any = None, *, required: bool = False, min: int | None = None,
            max: int | None = None) -> Any:
        value = self._get(name, required)
        if value is _MISSING:
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

    def number(self, name: str, default: Any = None, *, required: bool = False, above: float | None = None,
               max: float | None = None) -> Any:
        """A finite number (integer or not) more than `above` and at most `max`."""
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
                or value in (float("inf"), float("-inf")):
            raise self._wrong(name, "a number")
        if (above is not None and value <= above) or (max is not None and value > max):
            lo = "" if above is None else f" more than {above:g}"
            hi = "" if max is None else f" at most {max:g}"
            raise self._wrong(name, "a number" + lo + (" and" if lo and hi else "") + hi)
        return value

    def mapping(self, name: str, default: Any = None, *, required: bool = False) -> Any:
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if not isinstance(value, dict):
            raise self._wrong(name, "an object")
        return value

    def array(self, name: str, default: Any = None, *, required: bool = False, of: type | None = None) -> Any:
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if not isinstance(value, list):
            raise self._wrong(name, "an array")
        if of is not None and not all(isinstance(v, of) and (of is bool or not isinstance(v, bool)) for v in value):
            raise self._wrong(name, f"an array of {of.__name__}")
        return value

    def choice(self, name: str, options: tuple[str, ...], default: Any = None, *, required: bool = False,
               aliases: dict[str, str] | None = None) -> Any:
        value = self.text(name, _MISSING, required=required)
        if value is _MISSING:
            return default
        value = (aliases or {}).get(value, value)
        if value not in options:
            raise self._wrong(name, "one of " + ", ".join(options))
        return value
