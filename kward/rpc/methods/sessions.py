"""sessions/*: thin adapters onto the runtime's session operations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kward.rpc.method_table import Call
from kward.rpc.wire import sessions as wire

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.sessions import (
        Session,
        SessionsCloseResult,
        SessionsCompactResult,
        SessionsDeleteResult,
        SessionsDiffResult,
        SessionsExportResult,
        SessionsForkMessagesResult,
        SessionsForkResult,
        SessionsListResult,
    )
    from kward.rpc.shapes.turns import AttachedTurn, SessionsAttachResult, SessionsDetachResult
    from kward.runtime.notices import SessionEvent


def create(call: Call) -> Session:
    p = call.params
    return wire.session(call.runtime.create_session(p.text("workspaceRoot"), p.text("name", max_len=10_000),
                                                    memory=p.flag("memory", True)).opened)


def resume(call: Call) -> Session:
    p = call.params
    return wire.session(call.runtime.resume_session(p.text("path", required=True, non_empty=True),
                                                    p.text("workspaceRoot")).opened)


def list_(call: Call) -> SessionsListResult:
    p = call.params
    limit = p.integer("limit", 20, min=1, max=100_000)
    return {"sessions": [wire.listed_session(s) for s in call.runtime.list_sessions(p.text("workspaceRoot"), limit)]}


def rename(call: Call) -> Session:
    p = call.params
    session_id = p.text("sessionId", required=True)
    return wire.session(call.runtime.rename_session(session_id, p.text("name", max_len=10_000)).info())


def clone(call: Call) -> Session:
    return wire.session(call.runtime.clone_session(call.params.text("sessionId", required=True)).opened)


def fork_messages(call: Call) -> SessionsForkMessagesResult:
    return wire.fork_messages(call.runtime.fork_messages(call.params.text("sessionId", required=True)))


def fork(call: Call) -> SessionsForkResult:
    p = call.params
    session, text = call.runtime.fork_session(p.text("sessionId", required=True), p.text("entryId", required=True))
    return {"session": wire.session(session.opened), "text": text, "cancelled": False}


def export(call: Call) -> SessionsExportResult:
    p = call.params
    return wire.exported(call.runtime.export_session(p.text("sessionId", required=True), p.text("path"),
                                                              p.text("format")))


def delete(call: Call) -> SessionsDeleteResult:
    p = call.params
    return wire.deleted(call.runtime.delete_session(p.text("sessionId", required=True),
                                                             force=p.flag("force", False)))


def close(call: Call) -> SessionsCloseResult:
    call.runtime.close_session(call.params.text("sessionId", required=True))
    return wire.closed()


def attach(call: Call) -> SessionsAttachResult:
    """Hear a session another connection opened (a listening server; on stdio this one
    hears every session already), with the turns turns/events can still replay. Attached
    before the turns are read, so an event is either in a replay or sent live."""
    from kward.rpc.wire.events import turn

    session_id = call.params.text("sessionId", required=True)
    handle = call.runtime.session(session_id)  # (an unknown id: session_not_found)
    if call.conn.hub is not None:
        call.conn.hub.attach(call.conn, session_id)
    turns: list[AttachedTurn] = [{**turn(t), "lastSequence": t.events.last_sequence}
                                 for t in call.runtime.session_turns(session_id)]
    return {"session": wire.session(handle.info()), "turns": turns}


def detach(call: Call) -> SessionsDetachResult:
    session_id = call.params.text("sessionId", required=True)
    call.runtime.session(session_id)
    hub = call.conn.hub
    return {"detached": hub is not None and hub.detach(call.conn, session_id)}


def diff(call: Call) -> SessionsDiffResult:
    return wire.changes(call.runtime.session_diff(call.params.text("sessionId", required=True)))


def compact(call: Call) -> SessionsCompactResult:
    """Its compactionEnd is sent after the answer (a client may close the reply on it)."""
    p = call.params
    session_id = p.text("sessionId", required=True)
    call.runtime.session(session_id)  # an unknown session is reported before the other params
    focus = p.text("customInstructions", max_len=100_000)
    held: list[SessionEvent] = []

    report = call.conn.hub.report if call.conn.hub is not None else call.conn.report  # (every attached client)

    def sink(event: SessionEvent) -> None:
        if event.type == "compactionEnd":
            held.append(event)
        else:
            report(event)

    def release() -> None:
        for event in held:
            report(event)

    call.after_answer(release)
    return wire.compaction_result(call.runtime.compact(session_id, focus, sink=sink))
