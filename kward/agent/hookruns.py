"""What a command hook's run reports (`kward.agent.hooks`): plain data, shaped for the wire
by `kward.rpc.wire.hooks` (`hook/started` and `hook/completed`) and shown by the terminal.

A run is reported twice through the runtime's notices: `HookNotice` with `phase`
``started`` (status ``running``, no duration or output yet) just before its command is
spawned, and ``completed`` once it is over, with its final status:

- ``completed``: exit status 0 (its stdout, if any, was added to the context);
- ``blocked``: a `beforeTool` hook exited 2, or did not finish in time (the call did not run);
- ``timedOut``: it did not finish in time (a `beforeTool` hook's timeout also blocks);
- ``failed``: any other exit status, or it could not be started (its `error` output says
  why), or the turn was cancelled while it ran.

`output` holds what it wrote (``stdout``, ``stderr``: each capped, scrubbed of
credentials) and kward's own word (``error``: why it failed or what it blocked).
"""

from __future__ import annotations

from dataclasses import dataclass

STARTED, COMPLETED = "started", "completed"
RUNNING, DONE, FAILED, BLOCKED, TIMED_OUT = "running", "completed", "failed", "blocked", "timedOut"


@dataclass(frozen=True, slots=True)
class HookOutput:
    kind: str  # stdout, stderr or error
    text: str


@dataclass(frozen=True, slots=True)
class HookRun:
    """One run of one hook: `id` (unique in the process), the `event`, its `source` (where it
    is configured: ``hooks.beforeTool[0]``), `status`, `started_at` (ISO time),
    `duration_ms` (None while running), `exit_status` (None unless it exited) and `output`."""

    id: str
    event: str
    source: str
    status: str
    started_at: str
    duration_ms: int | None = None
    exit_status: int | None = None
    output: tuple[HookOutput, ...] = ()


@dataclass(frozen=True, slots=True)
class HookNotice:
    """A run started or completed (`phase`), in session `session_id` (an RPC id), during turn
    `turn_id` (None: outside a turn)."""

    phase: str
    session_id: str
    turn_id: str | None
    run: HookRun
