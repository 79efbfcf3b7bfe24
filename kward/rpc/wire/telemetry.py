"""The `logging/stats` and `logging/tokenCsv` results, with their ranges in ISO times.
Keys as the original kward's. Pure functions, any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.timefmt import seconds_iso

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.telemetry import LoggingRange, LoggingSkipped, LoggingStatsResult, LoggingTokenCsvResult
    from kward.telemetry.ranges import Range
    from kward.telemetry.stats import Skipped, Stats
    from kward.telemetry.tokens import TokenCsv


def time_range(rng: Range) -> LoggingRange:
    """A `kward.telemetry.ranges.Range`: ``{input, count, unit, startAt, endAt}`` (UTC, whole seconds)."""
    return {"input": rng.input, "count": rng.count, "unit": rng.unit, "startAt": seconds_iso(rng.start),
            "endAt": seconds_iso(rng.end)}


def stats(s: Stats) -> LoggingStatsResult:
    """The `logging/stats` result of a `kward.telemetry.stats.Stats` (keys as the original kward's)."""
    usage, tools, errors = s.usage, s.tools, s.errors
    return {
        "range": time_range(s.range), "logDir": str(s.log_dir), "enabledCategories": list(s.enabled_categories),
        "recordCount": s.record_count, "recordsByCategory": dict(s.records_by_category),
        "recordsByEvent": dict(s.records_by_event),
        "usageStats": {"modelUsageEvents": usage.model_usage_events, "totals": dict(usage.totals)},
        "performance": {"events": {event: {"count": e.count, "statuses": dict(e.statuses),
                                           "durationMs": {"min": e.duration_ms.min, "avg": e.duration_ms.avg,
                                                          "max": e.duration_ms.max}}
                                   for event, e in s.performance.items()}},
        "tools": {"calls": tools.calls, "resultBytes": tools.result_bytes, "byName": dict(tools.by_name),
                  "byStatus": dict(tools.by_status)},
        "errors": {"count": errors.count, "byEvent": dict(errors.by_event), "byClass": dict(errors.by_class),
                   "byProvider": dict(errors.by_provider), "byCode": dict(errors.by_code)},
        **skipped(s.skipped),
    }


def skipped(s: Skipped) -> LoggingSkipped:
    """What a pass over the log files left out: ``{skippedLines, skippedFiles, droppedKeys}``."""
    return {"skippedLines": s.lines, "skippedFiles": s.files, "droppedKeys": s.keys}


def token_csv(export: TokenCsv) -> LoggingTokenCsvResult:
    """The `logging/tokenCsv` result of a `kward.telemetry.tokens.TokenCsv`: ``{csv, range, bucket}``
    and what was skipped."""
    return {"csv": export.csv, "range": time_range(export.range), "bucket": export.bucket, **skipped(export.skipped)}
