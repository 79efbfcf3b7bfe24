"""`logging/stats`: the telemetry records of a range, counted.

`read(directory, start, end, categories)` yields the records of the enabled categories
whose timestamp lies in [start, end], from the files whose date lies in the range (day
files and their `-N` successors, in order); unreadable lines are skipped. Timestamps kward
wrote (`YYYY-MM-DDTHH:MM:SS.mmmZ`) are compared as text; others are parsed.

`collect(...)` counts them into a `Stats`: the range, the log directory, the enabled
categories, the record count, records by category and by event, the model usage
(`UsageStats`: events, summed usage fields), the performance events (`EventStats`: count,
statuses, `Durations` in ms), the tool calls (`ToolStats`) and the errors (`ErrorStats`:
by event, class, provider and code). Every count mapping is ordered by key. Error
messages are never part of it. The RPC face shapes it into the `logging/stats` result
(`kward.rpc.wire.telemetry.stats`, keys as the original kward's). Pure over the files; any thread.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypeGuard, TypeVar

from kward.telemetry.ranges import Range
from kward.timefmt import iso_ms, normalize_iso

Record = dict[str, object]  # a telemetry record as a log file holds it (JSON values)
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Durations:
    """Milliseconds, rounded to 0.1; all None when no record had a duration."""

    min: float | None = None
    avg: float | None = None
    max: float | None = None


@dataclass(frozen=True, slots=True)
class EventStats:
    """The `performance` records of one event."""

    count: int
    statuses: dict[str, int]
    duration_ms: Durations


@dataclass(frozen=True, slots=True)
class UsageStats:
    """The `tokens/model_usage` records: how many, and each numeric usage field summed."""

    model_usage_events: int
    totals: dict[str, float]  # (an int while every value summed is one)


@dataclass(frozen=True, slots=True)
class ToolStats:
    """The `tools/tool_call` records."""

    calls: int
    result_bytes: float  # (an int while every size is one)
    by_name: dict[str, int]
    by_status: dict[str, int]


@dataclass(frozen=True, slots=True)
class ErrorStats:
    """The `errors` records (never their messages)."""

    count: int
    by_event: dict[str, int]
    by_class: dict[str, int]
    by_provider: dict[str, int]
    by_code: dict[str, int]


@dataclass(frozen=True, slots=True)
class Stats:
    """The stats of a range (see the module docstring); `performance` by event, ordered."""

    range: Range
    log_dir: Path
    enabled_categories: tuple[str, ...]
    record_count: int
    records_by_category: dict[str, int]
    records_by_event: dict[str, int]
    usage: UsageStats
    performance: dict[str, EventStats]
    tools: ToolStats
    errors: ErrorStats


_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-(\d+))?\.jsonl$")
_OURS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def normalized_timestamp(value: object) -> str | None:
    """A record's timestamp in kward's own form (comparable as text); None if unusable."""
    if not isinstance(value, str):
        return None
    if _OURS.match(value):
        return value
    return normalize_iso(value)


def log_files(directory: Path, start: datetime, end: datetime) -> list[Path]:
    first, last = start.strftime("%Y-%m-%d"), end.strftime("%Y-%m-%d")
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: list[tuple[str, int, str]] = []
    for name in names:
        match = _FILE.match(name)
        if match and first <= match.group(1) <= last:
            found.append((match.group(1), int(match.group(2) or 0), name))
    return [directory / name for _, _, name in sorted(found)]


def read(directory: Path, start: datetime, end: datetime, categories: Iterable[str]) -> Iterator[Record]:
    low, high = iso_ms(start), iso_ms(end)
    wanted = frozenset(categories)
    decode = json.JSONDecoder().raw_decode  # on text lines: about twice as fast as json.loads of bytes
    for path in log_files(directory, start, end):
        try:
            f = open(path, encoding="utf-8", errors="replace")
        except OSError:
            continue
        with f:
            for line in f:
                try:
                    record = decode(line)[0]
                except ValueError:
                    try:
                        record = json.loads(line)  # leading blanks, a lone value
                    except ValueError:
                        continue
                if not isinstance(record, dict) or record.get("category") not in wanted:
                    continue
                stamp = record.get("timestamp")
                if not isinstance(stamp, str) or len(stamp) != 24:
                    stamp = normalized_timestamp(stamp)
                    if stamp is None:
                        continue
                if low <= stamp <= high:
                    yield record


def is_number(value: object) -> TypeGuard[float]:
    """A JSON number that is not NaN (booleans are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _counts(counter: dict[str, _V]) -> dict[str, _V]:
    return {k: counter[k] for k in sorted(counter)}


def _key(value: object) -> str | None:
    """A value counted under `by...`: a non-empty scalar, as text."""
    if value is None or value == "" or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else str(value)


@dataclass(slots=True)
class _Tally:
    """The `performance` records of one event while they are counted."""

    count: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    timed: int = 0  # records with a duration
    total: float = 0.0  # their durations summed
    shortest: float | None = None
    longest: float | None = None

    def add(self, status: str | None, duration: object) -> None:
        self.count += 1
        if status is not None:
            self.statuses[status] = self.statuses.get(status, 0) + 1
        if is_number(duration):
            self.timed += 1
            self.total += duration
            if self.shortest is None or duration < self.shortest:
                self.shortest = duration
            if self.longest is None or duration > self.longest:
                self.longest = duration

    def stats(self) -> EventStats:
        if self.shortest is None or self.longest is None:
            durations = Durations()
        else:
            durations = Durations(round(float(self.shortest), 1), round(self.total / self.timed, 1),
                                  round(float(self.longest), 1))
        return EventStats(self.count, _counts(self.statuses), durations)


def collect(directory: Path, rng: Range, categories: tuple[str, ...]) -> Stats:
    """The stats of the range (see the module docstring), in one pass over the records."""
    count = usage_events = tool_calls = errors = 0
    result_bytes: float = 0
    by_category: dict[str, int] = {}
    by_event: dict[str, int] = {}
    totals: dict[str, float] = {}
    perf: dict[str, _Tally] = {}
    names: dict[str, int] = {}
    statuses: dict[str, int] = {}
    error_counts: dict[str, dict[str, int]] = {"event": {}, "error_class": {}, "provider": {}, "error_code": {}}
    for r in read(directory, rng.start, rng.end, categories):
        count += 1
        category = str(r["category"])  # (read yields the wanted categories only: strings)
        by_category[category] = by_category.get(category, 0) + 1
        event = r.get("event")
        if not isinstance(event, str):
            event = _key(event) or ""
        if event:
            by_event[event] = by_event.get(event, 0) + 1
        if category == "performance":
            if not event:
                continue
            tally = perf.get(event)
            if tally is None:
                tally = perf[event] = _Tally()
            tally.add(_key(r.get("status")), r.get("duration_ms"))
        elif category == "tools":
            if event != "tool_call":
                continue
            tool_calls += 1
            size = r.get("result_bytes")
            if is_number(size):
                result_bytes += size
            for counter, value in ((names, r.get("tool_name")), (statuses, r.get("status"))):
                key = _key(value)
                if key is not None:
                    counter[key] = counter.get(key, 0) + 1
        elif category == "tokens":
            if event != "model_usage":
                continue
            usage_events += 1
            usage = r.get("usage")
            if isinstance(usage, dict):
                for key, value in usage.items():
                    if is_number(value):
                        totals[key] = totals.get(key, 0) + value
        elif category == "errors":
            errors += 1
            for field, counter in error_counts.items():
                key = event or None if field == "event" else _key(r.get(field))
                if key is not None:
                    counter[key] = counter.get(key, 0) + 1
    return Stats(
        rng, directory, tuple(categories), count, _counts(by_category), _counts(by_event),
        UsageStats(usage_events, _counts(totals)),
        {e: tally.stats() for e, tally in sorted(perf.items())},
        ToolStats(tool_calls, result_bytes, _counts(names), _counts(statuses)),
        ErrorStats(errors, _counts(error_counts["event"]), _counts(error_counts["error_class"]),
                   _counts(error_counts["provider"]), _counts(error_counts["error_code"])),
    )
