"""logging/stats and logging/tokenCsv: thin adapters onto `runtime.telemetry`."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call
from kward.rpc.wire import telemetry as wire


def stats(call: Call) -> dict[str, Any]:
    return wire.stats(call.runtime.telemetry.stats(call.params.text("range", max_len=1000)))


def token_csv(call: Call) -> dict[str, Any]:
    p = call.params
    return wire.token_csv(call.runtime.telemetry.token_csv(p.text("range", max_len=1000), p.text("bucket", max_len=100)))
