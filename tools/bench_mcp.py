#!/usr/bin/env python3
"""MCP benchmarks: what configured MCP servers cost at start-up, and a tool call's round
trip over stdio (the fake server of tests/lib/fake_mcp.py).

Figures (each beside its baseline, measured in the same run, medians):
- cold start to the `initialize` response of `kward rpc` without MCP servers (the
  baseline) and with three configured stdio servers: the servers start only when a
  session opens, so the two should match;
- from sessions/create to all three servers available (they start in the background);
- one ``tools/call`` round trip through kward's `McpClient` over stdio, beside the same
  request written and its answer read by hand on the same server's pipes (the floor);
- a warm turn with one MCP tool call beside a warm turn with one built-in call
  (list_directory), whole process.

    python3 tools/bench_mcp.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from kward.client import Client  # noqa: E402
from kward.mcp.client import McpClient  # noqa: E402
from kward.mcp.config import parse_servers  # noqa: E402
from bench_hooks import warm_turns  # noqa: E402
from lib.fake_mcp import stdio_command  # noqa: E402
from lib.rpc_client import kward_env  # noqa: E402

Row = dict


def _home(root: Path, name: str, servers: dict) -> Path:
    home = root / name
    (home / ".kward").mkdir(parents=True)
    (home / ".kward" / "config.json").write_text(json.dumps({"mcp": {"servers": servers}} if servers else {}))
    (home / ".kward" / "config.json").chmod(0o600)
    (home / "ws").mkdir()
    return home


def _initialize(home: Path, n: int) -> list[float]:
    """Seconds from spawn to the initialize answer, `n` cold starts."""
    env = kward_env(home, KWARD_PROVIDER="scripted")
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with Client.spawn(None, env=env, cwd=home / "ws") as client:
            client.request("initialize")
            times.append(time.perf_counter() - t0)
    return times


def _ready(home: Path, n: int) -> list[float]:
    """Seconds from sessions/create to every server available."""
    env = kward_env(home, KWARD_PROVIDER="scripted")
    times = []
    for _ in range(n):
        with Client.spawn(None, env=env, cwd=home / "ws") as client:
            client.request("initialize")
            t0 = time.perf_counter()
            client.request("sessions/create")
            while any(s["status"] != "available" for s in client.request("mcp/status")["servers"]):
                time.sleep(0.002)
            times.append(time.perf_counter() - t0)
    return times


def _round_trips(root: Path, n: int) -> tuple[list[float], list[float]]:
    """(kward's McpClient, by hand) seconds of one tools/call echo each."""
    entry = stdio_command(root / "rt.jsonl")
    config = parse_servers({"fake": entry})[0][0]
    client = McpClient.open(config, client_version="bench", timeout=10)
    try:
        ours = []
        for _ in range(n + 5):
            t0 = time.perf_counter()
            client.call_tool("echo", {"text": "x"}, timeout=10)
            ours.append(time.perf_counter() - t0)
    finally:
        client.close()
    proc = subprocess.Popen([entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    floor = []
    try:
        for i in range(n + 5):
            line = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": "x"}}}).encode() + b"\n"
            t0 = time.perf_counter()
            proc.stdin.write(line)
            proc.stdin.flush()
            json.loads(proc.stdout.readline())
            floor.append(time.perf_counter() - t0)
    finally:
        proc.stdin.close()
        proc.wait(10)
    return ours[5:], floor[5:]


def _turns(home: Path, call: dict, n: int) -> list[float]:
    script = home / "script.json"
    script.write_text(json.dumps({"loop": True, "steps": [[call], [{"type": "text", "text": "done"}]]}))
    env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    with Client.spawn(None, env=env, cwd=home / "ws") as client:
        client.request("initialize")
        sid = client.request("sessions/create")["id"]
        while any(s["status"] != "available" for s in client.request("mcp/status")["servers"]):
            time.sleep(0.005)
        return warm_turns(client, sid, n)


def bench(quick: bool) -> list[Row]:
    starts, calls, turns = (5, 100, 8) if quick else (15, 500, 25)
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        none = _home(root, "none", {})
        three = _home(root, "three", {f"s{i}": stdio_command(root / f"s{i}.jsonl") for i in range(3)})
        plain, with_mcp = [], []
        for _ in range(starts):  # interleaved, so both see the same machine
            plain += _initialize(none, 1)
            with_mcp += _initialize(three, 1)
        ready = _ready(three, max(3, starts // 3))
        ours, floor = _round_trips(root, calls)
        one = _home(root, "one", {"fake": stdio_command(root / "one.jsonl")})
        mcp_turn = _turns(one, {"type": "toolCall", "name": "mcp__fake__echo", "arguments": {"text": "x"}}, turns)
        builtin_turn = _turns(one, {"type": "toolCall", "name": "list_directory", "arguments": {"path": "."}}, turns)
    return [
        {"name": "cold start to initialize, no MCP servers (baseline)", "value": med(plain) * 1000, "unit": "ms",
         "target": "-"},
        {"name": "cold start to initialize, three stdio MCP servers configured", "value": med(with_mcp) * 1000,
         "unit": "ms", "target": "= baseline (servers start with a session)"},
        {"name": "ratio with/without", "value": med(with_mcp) / med(plain), "unit": "x", "target": "1.0"},
        {"name": "sessions/create to three servers available (background)", "value": med(ready) * 1000, "unit": "ms",
         "target": "no request waits for it"},
        {"name": "tools/call echo by hand on the server's pipes (floor)", "value": med(floor) * 1e6, "unit": "us",
         "target": "-"},
        {"name": "tools/call echo through kward's McpClient (stdio)", "value": med(ours) * 1e6, "unit": "us",
         "target": "floor + a thread hop"},
        {"name": "warm turn, one built-in call (list_directory)", "value": med(builtin_turn) * 1000, "unit": "ms",
         "target": "-"},
        {"name": "warm turn, one MCP tool call (stdio echo)", "value": med(mcp_turn) * 1000, "unit": "ms",
         "target": "built-in + one round trip"},
    ]


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.3g} {row['unit']} (target: {row['target']})")
