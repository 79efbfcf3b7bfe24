"""ISO-8601 timestamps as kward writes them: UTC with milliseconds, ``2026-01-02T03:04:05.678Z``
(session records, turn events and turn times, memory and telemetry records), and the
readers of other writers' forms.

Standard library only, no state but a one-second cache of `now_iso`; any thread.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

_second: tuple[int, str] = (-1, "")  # (whole second, its formatted prefix): events come thousands a second


def now_iso() -> str:
    """Now, as ``2026-01-02T03:04:05.678Z``."""
    global _second
    t = time.time()
    whole, prefix = _second
    if whole != int(t):
        whole = int(t)
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _second = (whole, prefix)  # one atomic rebinding; a racing thread computes the same value
    return f"{prefix}.{int(t * 1000) % 1000:03d}Z"


def iso_ms(dt: datetime) -> str:
    """An aware (or naive UTC) datetime as ``2026-06-12T10:11:12.345Z``."""
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def iso_from_epoch(t: float) -> str:
    """Seconds since the epoch (`time.time()`) as ``...T03:04:05.678Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def iso_from_ns(ns: int) -> str:
    """Nanoseconds since the epoch (a file's st_mtime_ns) as ``...T03:04:05.678Z``."""
    dt = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{(ns // 1_000_000) % 1000:03d}Z"


def seconds_iso(dt: datetime) -> str:
    """An aware datetime as ``2026-06-12T10:11:12Z`` (whole seconds: range bounds)."""
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def normalize_iso(value: Any) -> str | None:
    """Any ISO-8601 timestamp re-formatted as UTC with milliseconds; None when unparseable
    or not a time of the years 1 to 9999 in UTC."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python 3.10's fromisoformat wants 0, 3 or 6 fraction digits: pad or cut to 6.
    head, sep, rest = text.partition(".")
    if sep:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, tail = rest[:digits], rest[digits:]
        text = f"{head}.{(frac + '000000')[:6]}{tail}"
    try:
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return iso_ms(dt)
    except (ValueError, OverflowError):  # (OverflowError: beyond year 9999 or before year 1 in UTC)
        return None


def parse_ms(stamp: str) -> datetime:
    """A timestamp in kward's form (``...T03:04:05.678Z``) as an aware UTC datetime;
    ValueError otherwise."""
    return datetime.fromisoformat(stamp[:-1] + "+00:00")
