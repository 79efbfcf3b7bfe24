"""Helpers for the compaction tests: the compaction settings in config.json, the
`session/event` notifications of a session, and the records of a session file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_compaction_config(home: Path, **compaction: Any) -> None:
    """config.json with a `compaction` section (merged into what is there)."""
    path = home / ".kward" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = json.loads(path.read_text()) if path.exists() else {}
    config["compaction"] = {**config.get("compaction", {}), **compaction}
    path.write_text(json.dumps(config))


def session_events(client: Any, session_id: str | None = None) -> list[dict]:
    return [n["params"] for n in list(client.notifications)
            if n["method"] == "session/event" and (session_id is None or n["params"]["sessionId"] == session_id)]


def records(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def compaction_records(path: str | Path) -> list[dict]:
    return [r for r in records(path) if r["type"] == "compaction"]
