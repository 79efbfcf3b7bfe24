"""Helpers the payload modules share. Pure functions, any thread."""

from __future__ import annotations

from typing import Any


def present(out: dict[str, Any]) -> dict[str, Any]:
    """`out` without its None values."""
    return {k: v for k, v in out.items() if v is not None}
