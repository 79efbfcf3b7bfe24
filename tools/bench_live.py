#!/usr/bin/env python3
"""Live tool output (`toolUpdate`) benchmarks over the real `kward rpc` with the Scripted
provider.

Figures (each beside its baseline, measured in the same run, medians of several runs):
- throughput: the `toolUpdate` events/s and bytes/s (delta + content, UTF-8) a client reads
  while a command writes 100,000 lines over about a second (the rate cap at work);
- the turn time of a turn running `seq 100000` with live output, against the same turn on a
  connection that opted out of `turn/event:toolUpdate`;
- the same for a command writing 50 MB (far over the 1 MiB budget: the cost of counting
  what is left out).

    python3 tools/bench_live.py [--quick]
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

PACED = """
import sys, time
for block in range(100):
    sys.stdout.write("".join(f"{i}\\n" for i in range(block * 1000 + 1, block * 1000 + 1001)))
    sys.stdout.flush()
    time.sleep(0.01)
"""
OPT_OUT = ["turn/event:toolUpdate"]


def _spawn(home: Path, command: str, opt_out: list[str] | None) -> tuple[Client, str]:
    """A `kward rpc` whose every turn runs `command` and answers; (client, session id)."""
    script = home / f"script-{time.monotonic_ns()}.json"
    step = {"type": "toolCall", "name": "run_shell_command", "arguments": {"command": command, "timeout_seconds": 120}}
    script.write_text(json.dumps({"loop": True, "steps": [[step], [{"type": "text", "text": "done"}]]}))
    ws = home / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "paced.py").write_text(PACED)
    env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    client = Client.spawn(None, env=env, cwd=ws)
    client.request("initialize", {"capabilities": {"optOutNotificationMethods": opt_out or []}})
    return client, client.request("sessions/create")["id"]


def _turn(client: Client, sid: str) -> tuple[float, list[tuple[float, dict]]]:
    """Run one turn; (seconds from turns/start to turnFinished, [(arrival, event)])."""
    t0 = time.perf_counter()
    events = [(time.perf_counter(), e) for e in client.turn(sid, "go", timeout=120)]
    assert events[-1][1]["payload"]["status"] == "completed", events[-1]
    return time.perf_counter() - t0, events


def _size(update: dict) -> int:
    return len(update["delta"].encode()) + len(update["content"].encode())


def bench_throughput(home: Path, runs: int) -> list[Row]:
    client, sid = _spawn(home, f"{sys.executable} paced.py", None)
    _turn(client, sid)  # warm up
    rates, byte_rates, counts = [], [], []
    for _ in range(runs):
        _, events = _turn(client, sid)
        call = next(t for t, e in events if e["type"] == "toolCall")
        result = next(t for t, e in events if e["type"] == "toolResult")
        updates = [e["payload"] for _, e in events if e["type"] == "toolUpdate"]
        assert "".join(u["delta"] for u in updates) == "".join(f"{i}\n" for i in range(1, 100_001))
        counts.append(len(updates))
        rates.append(len(updates) / (result - call))
        byte_rates.append(sum(_size(u) for u in updates) / (result - call))
    client.close()
    return [
        {"name": f"toolUpdate events read while a command writes 100,000 lines over ~1 s (median of {runs}; "
                 f"{statistics.median(counts):.0f} events a run)",
         "value": statistics.median(rates), "unit": "events/s", "target": "<= 20 (+ the last)"},
        {"name": "toolUpdate bytes read (delta + content) in that run", "value": statistics.median(byte_rates) / 1e6,
         "unit": "MB/s", "target": "-"},
    ]


def bench_turn_time(home: Path, command: str, label: str, runs: int) -> list[Row]:
    """The turn time of `command` with live output and opted out: one process each, turns
    alternating between them."""
    live, live_sid = _spawn(home, command, None)
    quiet, quiet_sid = _spawn(home, command, OPT_OUT)
    _turn(live, live_sid)
    _turn(quiet, quiet_sid)
    with_live, without, counts = [], [], []
    for _ in range(runs):
        seconds, events = _turn(live, live_sid)
        with_live.append(seconds)
        counts.append(sum(e["type"] == "toolUpdate" for _, e in events))
        seconds, events = _turn(quiet, quiet_sid)
        assert not any(e["type"] == "toolUpdate" for _, e in events)
        without.append(seconds)
    live.close()
    quiet.close()
    return [
        {"name": f"baseline: turn running {label}, toolUpdate opted out (median of {runs})",
         "value": statistics.median(without) * 1000, "unit": "ms", "target": "-"},
        {"name": f"turn running {label} with live output ({statistics.median(counts):.0f} toolUpdate events)",
         "value": statistics.median(with_live) * 1000, "unit": "ms", "target": "about the baseline"},
    ]


def bench(quick: bool = False) -> list[Row]:
    home = Path(tempfile.mkdtemp(prefix="kward-bench-live-"))
    runs = 3 if quick else 7
    rows = bench_throughput(home, runs)
    rows += bench_turn_time(home, "seq 100000", "`seq 100000`", runs)
    rows += bench_turn_time(home, "head -c 50000000 /dev/zero | tr '\\0' x", "a command writing 50 MB", runs)
    return rows


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})", flush=True)
