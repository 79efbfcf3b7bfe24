"""`hook/started` and `hook/completed`: a command hook's run (`kward.agent.hookruns`) as the
protocol has it (docs/protocol.md "Hooks"). Pure functions, any thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.hookruns import HookNotice
    from kward.rpc.shapes.ui import HookNotification, HookRun


def hook_notice(notice: HookNotice) -> HookNotification:
    """The notification's params ``{sessionId, turnId?, run}``."""
    r = notice.run
    run: HookRun = {"id": r.id, "event": r.event, "source": r.source, "status": r.status,
                    "startedAt": r.started_at, "durationMs": r.duration_ms, "exitStatus": r.exit_status,
                    "output": [{"kind": o.kind, "text": o.text} for o in r.output]}
    if notice.turn_id is None:
        return {"sessionId": notice.session_id, "run": run}
    return {"sessionId": notice.session_id, "turnId": notice.turn_id, "run": run}
