"""runtime/state and runtime/stats: the runtime's SessionState and SessionStats, shaped
by `kward.rpc.wire.runtime`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call
from kward.rpc.wire import runtime as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.runtime import RuntimeStateResult, RuntimeStatsResult


def state(call: Call) -> RuntimeStateResult:
    return wire.session_state(call.runtime.state(call.params.text("sessionId", required=True)))


def stats(call: Call) -> RuntimeStatsResult:
    return wire.session_stats(call.runtime.stats(call.params.text("sessionId", required=True)))
