"""The token usage CSV (`logging/tokenCsv`, `kward stats tokens`): the `tokens/model_usage`
records of a range, summed per time bucket, provider and model.

Columns (`HEADER`): bucket_start, bucket_end (UTC, `YYYY-MM-DDTHH:MM:SSZ`), provider,
model, events, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
total_tokens; rows ordered by bucket start, provider, model. The bucket defaults to the
range's unit. `TokenCsv` is the export as the runtime returns it (the text, its range and
bucket). Pure over the files; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kward.telemetry.ranges import Range, bucket_bounds
from kward.telemetry.stats import Keys, Skipped, is_number, read
from kward.timefmt import normalize_iso, parse_ms, seconds_iso

HEADER = ("bucket_start", "bucket_end", "provider", "model", "events", "input_tokens", "output_tokens",
          "cache_read_tokens", "cache_write_tokens", "total_tokens")
TOKEN_COLUMNS = HEADER[5:]


@dataclass(frozen=True, slots=True)
class TokenCsv:
    csv: str
    range: Range
    bucket: str  # one of kward.telemetry.ranges.BUCKETS
    skipped: Skipped = field(default_factory=Skipped)  # lines, files; keys: records of rows past MAX_KEYS


@dataclass(slots=True)
class _Row:
    """One line of the CSV while its records are summed."""

    start: str
    end: str
    provider: str
    model: str
    events: int = 0
    tokens: list[int] = field(default_factory=lambda: [0] * len(TOKEN_COLUMNS))

    def cells(self) -> list[object]:
        return [self.start, self.end, self.provider, self.model, self.events, *self.tokens]


def _cell(value: object) -> str:
    text = str(value)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def export(directory: Path, rng: Range, bucket: str) -> TokenCsv:
    """The CSV of the range with what was skipped: at most MAX_KEYS rows (the records of
    further rows are counted in `skipped.keys`)."""
    rows: dict[tuple[datetime, str, str], _Row] = {}
    skipped = Skipped()
    keys = Keys(skipped)
    for record in read(directory, rng.start, rng.end, ("tokens",), skipped):
        usage = record.get("usage")
        stamp = record["timestamp"]
        if record.get("event") != "model_usage" or not isinstance(usage, dict) or not isinstance(stamp, str):
            continue
        try:
            when = parse_ms(stamp if len(stamp) == 24 else _normalized(stamp))
        except ValueError:  # (a day past its month's end: of kward's shape, not a time)
            skipped.lines += 1
            continue
        start, end = bucket_bounds(when, bucket)
        provider, model = str(record.get("provider") or ""), str(record.get("model") or "")
        row = rows.get((start, provider, model))
        if row is None:
            if not keys.room(rows, (start, provider, model), max(len(provider), len(model))):
                continue
            row = rows[(start, provider, model)] = _Row(seconds_iso(start), seconds_iso(end), provider, model)
        row.events += 1
        for i, column in enumerate(TOKEN_COLUMNS):
            value = usage.get(column)
            if is_number(value):
                row.tokens[i] += int(value)
    lines = [",".join(HEADER)]
    lines += [",".join(_cell(v) for v in rows[key].cells()) for key in sorted(rows)]
    return TokenCsv("\n".join(lines) + "\n", rng, bucket, skipped)


def _normalized(stamp: str) -> str:
    value = normalize_iso(stamp)
    if value is None:
        raise ValueError(stamp)
    return value
