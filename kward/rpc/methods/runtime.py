"""runtime/state and runtime/stats: the runtime's SessionState and SessionStats, shaped
by `kward.rpc.wire_sessions`."""

from __future__ import annotations

from typing import Any

from kward.rpc import wire_sessions
from kward.rpc.registry import Call


def state(call: Call) -> dict[str, Any]:
    return wire_sessions.session_state(call.runtime.state(call.params.text("sessionId", required=True)))


def stats(call: Call) -> dict[str, Any]:
    return wire_sessions.session_stats(call.runtime.stats(call.params.text("sessionId", required=True)))
