"""`logging/stats`: the telemetry records of a range, counted.

`read(directory, start, end, categories)` yields the records of the enabled categories
whose timestamp lies in [start, end], from the files whose date lies in the range (day
files and their `-N` successors, in order); unreadable lines are skipped. Timestamps kward
wrote (`YYYY-MM-DDTHH:MM:SS.mmmZ`) are compared as text; others are parsed.

`collect(...)` builds the result (keys as the original kward's): `range`, `logDir`,
`enabledCategories`, `recordCount`, `recordsByCategory`, `recordsByEvent`,
`usageStats {modelUsageEvents, totals}`, `performance {events {<event>: {count,
statuses, durationMs {min, avg, max}}}}`, `tools {calls, resultBytes, byName, byStatus}`
and `errors {count, byEvent, byClass, byProvider, byCode}`. Error messages are never part
of it. Pure over the files; any thread.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from kward.telemetry.ranges import Range

_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-(\d+))?\.jsonl$")
_OURS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def _ms_iso(dt: datetime) -> str:
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def normalized_timestamp(value: Any) -> str | None:
    """A record's timestamp in kward's own form (comparable as text); None if unusable."""
    if not isinstance(value, str):
        return None
    if _OURS.match(value):
        return value
    from kward.sessions.records import normalize_iso

    return normalize_iso(value)


def log_files(directory: Path, start: datetime, end: datetime) -> list[Path]:
    first, last = start.strftime("%Y-%m-%d"), end.strftime("%Y-%m-%d")
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        match = _FILE.match(name)
        if match and first <= match.group(1) <= last:
            found.append((match.group(1), int(match.group(2) or 0), name))
    return [directory / name for _, _, name in sorted(found)]


def read(directory: Path, start: datetime, end: datetime, categories: Iterable[str]) -> Iterator[dict[str, Any]]:
    low, high = _ms_iso(start), _ms_iso(end)
    wanted = frozenset(categories)
    loads = json.loads
    for path in log_files(directory, start, end):
        try:
            f = open(path, "rb")
        except OSError:
            continue
        with f:
            for line in f:
                try:
                    record = loads(line)
                except ValueError:
                    continue
                if type(record) is not dict or record.get("category") not in wanted:
                    continue
                stamp = record.get("timestamp")
                if type(stamp) is not str or len(stamp) != 24:
                    stamp = normalized_timestamp(stamp)
                    if stamp is None:
                        continue
                if low <= stamp <= high:
                    yield record


def _number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and value == value


def _counts(counter: Counter) -> dict[str, int]:
    return {k: counter[k] for k in sorted(counter)}


class _Aggregate:
    def __init__(self) -> None:
        self.count = 0
        self.by_category: Counter = Counter()
        self.by_event: Counter = Counter()
        self.usage_events = 0
        self.totals: Counter = Counter()
        self.perf: dict[str, list[Any]] = {}  # event -> [count, statuses, n, sum, min, max]
        self.tool_calls = 0
        self.result_bytes = 0
        self.tool_names: Counter = Counter()
        self.tool_statuses: Counter = Counter()
        self.errors = 0
        self.error_events: Counter = Counter()
        self.error_classes: Counter = Counter()
        self.error_providers: Counter = Counter()
        self.error_codes: Counter = Counter()

    def add(self, r: dict[str, Any]) -> None:
        self.count += 1
        category = r.get("category")
        event = r.get("event")
        event = event if type(event) is str else ("" if event is None else str(event))
        self.by_category[category] += 1
        if event:
            self.by_event[event] += 1
        if category == "tokens":
            if event == "model_usage":
                self.usage_events += 1
                usage = r.get("usage")
                if type(usage) is dict:
                    for key, value in usage.items():
                        if _number(value):
                            self.totals[key] += value
        elif category == "performance":
            if event:
                self._perf(event, r)
        elif category == "tools":
            if event == "tool_call":
                self.tool_calls += 1
                size = r.get("result_bytes")
                if _number(size):
                    self.result_bytes += size
                self._count(self.tool_names, r.get("tool_name"))
                self._count(self.tool_statuses, r.get("status"))
        elif category == "errors":
            self.errors += 1
            self._count(self.error_events, event)
            self._count(self.error_classes, r.get("error_class"))
            self._count(self.error_providers, r.get("provider"))
            self._count(self.error_codes, r.get("error_code"))

    @staticmethod
    def _count(counter: Counter, value: Any) -> None:
        if value is not None and value != "" and not isinstance(value, (dict, list)):
            counter[value if type(value) is str else str(value)] += 1

    def _perf(self, event: str, r: dict[str, Any]) -> None:
        stats = self.perf.get(event)
        if stats is None:
            stats = self.perf[event] = [0, Counter(), 0, 0.0, None, None]
        stats[0] += 1
        self._count(stats[1], r.get("status"))
        duration = r.get("duration_ms")
        if _number(duration):
            stats[2] += 1
            stats[3] += duration
            stats[4] = duration if stats[4] is None or duration < stats[4] else stats[4]
            stats[5] = duration if stats[5] is None or duration > stats[5] else stats[5]

    def result(self) -> dict[str, Any]:
        def durations(s: list[Any]) -> dict[str, Any]:
            if not s[2]:
                return {"min": None, "avg": None, "max": None}
            return {"min": round(float(s[4]), 1), "avg": round(s[3] / s[2], 1), "max": round(float(s[5]), 1)}

        return {
            "recordCount": self.count,
            "recordsByCategory": _counts(self.by_category),
            "recordsByEvent": _counts(self.by_event),
            "usageStats": {"modelUsageEvents": self.usage_events,
                           "totals": {k: self.totals[k] for k in sorted(self.totals)}},
            "performance": {"events": {e: {"count": s[0], "statuses": _counts(s[1]), "durationMs": durations(s)}
                                       for e, s in sorted(self.perf.items())}},
            "tools": {"calls": self.tool_calls, "resultBytes": self.result_bytes,
                      "byName": _counts(self.tool_names), "byStatus": _counts(self.tool_statuses)},
            "errors": {"count": self.errors, "byEvent": _counts(self.error_events),
                       "byClass": _counts(self.error_classes), "byProvider": _counts(self.error_providers),
                       "byCode": _counts(self.error_codes)},
        }


def collect(directory: Path, rng: Range, categories: tuple[str, ...]) -> dict[str, Any]:
    agg = _Aggregate()
    add = agg.add
    for record in read(directory, rng.start, rng.end, categories):
        add(record)
    return {"range": rng.payload(), "logDir": str(directory), "enabledCategories": list(categories), **agg.result()}
