"""logging/stats and logging/tokenCsv: thin adapters onto `runtime.telemetry`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call
from kward.rpc.wire import telemetry as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.telemetry import LoggingStatsResult, LoggingTokenCsvResult


def stats(call: Call) -> LoggingStatsResult:
    return wire.stats(call.runtime.telemetry.stats(call.params.text("range", max_len=1000)))


def token_csv(call: Call) -> LoggingTokenCsvResult:
    p = call.params
    return wire.token_csv(call.runtime.telemetry.token_csv(p.text("range", max_len=1000), p.text("bucket", max_len=100)))
