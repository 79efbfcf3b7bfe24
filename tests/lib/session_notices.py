"""The notifications of issue 23's session and runtime updates as a client receives them:
the `session/event` updates of one type (`sessionUpdated`, `usageUpdated`), the
`runtime/capabilitiesChanged` capabilities, and the order frames arrived in (to check that
a notification came before a response, or that none came before it).

Reads what the harness client (`RpcClient`) recorded; waiting is done by the callers, on
frames with timeouts, never on sleeps.
"""

from __future__ import annotations

import json
from typing import Any

TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite", "reasoning", "total")


def updates(client: Any, type_: str, session_id: str | None = None) -> list[dict[str, Any]]:
    """The params of every `session/event` of `type_` (of one RPC session id), in arrival order."""
    return [n["params"] for n in list(client.notifications)
            if n["method"] == "session/event" and n["params"]["type"] == type_
            and (session_id is None or n["params"]["sessionId"] == session_id)]


def usages(client: Any, session_id: str | None = None) -> list[dict[str, Any]]:
    """The payloads of the `usageUpdated` events (of one session), in arrival order."""
    return [u["payload"] for u in updates(client, "usageUpdated", session_id)]


def assert_never_down(seen: list[dict[str, Any]]) -> None:
    """Every token count and the cost of each usage is at least the one before it."""
    for earlier, later in zip(seen, seen[1:]):
        assert set(later["tokens"]) == set(TOKEN_KEYS), later
        assert all(later["tokens"][k] >= earlier["tokens"][k] for k in TOKEN_KEYS), (earlier, later)
        assert (later["cost"] or 0) >= (earlier["cost"] or 0), (earlier, later)


def capabilities_changed(client: Any) -> list[dict[str, Any]]:
    """The `capabilities` of every `runtime/capabilitiesChanged`, in arrival order."""
    return [n["params"]["capabilities"] for n in list(client.notifications)
            if n["method"] == "runtime/capabilitiesChanged"]


def arrival(client: Any) -> list[tuple[str, Any]]:
    """Every frame received so far, in order: ``("response", id)`` or
    ``("notification", method)``."""
    out: list[tuple[str, Any]] = []
    for body in list(client.bodies):
        msg = json.loads(body)
        if "method" in msg and "id" not in msg:
            out.append(("notification", msg["method"]))
        elif "id" in msg:
            out.append(("response", msg["id"]))
    return out


def before_response(client: Any, request_id: Any, method: str) -> int:
    """How many `method` notifications arrived between the previous response and the
    response to `request_id` (what the request sent before its answer)."""
    frames = arrival(client)
    end = frames.index(("response", request_id))
    start = max((i for i, (kind, _) in enumerate(frames[:end]) if kind == "response"), default=-1)
    return sum(1 for kind, name in frames[start + 1:end] if (kind, name) == ("notification", method))
