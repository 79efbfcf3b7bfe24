"""sessions/*: thin adapters onto kward.sessions.SessionManager."""

from __future__ import annotations

import time
from typing import Any

from kward.rpc.registry import Call

STOP_WAIT = 5.0  # seconds a close/delete waits for the canceled turns to end


def _stop_turns(call: Call, handles: list[Any]) -> None:
    """Cancel the queued and running turns started through these ids and wait for them to
    end (a canceled turn still records its last tool result and turnFinished) before the
    ids are closed or the session deleted."""
    if call.app.has_service("turns"):  # no turn was ever started: nothing to stop
        for handle in handles:
            call.app.turns.cancel_session(handle)
        deadline = time.monotonic() + STOP_WAIT
        for handle in handles:
            call.app.turns.wait_idle(handle, max(0.0, deadline - time.monotonic()))


def create(call: Call) -> dict[str, Any]:
    p = call.params
    name = p.str("name", max_len=10_000)
    return call.app.sessions.create(p.str("workspaceRoot"), name or None).opened


def resume(call: Call) -> dict[str, Any]:
    p = call.params
    return call.app.sessions.resume(p.str("path", required=True, non_empty=True), p.str("workspaceRoot")).opened


def list_(call: Call) -> dict[str, Any]:
    p = call.params
    limit = p.int("limit", 20, min=1, max=100_000)
    return {"sessions": call.app.sessions.list(p.str("workspaceRoot"), limit)}


def rename(call: Call) -> dict[str, Any]:
    p = call.params
    session_id = p.str("sessionId", required=True)
    name = p.str("name", max_len=10_000)
    return call.app.sessions.rename(session_id, name if name and name.strip() else None).payload()


def clone(call: Call) -> dict[str, Any]:
    return call.app.sessions.clone(call.params.str("sessionId", required=True)).opened


def fork_messages(call: Call) -> dict[str, Any]:
    return {"messages": call.app.sessions.fork_messages(call.params.str("sessionId", required=True))}


def fork(call: Call) -> dict[str, Any]:
    p = call.params
    session, text = call.app.sessions.fork(p.str("sessionId", required=True), p.str("entryId", required=True))
    return {"session": session.opened, "text": text, "cancelled": False}


def export(call: Call) -> dict[str, Any]:
    p = call.params
    return call.app.sessions.export(p.str("sessionId", required=True), p.str("path"), p.str("format"))


def delete(call: Call) -> dict[str, Any]:
    p = call.params
    session_id = p.str("sessionId", required=True)
    force = p.bool("force", False)
    sessions = call.app.sessions
    sessions.check_deletable(session_id, force=force)  # refused before any turn is stopped
    _stop_turns(call, sessions.handles_on(session_id))
    return sessions.delete(session_id, force=force)


def close(call: Call) -> dict[str, Any]:
    session_id = call.params.str("sessionId", required=True)
    _stop_turns(call, [call.app.sessions.get(session_id)])
    return call.app.sessions.close(session_id)


def transcript(call: Call) -> dict[str, Any]:
    return call.app.sessions.transcript(call.params.str("sessionId", required=True))
