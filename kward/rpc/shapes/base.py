"""The vocabulary of the wire shapes (`kward.rpc.shapes`): stabilities and the metadata a
field's `Annotated[...]` may carry. Plain data, any thread.

Stability (``x-kward-stability`` in the schema): `ORIGINAL` (the original kward's
protocol), `ADDITION` (kward's, stable: sent to every client) and `EXPERIMENTAL` (kward's,
may change: sent only to a client that passed ``capabilities.experimentalApi: true``;
`kward.rpc.experimental`). A field without a stability of its own has its shape's.

Field metadata: `Doc` (the description), `Stability` (the field's own), `Range` (numbers),
`Length` (strings and arrays), `Open` (an object that may hold keys not declared: the
values of config.json, a tool's arguments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

ORIGINAL, ADDITION, EXPERIMENTAL = "original", "addition", "experimental"
STABILITIES = (ORIGINAL, ADDITION, EXPERIMENTAL)


@dataclass(frozen=True, slots=True)
class Stability:
    level: str

    def __post_init__(self) -> None:
        if self.level not in STABILITIES:
            raise ValueError(f"unknown stability {self.level!r}")


#: `Annotated[str, AN_ADDITION]`: a field kward added to an original shape.
AN_ADDITION = Stability(ADDITION)
#: `Annotated[str, EXPERIMENTAL_FIELD]`: a field sent only to experimental clients.
EXPERIMENTAL_FIELD = Stability(EXPERIMENTAL)


@dataclass(frozen=True, slots=True)
class Doc:
    text: str


@dataclass(frozen=True, slots=True)
class Range:
    """A number's bounds (inclusive; `above`: exclusive lower bound)."""

    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None


@dataclass(frozen=True, slots=True)
class Length:
    """A string's (characters) or an array's (items) bounds."""

    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True, slots=True)
class Open:
    """An object whose keys are not all declared (its values: `values`, any when None)."""

    values: Any = None


OPEN = Open()


@dataclass(frozen=True, slots=True)
class ShapeInfo:
    """What `shape` says of a TypedDict: its stability (None: its user's) and whether it
    may hold keys it does not declare (`open`: a client-sent object kward reads part of)."""

    stability: str | None = None
    open: bool = False


#: The shapes `shape` decorated, by class.
SHAPES: dict[type, ShapeInfo] = {}
_T = TypeVar("_T")


def shape(*, stability: str | None = None, open: bool = False) -> Callable[[_T], _T]:
    """Decorate a shape's TypedDict with what its class cannot carry (see `ShapeInfo`)."""
    if stability is not None and stability not in STABILITIES:
        raise ValueError(f"unknown stability {stability!r}")

    def mark(cls: _T) -> _T:
        SHAPES[cls] = ShapeInfo(stability, open)  # type: ignore[index]
        return cls

    return mark


@dataclass(frozen=True, slots=True)
class Entry:
    """One message: its `params` (or payload) shape and, for a request, its `result` shape
    (a TypedDict, or None), and its `stability`."""

    params: Any
    result: Any = None
    stability: str = ORIGINAL
