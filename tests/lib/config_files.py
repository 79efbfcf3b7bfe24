"""kward's config.json in a test's home: read back what kward wrote, or write one before
kward starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_config(home: Path) -> dict[str, Any]:
    """The config.json under `home`'s config directory, decoded."""
    return json.loads((home / ".kward" / "config.json").read_text())


def write_config(config_dir: Path, values: dict[str, Any]) -> None:
    """Write `values` as `config_dir`/config.json (creating the directory)."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.json").write_text(json.dumps(values), encoding="utf-8")
