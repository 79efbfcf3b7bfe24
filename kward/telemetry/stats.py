"""`logging/stats`: the telemetry records of a range, counted.

`read(directory, start, end, categories)` yields the records of the enabled categories
whose timestamp lies in [start, end], from the files whose date lies in the range (day
files and their `-N` successors, in order). Timestamps kward wrote
(`YYYY-MM-DDTHH:MM:SS.mmmZ`, checked by their shape) are compared as text; others are
parsed. The files are input:
each is opened with `kward.fsutil.open_own` (a symlink, FIFO, device or another user's
file is skipped, never followed or waited on), one larger than MAX_FILE_BYTES is skipped
unread, and a line that is not a usable record is skipped; both are counted (`Skipped`).

`collect(...)` counts them into a `Stats`: the range, the log directory, the enabled
categories, the record count, records by category and by event, the model usage
(`UsageStats`: events, summed usage fields), the performance events (`EventStats`: count,
statuses, `Durations` in ms), the tool calls (`ToolStats`) and the errors (`ErrorStats`:
by event, class, provider and code), and what was skipped. Every count mapping is
ordered by key and holds at most MAX_KEYS entries (`Keys`). Error
messages are never part of it. The RPC face shapes it into the `logging/stats` result
(`kward.rpc.wire.telemetry.stats`, keys as the original kward's). Pure over the files; any thread.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypeGuard, TypeVar

from kward.fsutil import open_own, read_fd
from kward.limits import LOG_ROTATION_BYTES
from kward.telemetry.ranges import Range
from kward.timefmt import iso_ms, normalize_iso

Record = dict[str, object]  # a telemetry record as a log file holds it (JSON values)
_V = TypeVar("_V")
_K = TypeVar("_K")


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


@dataclass(slots=True)
class Skipped:
    """What a pass over the files could not use: `lines` (not JSON of a usable record:
    invalid UTF-8, longer than MAX_LINE_BYTES, nested too deep, a number beyond
    MAX_NUMBER, Infinity or NaN, not an object, a category or timestamp that is not a
    usable string), `files` (not a regular file of this user, a symlink, or larger than
    MAX_FILE_BYTES: never read) and `keys` (counts not kept because their map already
    held MAX_KEYS entries, all maps together MAX_ALL_KEYS, or because the key is longer
    than MAX_KEY_CHARS; the totals beside the maps still count them)."""

    lines: int = 0
    files: int = 0
    keys: int = 0


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
    skipped: Skipped


_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-(\d+))?\.jsonl$")
#: kward's own form (`kward.timefmt.iso_ms`), compared as text once it matches; only a
#: day past its month's end (February 30) passes it without being a time.
_OURS = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z")


def normalized_timestamp(value: object) -> str | None:
    """A record's timestamp in kward's own form (comparable as text); None if unusable."""
    if not isinstance(value, str):
        return None
    if _OURS.fullmatch(value):
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


#: A day file larger than this (twice the rotation size: a file rotates once it reaches
#: it, so only another writer makes one this big) is skipped, not read.
MAX_FILE_BYTES = 2 * LOG_ROTATION_BYTES
MAX_LINE_BYTES = 1 << 20
#: A float beyond this magnitude makes its line unusable, an integer beyond it is not
#: counted as a number (sums stay finite).
MAX_NUMBER = 2 ** 63
MAX_KEYS = 10_000
MAX_ALL_KEYS = 100_000
MAX_KEY_CHARS = 256


def _float(text: str) -> float:
    value = float(text)
    if not abs(value) <= MAX_NUMBER:  # 1e999 (inf)
        raise ValueError("number too large")
    return value


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not a number")


# (integers: more than 4300 digits are a ValueError of int() itself; a smaller one beyond
# MAX_NUMBER is not a number to `is_number`. A hook per integer would cost a third more.)
_DECODER = json.JSONDecoder(parse_float=_float, parse_constant=_constant)


def _lines(fd: int, skipped: Skipped) -> list[str]:
    """The lines of the open day file `fd` (closed here), at most MAX_FILE_BYTES in all
    (what it grew beyond that meanwhile is cut off); a line longer than MAX_LINE_BYTES or
    not UTF-8 is counted in `skipped` and left out."""
    try:
        data = read_fd(fd, MAX_FILE_BYTES)
    finally:
        os.close(fd)
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:  # (rare: then line by line)
        lines = []
        for raw in data.split(b"\n"):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                skipped.lines += 1
    if max(map(len, lines), default=0) <= MAX_LINE_BYTES:  # (characters: at most as many as bytes)
        return lines
    kept = [line for line in lines if len(line.encode("utf-8")) <= MAX_LINE_BYTES]
    skipped.lines += len(lines) - len(kept)
    return kept


def read(directory: Path, start: datetime, end: datetime, categories: Iterable[str],
         skipped: Skipped | None = None) -> Iterator[Record]:
    """The records (see the module docstring); what cannot be used is counted in `skipped`."""
    low, high = iso_ms(start), iso_ms(end)
    wanted = frozenset(categories)
    skipped = skipped if skipped is not None else Skipped()
    decode = _DECODER.raw_decode  # on text lines: about twice as fast as json.loads of bytes
    for path in log_files(directory, start, end):
        try:
            fd = open_own(path)
        except FileNotFoundError:
            continue
        except OSError:
            skipped.files += 1
            continue
        try:
            too_big = os.fstat(fd).st_size > MAX_FILE_BYTES
        except OSError:
            too_big = True
        if too_big:
            os.close(fd)
            skipped.files += 1
            continue
        for line in _lines(fd, skipped):
            try:
                record = decode(line)[0]  # (what follows the object on its line is not looked at)
            except ValueError:
                if not line or line.isspace():
                    continue
                try:
                    record = _DECODER.decode(line)  # leading blanks
                except (ValueError, RecursionError):
                    skipped.lines += 1
                    continue
            except RecursionError:
                skipped.lines += 1
                continue
            category = record.get("category") if isinstance(record, dict) else None
            if not isinstance(category, str):
                skipped.lines += 1
                continue
            if category not in wanted:
                continue
            stamp = normalized_timestamp(record.get("timestamp"))
            if stamp is None:
                skipped.lines += 1
                continue
            if low <= stamp <= high:
                yield record


def is_number(value: object) -> TypeGuard[float]:
    """A JSON number within ±MAX_NUMBER (booleans are not numbers here; neither is NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -MAX_NUMBER <= value <= MAX_NUMBER


def _counts(counter: dict[str, _V]) -> dict[str, _V]:
    return {k: counter[k] for k in sorted(counter)}


def _key(value: object) -> str | None:
    """A value counted under `by...`: a non-empty scalar, as text."""
    if value is None or value == "" or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else str(value)


class Keys:
    """Adds counts to the maps of one answer, keeping each at most MAX_KEYS entries and
    all of them together MAX_ALL_KEYS; what is not kept is counted in `skipped.keys`."""

    __slots__ = ("skipped", "entries")

    def __init__(self, skipped: Skipped):
        self.skipped = skipped
        self.entries = 0

    def room(self, counter: Mapping[_K, object], key: _K, chars: int) -> bool:
        """Whether `key` (`chars` characters long) is in `counter` or may be added to it
        (counted when not)."""
        if key in counter:
            return True
        if len(counter) >= MAX_KEYS or self.entries >= MAX_ALL_KEYS or chars > MAX_KEY_CHARS:
            self.skipped.keys += 1
            return False
        self.entries += 1
        return True

    def add(self, counter: dict[str, int], key: str) -> None:
        if self.room(counter, key, len(key)):
            counter[key] = counter.get(key, 0) + 1


@dataclass(slots=True)
class _Tally:
    """The `performance` records of one event while they are counted."""

    count: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    timed: int = 0  # records with a duration
    total: float = 0.0  # their durations summed
    shortest: float | None = None
    longest: float | None = None

    def add(self, status: str | None, duration: object, keys: Keys) -> None:
        self.count += 1
        if status is not None:
            keys.add(self.statuses, status)
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
    skipped = Skipped()
    keys = Keys(skipped)
    by_category: dict[str, int] = {}
    by_event: dict[str, int] = {}
    totals: dict[str, float] = {}
    perf: dict[str, _Tally] = {}
    names: dict[str, int] = {}
    statuses: dict[str, int] = {}
    error_counts: dict[str, dict[str, int]] = {"event": {}, "error_class": {}, "provider": {}, "error_code": {}}
    for r in read(directory, rng.start, rng.end, categories, skipped):
        count += 1
        category = str(r["category"])  # (read yields the wanted categories only: strings)
        keys.add(by_category, category)
        event = r.get("event")
        if not isinstance(event, str):
            event = _key(event) or ""
        if event:
            keys.add(by_event, event)
        if category == "performance":
            if not event:
                continue
            tally = perf.get(event)
            if tally is None:
                if not keys.room(perf, event, len(event)):
                    continue
                tally = perf[event] = _Tally()
            tally.add(_key(r.get("status")), r.get("duration_ms"), keys)
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
                    keys.add(counter, key)
        elif category == "tokens":
            if event != "model_usage":
                continue
            usage_events += 1
            usage = r.get("usage")
            if isinstance(usage, dict):
                for name, value in usage.items():
                    if is_number(value) and keys.room(totals, name, len(name)):
                        totals[name] = totals.get(name, 0) + value
        elif category == "errors":
            errors += 1
            for field_name, counter in error_counts.items():
                key = event or None if field_name == "event" else _key(r.get(field_name))
                if key is not None:
                    keys.add(counter, key)
    return Stats(
        rng, directory, tuple(categories), count, _counts(by_category), _counts(by_event),
        UsageStats(usage_events, _counts(totals)),
        {e: tally.stats() for e, tally in sorted(perf.items())},
        ToolStats(tool_calls, result_bytes, _counts(names), _counts(statuses)),
        ErrorStats(errors, _counts(error_counts["event"]), _counts(error_counts["error_class"]),
                   _counts(error_counts["provider"]), _counts(error_counts["error_code"])),
        skipped,
    )
