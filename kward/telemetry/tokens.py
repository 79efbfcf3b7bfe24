"""The token usage CSV (`logging/tokenCsv`, `kward stats tokens`): the `tokens/model_usage`
records of a range, summed per time bucket, provider and model.

Columns (`HEADER`): bucket_start, bucket_end (UTC, `YYYY-MM-DDTHH:MM:SSZ`), provider,
model, events, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
total_tokens; rows ordered by bucket start, provider, model. The bucket defaults to the
range's unit. `TokenCsv` is the export as the runtime returns it (the text, its range and
bucket). Pure over the files; any thread.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from kward.telemetry.ranges import Range, bucket_bounds
from kward.telemetry.stats import is_number, read
from kward.timefmt import normalize_iso, parse_ms, seconds_iso

HEADER = ("bucket_start", "bucket_end", "provider", "model", "events", "input_tokens", "output_tokens",
          "cache_read_tokens", "cache_write_tokens", "total_tokens")
TOKEN_COLUMNS = HEADER[5:]


class TokenCsv(NamedTuple):
    csv: str
    range: Range
    bucket: str  # one of kward.telemetry.ranges.BUCKETS


def _cell(value: Any) -> str:
    text = str(value)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _when(stamp: str) -> datetime:
    return parse_ms(stamp)


def token_csv(directory: Path, rng: Range, bucket: str) -> str:
    rows: dict[tuple[datetime, str, str], list[Any]] = {}
    for record in read(directory, rng.start, rng.end, ("tokens",)):
        usage = record.get("usage")
        if record.get("event") != "model_usage" or not isinstance(usage, dict):
            continue
        stamp = record["timestamp"]
        try:
            when = _when(stamp if len(stamp) == 24 else _normalized(stamp))
        except (TypeError, ValueError):
            continue
        start, end = bucket_bounds(when, bucket)
        provider, model = str(record.get("provider") or ""), str(record.get("model") or "")
        row = rows.get((start, provider, model))
        if row is None:
            row = rows[(start, provider, model)] = [seconds_iso(start), seconds_iso(end), provider, model, 0,
                                                    *([0] * len(TOKEN_COLUMNS))]
        row[4] += 1
        for i, column in enumerate(TOKEN_COLUMNS, 5):
            value = usage.get(column)
            if is_number(value):
                row[i] += int(value)
    lines = [",".join(HEADER)]
    lines += [",".join(_cell(v) for v in rows[key]) for key in sorted(rows)]
    return "\n".join(lines) + "\n"


def _normalized(stamp: Any) -> str:
    value = normalize_iso(stamp)
    if value is None:
        raise ValueError(stamp)
    return value
