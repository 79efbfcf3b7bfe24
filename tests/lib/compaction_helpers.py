"""Helpers for the compaction tests: the compaction settings in config.json, the
`session/event` notifications of a session (the compaction ones unless asked for other
types; and waiting for them), and the compaction records of a session file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lib.session_records import read_records


def write_compaction_config(home: Path, **compaction: Any) -> None:
    """config.json with a `compaction` section (merged into what is there)."""
    path = home / ".kward" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = json.loads(path.read_text()) if path.exists() else {}
    config["compaction"] = {**config.get("compaction", {}), **compaction}
    path.write_text(json.dumps(config))


COMPACTION_EVENTS = ("compactionStart", "compactionEnd")


def session_events(client: Any, session_id: str | None = None,
                   types: tuple[str, ...] | None = COMPACTION_EVENTS) -> list[dict]:
    """The params of the `session/event` notifications received so far (of one session;
    of `types`, None: every type), in arrival order."""
    return [n["params"] for n in list(client.notifications)
            if n["method"] == "session/event" and (session_id is None or n["params"]["sessionId"] == session_id)
            and (types is None or n["params"]["type"] in types)]


def wait_session_events(client: Any, count: int, session_id: str | None = None, timeout: float = 10.0,
                        types: tuple[str, ...] | None = COMPACTION_EVENTS) -> list[dict]:
    """The session events (as `session_events`) once `count` arrived (a sessions/compact's
    compactionEnd comes after its response)."""
    client.wait(lambda: len(session_events(client, session_id, types)) >= count, timeout, f"{count} session events")
    return session_events(client, session_id, types)


def compaction_records(path: str | Path) -> list[dict]:
    """The compaction records of a session file."""
    return [r for r in read_records(path) if r["type"] == "compaction"]
