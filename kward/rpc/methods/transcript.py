"""sessions/transcript: a thin adapter onto the runtime's transcript (its own module: the
normalized messages need the conversation model, which listing sessions does not)."""

from __future__ import annotations

from typing import Any

from kward.rpc.method_table import Call
from kward.rpc.wire.transcript import transcript as transcript_payload


def transcript(call: Call) -> dict[str, Any]:
    return transcript_payload(call.runtime.transcript(call.params.text("sessionId", required=True)))
