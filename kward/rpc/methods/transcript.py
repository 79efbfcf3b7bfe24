"""sessions/transcript: a thin adapter onto the runtime's transcript (its own module: the
normalized messages need the conversation model, which listing sessions does not)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call
from kward.rpc.wire.transcript import transcript as transcript_payload

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.transcript import SessionsTranscriptResult


def transcript(call: Call) -> SessionsTranscriptResult:
    return transcript_payload(call.runtime.transcript(call.params.text("sessionId", required=True)))
