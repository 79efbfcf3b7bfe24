"""turns/start, turns/cancel, turns/status, turns/events."""

from __future__ import annotations

from typing import Any

from kward.agent.attachments import normalize_attachments
from kward.agent.turns import BEHAVIORS
from kward.errors import InvalidParams, Overloaded
from kward.rpc.registry import Call


def start(call: Call) -> dict[str, Any]:
    p, app = call.params, call.app
    session = app.sessions.get(p.str("sessionId", required=True))
    text = p.str("input", required=True)
    limit = app.settings.max_input_chars
    if len(text) > limit:
        raise InvalidParams(f"Input is too large: {len(text)} characters (the limit is {limit})",
                            reason="input_too_large",
                            data={"input_error_code": "input_too_large", "max_chars": limit, "actual_chars": len(text)})
    behavior = p.choice("streamingBehavior", BEHAVIORS)
    attachments = normalize_attachments(p.list("attachments"))
    if app.is_overloaded():
        raise Overloaded("Server overloaded; retry later")
    headers = {"traceparent": call.trace["traceparent"]} if call.trace and "traceparent" in call.trace else {}
    turn = app.turns.start(session, text, attachments, behavior, headers)
    return turn.payload()


def cancel(call: Call) -> dict[str, Any]:
    return call.app.turns.cancel(call.params.str("turnId", required=True)).payload()


def status(call: Call) -> dict[str, Any]:
    return call.app.turns.get(call.params.str("turnId", required=True)).payload()


def events(call: Call) -> dict[str, Any]:
    p = call.params
    turn = call.app.turns.get(p.str("turnId", required=True))
    after = p.int("afterSequence", 0, min=0)
    return {"turn": turn.payload(), "events": turn.events.after(after)}
