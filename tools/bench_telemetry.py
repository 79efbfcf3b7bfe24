"""Telemetry benchmarks: `logging/stats` over a large log, the cost of writing a
record, and what a turn pays when telemetry is off.

Run from a checkout: ``python3 tools/bench_telemetry.py [--quick]``. `bench(quick)` returns
rows ``{"name", "value", "unit", "target"}`` for ``tools/bench.py`` to merge into its report.

- ``logging_stats_200k_s``: `kward.telemetry.stats.collect` and `kward.rpc.wire.telemetry.stats` (what
  `logging/stats` runs) over 200,000 records (quick: 50,000) of every category in a week of
  daily files, two of them rolled at 10 MiB; median of 3 runs (quick: 1), page cache warm.
  Target <= 2 s for 200,000. Beside it, the baseline: `json.loads` of the same lines and nothing else.
- ``telemetry_write_records_per_s``: `TelemetryLog.write` of tool-call records (redaction,
  the known-secret scrub, one `write()` each). Info.
- ``telemetry_off_turn_us``: `TelemetryRuntime.recorder()` with every category off (what a
  turn pays then: the live settings check). Info.

Fixtures live in a temporary directory that is removed afterwards. Single-threaded.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kward.telemetry.log import TelemetryLog  # noqa: E402
from kward.telemetry.ranges import parse_range  # noqa: E402
from kward.rpc.wire.telemetry import stats as stats_result  # noqa: E402
from kward.telemetry.stats import collect  # noqa: E402

Row = dict
NOW = datetime(2026, 3, 15, 20, 0, tzinfo=timezone.utc)  # a Sunday: "1 week" is Monday 9th to now
CATEGORIES = ("tokens", "performance", "tools", "errors")
TOOLS = ("read_file", "write_file", "edit_file", "run_shell_command", "list_directory", "search_files")


def record(rng: random.Random, when: datetime) -> dict:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    trace = {"trace_id": "%032x" % rng.getrandbits(128), "parent_id": "%016x" % rng.getrandbits(64)}
    kind = rng.random()
    if kind < 0.2:
        usage = {"input_tokens": rng.randint(100, 90000), "output_tokens": rng.randint(10, 4000),
                 "cache_read_tokens": rng.randint(0, 50000), "cache_write_tokens": 0, "reasoning_tokens": 64,
                 "total_tokens": 0, "estimated": False}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        return {"provider": "Codex", "model": "gpt-5.5", "request_bytes": rng.randint(2000, 400000),
                "duration_ms": round(rng.uniform(300, 9000), 1), "status": "completed", "usage": usage, **trace,
                "timestamp": stamp, "category": "tokens", "event": "model_usage"}
    if kind < 0.45:
        return {"provider": "Codex", "model": "gpt-5.5", "request_bytes": rng.randint(2000, 400000),
                "duration_ms": round(rng.uniform(300, 9000), 1), "status": rng.choice(("completed", "completed", "failed")),
                **trace, "timestamp": stamp, "category": "performance", "event": "model_request"}
    if kind < 0.9:
        return {"tool_name": rng.choice(TOOLS), "duration_ms": round(rng.uniform(0.1, 900), 1),
                "status": rng.choice(("completed", "completed", "error")), "result_bytes": rng.randint(0, 60000),
                **trace, "timestamp": stamp, "category": rng.choice(("tools", "performance")), "event": "tool_call"}
    return {"tool_name": rng.choice(TOOLS), "duration_ms": 1.5, "status": "error", "result_bytes": 40,
            "error_class": "ToolError", "error_message": "Error: no such file: src/x.py", **trace,
            "timestamp": stamp, "category": "errors", "event": "tool_error"}


def make_logs(directory: Path, count: int, rng: random.Random) -> int:
    """`count` records spread over the 7 days up to NOW; two days rolled to `-1` files."""
    directory.mkdir(parents=True)
    start = NOW - timedelta(days=6, hours=19)
    step = (NOW - start) / count
    total = 0
    files: dict[str, list[str]] = {}
    for i in range(count):
        when = start + step * i
        files.setdefault(when.strftime("%Y-%m-%d"), []).append(json.dumps(record(rng, when), separators=(",", ":")))
    for n, (day, lines) in enumerate(sorted(files.items())):
        parts = [lines[: len(lines) // 2], lines[len(lines) // 2:]] if n in (2, 4) else [lines]
        for index, part in enumerate(parts):
            data = ("\n".join(part) + "\n").encode()
            total += len(data)
            (directory / (f"{day}.jsonl" if index == 0 else f"{day}-{index}.jsonl")).write_bytes(data)
    return total


def bench_stats(tmp: Path, quick: bool, rng: random.Random) -> list[Row]:
    count = 50_000 if quick else 200_000
    size = make_logs(tmp / "logs", count, rng)
    rng_ = parse_range("1 week", NOW)
    result = stats_result(collect(tmp / "logs", rng_, CATEGORIES))  # warm-up (page cache)
    assert result["recordCount"] == count, result["recordCount"]
    runs = []
    for _ in range(1 if quick else 3):
        t0 = time.perf_counter()
        stats_result(collect(tmp / "logs", rng_, CATEGORIES))
        runs.append(time.perf_counter() - t0)
    base = []
    for _ in range(1 if quick else 3):
        t0 = time.perf_counter()
        for path in sorted((tmp / "logs").glob("*.jsonl")):
            with open(path, "rb") as f:
                for line in f:
                    json.loads(line)
        base.append(time.perf_counter() - t0)
    note = f"{count:,} records, {size / 1024 / 1024:.0f} MB in 9 files"
    return [
        {"name": "baseline: json.loads of the same lines, nothing else", "value": statistics.median(base),
         "unit": "s", "target": "-"},
        {"name": "logging_stats_200k_s" if not quick else "logging_stats_50k_s", "value": statistics.median(runs),
         "unit": "s", "target": f"<= 2 for 200,000 ({note})"},
    ]


def bench_write(tmp: Path, quick: bool) -> list[Row]:
    from kward.config.secrets import Snapshot

    snapshot = Snapshot.of(["sk-or-v1-benchsecret0123456789"])
    log = TelemetryLog(tmp / "write", scrub=snapshot.scrub_value)
    payload = {"tool_name": "read_file", "duration_ms": 12.5, "status": "completed", "result_bytes": 5120,
               "trace_id": "0af7651916cd43dd8448eb211c80319c", "parent_id": "b7ad6b7169203331"}
    n = 5_000 if quick else 20_000
    t0 = time.perf_counter()
    for _ in range(n):
        log.write("tools", "tool_call", payload)
    elapsed = time.perf_counter() - t0
    log.close()
    return [{"name": "telemetry_write_records_per_s", "value": n / elapsed, "unit": "records/s",
             "target": "info (redact, scrub, one write() each; no fsync)"}]


def bench_off(tmp: Path, quick: bool) -> list[Row]:
    from kward.config.store import ConfigStore, resolve_paths
    from kward.runtime.telemetry import TelemetryRuntime
    from kward.config.secrets import KnownSecrets

    home = tmp / "home"
    env = {"HOME": str(home), "KWARD_CONFIG_PATH": str(home / ".kward" / "config.json")}
    paths = resolve_paths(env)
    config = ConfigStore(paths)
    config.update({"logging": {"enabled": False}})
    telemetry = TelemetryRuntime(paths.logs_dir, config, env, KnownSecrets(env, config, paths.auth_file))
    n = 2_000 if quick else 10_000
    t0 = time.perf_counter()
    for _ in range(n):
        assert telemetry.recorder({}) is None
    elapsed = time.perf_counter() - t0
    return [{"name": "telemetry_off_turn_us", "value": elapsed / n * 1e6, "unit": "us per turn",
             "target": "info (logging off: a settings check, nothing wrapped)"}]


def bench(quick: bool = False) -> list[Row]:
    rng = random.Random(15)
    tmp = Path(tempfile.mkdtemp(prefix="kward-bench-telemetry-"))
    try:
        return bench_stats(tmp, quick, rng) + bench_write(tmp, quick) + bench_off(tmp, quick)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})")
