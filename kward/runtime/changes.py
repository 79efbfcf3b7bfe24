"""What the runtime tells a face about changes to its sessions: the notices of a change
this process stored on a session file (a new name, more usage), and what a session's tool
calls changed in its workspace (`sessions/diff`), whose trackers go with their files.

Functions over the parts the runtime hands them (`kward.runtime.facade.Runtime` keeps
one-line methods over them); nothing here holds state. `session_notices` runs on the
appending thread, under the session's lock (see `kward.sessions.manager.SessionManager`),
and only builds values; `session_diff` reads files (slow: a worker thread);
`forget_changes` takes the trackers' own lock. Any thread otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kward.runtime.notices import SessionEvent, SessionUpdate

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.engine import AgentEngine
    from kward.model import ChangeSummary
    from kward.sessions.handle import SessionHandle
    from kward.sessions.session import Changed


def session_notices(handles: list[SessionHandle], change: Changed, now: str) -> list[SessionEvent]:
    """This process renamed a session or stored usage on it (a model call, a compaction):
    a sessionUpdated and/or usageUpdated notice for every open id on its file (`handles`),
    stamped `now`."""
    notices = []
    for handle in handles:
        if change.renamed:
            notices.append(SessionEvent(handle.id, "sessionUpdated", SessionUpdate(change.name, handle.path), now))
        if change.usage_changed:
            notices.append(SessionEvent(handle.id, "usageUpdated", change.spent, now))
    return notices


def session_diff(engine: AgentEngine | None, handle: SessionHandle, scrub: Callable[[str], str]) -> ChangeSummary:
    """What the session's tool calls changed since this process opened its file: each
    file's net change against its content before the session's first change of it, read
    from the workspace now (`kward.agent.diffs`; nothing before the first model turn, or
    while the engine, `engine` None, was never built). `scrub` is applied to the diff text."""
    from kward.agent.diffs import summarize
    from kward.model import ChangeSummary

    tracker = engine.changes.get(handle.shared) if engine is not None else None
    if tracker is None:
        return ChangeSummary()
    baselines = tracker.session_baselines()
    return summarize(handle.workspace_root, baselines.paths, untracked=baselines.untracked,
                     complete=baselines.complete, scrub=scrub)


def forget_changes(engine: AgentEngine | None, handles: list[SessionHandle]) -> None:
    """Drop the change trackers of the files these ids closed (none when the engine was
    never built)."""
    if engine is not None:
        for handle in handles:
            if handle.shared.closed:
                engine.changes.drop(handle.shared)
