"""runtime/state and runtime/stats: the runtime's SessionState and SessionStats, shaped
by `kward.rpc.wire.runtime`."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call
from kward.rpc.wire import runtime as wire


def state(call: Call) -> dict[str, Any]:
    return wire.session_state(call.runtime.state(call.params.text("sessionId", required=True)))


def stats(call: Call) -> dict[str, Any]:
    return wire.session_stats(call.runtime.stats(call.params.text("sessionId", required=True)))
