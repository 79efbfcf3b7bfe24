"""Which outgoing messages carry conversation content, and the redaction each one gets.

The rule (docs/protocol.md "Redaction"): every frame except `config/read` with
`redacted: false` has the exact credential values kward holds replaced (done by the server
on the encoded frame, `kward.config.secrets`). On top of that, the key and pattern rules of
`kward.redact` apply to everything that is not conversation content:

- `FULL` (the default of every method and notification, and always for error
  responses): key and pattern rules over the whole message;
- `CONTENT`: the result or notification is conversation content and passes unchanged;
- `EVENTS`: a `turns/events` result, `{turn, events}`: the turn as `FULL`, each event as a
  `turn/event` notification;
- `EVENT`: a `turn/event`: events whose type carries conversation (`CONTENT_EVENTS`) pass
  unchanged, the others (`error`, `turnFinished`, `modelRetry`, ... and any new type)
  as `FULL`;

So a method or event that nobody marked is redacted in full: a mistake can alter text,
never leak a secret. Pure functions, any thread.
"""

from __future__ import annotations

from typing import Any

from kward.redact import redact

FULL = "full"
CONTENT = "content"
EVENT = "event"
EVENTS = "events"

#: turn/event types whose payload is conversation content (a compaction's carries its
#: summary, as its `session/event` does).
CONTENT_EVENTS = frozenset({"assistantDelta", "reasoningDelta", "assistantMessage", "toolCall", "toolUpdate", "toolResult",
                            "turnSteered", "answer", "compactionStart", "compactionEnd", "turnDiff",
                            "approvalRequested", "approvalResolved"})

#: Notification methods and their policy (others: FULL).
NOTIFICATIONS = {"turn/event": EVENT, "ui/question": CONTENT, "session/event": CONTENT,
                 # (hook output is scrubbed and redacted by the hooks themselves: kward.agent.hooks)
                 "hook/started": CONTENT, "hook/completed": CONTENT}


def _event(event: Any) -> Any:
    if isinstance(event, dict) and event.get("type") in CONTENT_EVENTS:
        return event
    return redact(event)


def _redacted(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = redact(message)
    return out


def apply(policy: str, message: dict[str, Any]) -> dict[str, Any]:
    """`message` (a whole JSON-RPC message) redacted as `policy` says; an error response is
    always redacted in full."""
    if "error" in message:
        return _redacted(message)
    if policy == CONTENT:
        return message
    if policy == EVENT and "params" in message:
        return {**message, "params": _event(message["params"])}
    if policy == EVENTS and isinstance(message.get("result"), dict):
        result = message["result"]
        shaped = {k: [_event(e) for e in v] if k == "events" and isinstance(v, list) else redact(v)
                  for k, v in result.items()}
        return {**message, "result": shaped}
    return _redacted(message)
