"""turns/start, turns/cancel, turns/status, turns/events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.agent.scheduler import BEHAVIORS
from kward.rpc.method_table import Call
from kward.rpc.wire import events as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.turns import Turn, TurnsEventsResult


def start(call: Call) -> Turn:
    p, rt = call.params, call.runtime
    session_id = p.text("sessionId", required=True)
    rt.session(session_id)  # an unknown session is reported before the input's limit and the attachments
    text = rt.check_input(p.text("input", required=True))
    headers = {"traceparent": call.trace["traceparent"]} if call.trace and "traceparent" in call.trace else {}
    turn = rt.start_turn(session_id, text, behavior=p.choice("streamingBehavior", BEHAVIORS),
                         attachments=p.array("attachments"), headers=headers)
    return wire.turn(turn)


def cancel(call: Call) -> Turn:
    return wire.turn(call.runtime.cancel_turn(call.params.text("turnId", required=True)))


def status(call: Call) -> Turn:
    return wire.turn(call.runtime.turn(call.params.text("turnId", required=True)))


def events(call: Call) -> TurnsEventsResult:
    p = call.params
    turn = call.runtime.turn(p.text("turnId", required=True))
    after = p.integer("afterSequence", 0, min=0)
    replay = turn.events.replay(after)
    return {"turn": wire.turn(turn), "events": [wire.turn_event(e) for e in replay.events],
            "truncated": replay.truncated, "firstSequence": replay.first_sequence}
