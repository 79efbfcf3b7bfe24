"""turns/start, turns/cancel, turns/status, turns/events."""

from __future__ import annotations

from typing import Any

from kward.agent.turns import BEHAVIORS
from kward.rpc.registry import Call


def start(call: Call) -> dict[str, Any]:
    p, rt = call.params, call.runtime
    session_id = p.str("sessionId", required=True)
    rt.session(session_id)  # an unknown session is reported before the other params
    text = rt.check_input(p.str("input", required=True))
    headers = {"traceparent": call.trace["traceparent"]} if call.trace and "traceparent" in call.trace else {}
    turn = rt.start_turn(session_id, text, behavior=p.choice("streamingBehavior", BEHAVIORS),
                         attachments=p.list("attachments"), headers=headers)
    return turn.payload()


def cancel(call: Call) -> dict[str, Any]:
    return call.runtime.cancel_turn(call.params.str("turnId", required=True)).payload()


def status(call: Call) -> dict[str, Any]:
    return call.runtime.turn(call.params.str("turnId", required=True)).payload()


def events(call: Call) -> dict[str, Any]:
    p = call.params
    turn = call.runtime.turn(p.str("turnId", required=True))
    after = p.int("afterSequence", 0, min=0)
    return {"turn": turn.payload(), "events": turn.events.after(after)}
