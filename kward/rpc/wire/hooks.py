"""`hook/started` and `hook/completed`: a command hook's run (`kward.agent.hookruns`) as the
protocol has it (docs/protocol.md "Hooks"). Pure functions, any thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.hookruns import HookNotice

def hook_notice(notice: HookNotice) -> dict[str, Any]:
    """The notification's params ``{sessionId, turnId?, run}``."""
    run = notice.run
    params: dict[str, Any] = {"sessionId": notice.session_id}
    if notice.turn_id is not None:
        params["turnId"] = notice.turn_id
    params["run"] = {"id": run.id, "event": run.event, "source": run.source, "status": run.status,
                     "startedAt": run.started_at, "durationMs": run.duration_ms, "exitStatus": run.exit_status,
                     "output": [{"kind": o.kind, "text": o.text} for o in run.output]}
    return params
