"""`EMPTY`: the empty, immutable and hashable mapping that mapping fields default to (a
dataclass field may not default to a `dict`; `types.MappingProxyType` is not hashable).
Pure, any thread."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class _Empty(Mapping[str, Any]):
    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
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
