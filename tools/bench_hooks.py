#!/usr/bin/env python3
"""Command hook benchmarks over the real `kward rpc` with the Scripted provider.

Figures (each beside its baseline, measured in the same run, medians of warm turns):
- the warm turn time of a turn with one shell call (`true`) and no hooks configured
  (the baseline: what every user without hooks pays, which is nothing new);
- the same turn with one `beforeTool` hook (`true`): one hook process;
- the same turn with a hook on each of userPromptSubmit, beforeTool, afterTool and
  turnEnd: four hook processes.

    python3 tools/bench_hooks.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from kward.client import Client  # noqa: E402
from lib.rpc_client import kward_env  # noqa: E402

Row = dict
ONE = {"beforeTool": [{"command": "true"}]}
FOUR = {event: [{"command": "true"}] for event in ("userPromptSubmit", "beforeTool", "afterTool", "turnEnd")}


def _turns(home: Path, hooks: dict, n: int) -> list[float]:
    """Seconds of `n` warm turns (after two unmeasured ones) of a kward with `hooks`."""
    (home / ".kward").mkdir(parents=True, exist_ok=True)
    (home / ".kward" / "config.json").write_text(json.dumps({"hooks": hooks}))
    (home / ".kward" / "config.json").chmod(0o600)
    script = home / "script.json"
    step = {"type": "toolCall", "name": "run_shell_command", "arguments": {"command": "true"}}
    script.write_text(json.dumps({"loop": True, "steps": [[step], [{"type": "text", "text": "done"}]]}))
    ws = home / "ws"
    ws.mkdir(exist_ok=True)
    env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    with Client.spawn(None, env=env, cwd=ws) as client:
        client.request("initialize", {"capabilities": {"experimentalApi": True}})
        return warm_turns(client, client.request("sessions/create")["id"], n)


def warm_turns(client: Client, sid: str, n: int) -> list[float]:
    """Seconds of `n` turns of session `sid`, after two unmeasured ones (tools/bench_mcp.py too)."""
    times = []
    for i in range(n + 2):
        t0 = time.perf_counter()
        events = list(client.turn(sid, "go", timeout=60))
        assert events[-1]["payload"]["status"] == "completed", events[-1]
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return times


def bench(quick: bool) -> list[Row]:
    n = 8 if quick else 25
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name, hooks in (("none", {}), ("one", ONE), ("four", FOUR)):
            home = Path(tmp) / name
            home.mkdir()
            results[name] = statistics.median(_turns(home, hooks, n)) * 1000
    rows.append({"name": "warm turn, one shell call, no hooks (baseline)", "value": results["none"], "unit": "ms",
                 "target": "as before hooks existed"})
    rows.append({"name": "the same with one beforeTool hook", "value": results["one"], "unit": "ms",
                 "target": "baseline + one /bin/sh"})
    rows.append({"name": "the same with four hooks (prompt, before, after, turnEnd)", "value": results["four"],
                 "unit": "ms", "target": "baseline + four /bin/sh"})
    return rows


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.1f} {row['unit']} (target: {row['target']})")
