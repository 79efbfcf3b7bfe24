"""What of the protocol is experimental: sent to, and served for, only a client that passed
``initialize {capabilities: {experimentalApi: true}}`` (docs/protocol.md "Experimental").

The stabilities are declared with the wire shapes (`kward.rpc.shapes`, ``EXPERIMENTAL``);
this is their index for the running server, kept here so that answering a message never
loads the shapes (tests/packaging/test_schema.py checks that the two agree).

- `METHODS`: refused with `ExperimentalApiRequired` (-32601, reason
  ``experimental_api_required``) for any other client, before anything runs;
- `NOTIFICATIONS` and `TURN_EVENTS`: never sent to another client (as if it opted out:
  `kward.rpc.connection.Connection.wants`);
- `EVENT_FIELDS`: per turn event type, the paths inside its payload left out for another
  client (`strip`), in `turn/event` and in `turns/events` alike.

Pure data and functions, any thread.
"""

from __future__ import annotations

from typing import Any

from kward.errors import MethodNotFound

METHODS: frozenset[str] = frozenset({"sessions/diff"})
NOTIFICATIONS: frozenset[str] = frozenset({"hook/started", "hook/completed"})
TURN_EVENTS: frozenset[str] = frozenset()
EVENT_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {"toolResult": (("result", "changedFilesComplete"),)}
REASON = "experimental_api_required"


class ExperimentalApiRequired(MethodNotFound):
    reason = REASON


def refusal(method: str) -> ExperimentalApiRequired:
    return ExperimentalApiRequired(
        f"{method} is experimental: pass capabilities.experimentalApi: true in initialize to use it",
        data={"method": method})


def strip(type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` of a turn event of `type_` without its experimental fields (a copy where
    one was there; the payload itself when none was)."""
    paths = EVENT_FIELDS.get(type_)
    if not paths:
        return payload
    for path in paths:
        payload = _without(payload, path)
    return payload


def _without(value: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    head, rest = path[0], path[1:]
    if head not in value:
        return value
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    inner = value[head]
    if not isinstance(inner, dict):
        return value
    changed = _without(inner, rest)
    return value if changed is inner else {**value, head: changed}


def describe() -> dict[str, Any]:
    """What the `rpc.experimentalApi` capability lists."""
    return {"methods": sorted(METHODS), "notifications": sorted(NOTIFICATIONS), "events": sorted(TURN_EVENTS),
            "fields": sorted(f"turn/event:{type_} payload.{'.'.join(path)}"
                             for type_, paths in EVENT_FIELDS.items() for path in paths)}
