"""The envelopes of the typed notifications: a `turn/event` (also a `turns/events` item)
and a `session/event`, whose `payload` is the shape of its `type` (the registry's
`TURN_EVENTS` / `SESSION_EVENTS`); the schema ties each type to its payload
(`kward.rpc.schema`: `TurnEvent`, `SessionEvent`)."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from kward.rpc.shapes.base import Doc, Range


class TurnEvent(TypedDict):
    """One event of a turn: numbered from 1 without gaps within the turn."""

    sequence: Annotated[int, Range(minimum=1)]
    timestamp: Annotated[str, Doc("ISO 8601, UTC, with milliseconds (`...Z`)")]
    sessionId: str
    turnId: str
    type: str
    payload: dict[str, Any]


class SessionEvent(TypedDict):
    """Something that happened to a session outside a turn's events."""

    timestamp: str
    sessionId: str
    type: str
    payload: dict[str, Any]
