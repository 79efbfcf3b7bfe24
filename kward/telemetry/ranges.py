"""The range grammar of `logging/stats`, `logging/tokenCsv` and `kward stats tokens`, and
the time buckets of the token CSV.

A range is `N unit` (`N` a positive integer, `unit` minute, hour, day, week, month or
year, singular or plural, any case); none or blank means `1 week`. Ranges are UTC
calendar periods ending now: `1 day` is today so far, `2 days` yesterday and today,
`1 week` this week so far (weeks start on Monday), `1 month` this calendar month so far,
`2 months` the previous month and this one, `1 year` this year so far. Anything else is
`-32602` with the usage text.

Pure functions (the clock is a parameter); any thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from kward.errors import InvalidParams

DEFAULT_RANGE = "1 week"
UNITS = ("minute", "hour", "day", "week", "month", "year")
BUCKETS = ("second", "minute", "hour", "day", "week", "month", "year")
USAGE = "Usage: [N minutes|hours|days|weeks|months|years] (default: 1 week)"
MAX_INPUT = 100

_RANGE = re.compile(r"^(\d{1,9})\s+([A-Za-z]+)$")


@dataclass(frozen=True, slots=True)
class Range:
    """A parsed range: the text as given (stripped; the default when blank), its count
    and unit, and its UTC bounds."""

    input: str
    count: int
    unit: str  # singular
    start: datetime  # aware UTC
    end: datetime


def _unit(word: str, allowed: tuple[str, ...]) -> str | None:
    word = word.lower()
    if word.endswith("s"):
        word = word[:-1]
    return word if word in allowed else None


def invalid_range(text: str) -> InvalidParams:
    return InvalidParams(f"Invalid range: {text[:MAX_INPUT]!r}. {USAGE}", data={"param": "range", "usage": USAGE})


def parse_range(text: str | None, now: datetime) -> Range:
    value = (text or "").strip() or DEFAULT_RANGE
    match = _RANGE.match(value) if len(value) <= MAX_INPUT else None
    unit = _unit(match.group(2), UNITS) if match else None
    count = int(match.group(1)) if match else 0
    if unit is None or count < 1:
        raise invalid_range(value)
    now = now.astimezone(timezone.utc)
    try:
        start = period_start(now, count, unit)
    except (ValueError, OverflowError):  # before year 1
        raise invalid_range(value) from None
    return Range(value, count, unit, start, now)


def shift_months(dt: datetime, months: int) -> datetime:
    """The first of the month `months` after (before, when negative) `dt`'s month."""
    index = dt.year * 12 + dt.month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=timezone.utc)


def period_start(now: datetime, count: int, unit: str) -> datetime:
    """The start of the `count` calendar periods of `unit` ending with the current one."""
    if unit == "minute":
        return now.replace(second=0, microsecond=0) - timedelta(minutes=count - 1)
    if unit == "hour":
        return now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=count - 1)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        return midnight - timedelta(days=count - 1)
    if unit == "week":
        return midnight - timedelta(days=now.weekday()) - timedelta(weeks=count - 1)
    if unit == "month":
        return shift_months(now, -(count - 1))
    return datetime(now.year - count + 1, 1, 1, tzinfo=timezone.utc)


def parse_bucket(text: str | None, default: str) -> str:
    value = (text or "").strip() or default
    bucket = _unit(value, BUCKETS)
    if bucket is None:
        raise InvalidParams(f"Bucket must be one of: {', '.join(BUCKETS)}. {USAGE}",
                            data={"param": "bucket", "usage": USAGE})
    return bucket


def bucket_bounds(dt: datetime, bucket: str) -> tuple[datetime, datetime]:
    """The UTC bucket holding `dt`: (start, end)."""
    if bucket == "second":
        start = dt.replace(microsecond=0)
        return start, start + timedelta(seconds=1)
    if bucket == "minute":
        start = dt.replace(second=0, microsecond=0)
        return start, start + timedelta(minutes=1)
    if bucket == "hour":
        start = dt.replace(minute=0, second=0, microsecond=0)
        return start, start + timedelta(hours=1)
    midnight = dt.replace(hour=0, minute=0, second=0, microsecond=0)
    if bucket == "day":
        return midnight, midnight + timedelta(days=1)
    if bucket == "week":
        start = midnight - timedelta(days=dt.weekday())
        return start, start + timedelta(weeks=1)
    if bucket == "month":
        start = shift_months(dt, 0)
        return start, shift_months(dt, 1)
    start = datetime(dt.year, 1, 1, tzinfo=timezone.utc)
    return start, datetime(dt.year + 1, 1, 1, tzinfo=timezone.utc) if dt.year < 9999 else start
