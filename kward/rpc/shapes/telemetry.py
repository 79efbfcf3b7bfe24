"""logging/stats and logging/tokenCsv (docs/protocol.md "Logging methods")."""

from __future__ import annotations

from typing import Annotated, TypedDict

from kward.rpc.shapes.base import AN_ADDITION, Doc, Entry, Length


class LoggingStatsParams(TypedDict, total=False):
    range: Annotated[str | None, Length(maximum=1000), Doc("N unit (minutes ... years); default 1 week")]


class LoggingRange(TypedDict):
    """A range of the telemetry records (UTC, whole seconds)."""

    input: str
    count: int
    unit: Annotated[str, Doc("minute, hour, day, week, month or year")]
    startAt: str
    endAt: str


class LoggingSkipped(TypedDict):
    """What a pass over the log files left out."""

    skippedLines: Annotated[int, AN_ADDITION]
    skippedFiles: Annotated[int, AN_ADDITION]
    droppedKeys: Annotated[int, AN_ADDITION]


class LoggingUsageStats(TypedDict):
    modelUsageEvents: int
    totals: Annotated[dict[str, float], Doc("the sums of every number in the usage of model_usage records")]


class LoggingDurations(TypedDict):
    min: float | None
    avg: float | None
    max: float | None


class LoggingEventStats(TypedDict):
    count: int
    statuses: dict[str, int]
    durationMs: LoggingDurations


class LoggingPerformance(TypedDict):
    events: dict[str, LoggingEventStats]


class LoggingToolStats(TypedDict):
    calls: int
    resultBytes: float
    byName: dict[str, int]
    byStatus: dict[str, int]


class LoggingErrorStats(TypedDict):
    count: int
    byEvent: dict[str, int]
    byClass: dict[str, int]
    byProvider: dict[str, int]
    byCode: dict[str, int]


class LoggingStatsResult(LoggingSkipped):
    range: LoggingRange
    logDir: str
    enabledCategories: list[str]
    recordCount: int
    recordsByCategory: dict[str, int]
    recordsByEvent: dict[str, int]
    usageStats: LoggingUsageStats
    performance: LoggingPerformance
    tools: LoggingToolStats
    errors: LoggingErrorStats


class LoggingTokenCsvParams(TypedDict, total=False):
    range: Annotated[str | None, Length(maximum=1000), Doc("as for logging/stats")]
    bucket: Annotated[str | None, Length(maximum=100),
                      Doc("second, minute, hour, day, week, month or year; default the range's unit")]


class LoggingTokenCsvResult(LoggingSkipped):
    csv: str
    range: LoggingRange
    bucket: str


METHODS = {
    "logging/stats": Entry(LoggingStatsParams, LoggingStatsResult),
    "logging/tokenCsv": Entry(LoggingTokenCsvParams, LoggingTokenCsvResult),
}
