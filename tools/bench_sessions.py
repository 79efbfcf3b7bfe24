"""Session store benchmarks: listing, resume of a big file, append throughput.

Run from a checkout: ``python3 tools/bench_sessions.py [--quick]``. `bench(quick)` returns
rows ``{"name", "value", "unit", "target"}`` for ``tools/bench.py`` to merge into its report.

- ``sessions_list_ms_p50`` / ``_p95``: ``list_sessions`` (what ``sessions/list`` runs) over one
  workspace directory of 10,000 session files of ~100 records (quick: 2,000), limit 20,
  >= 20 runs after one warm-up run (page cache warm). Target p50 <= 150 ms.
- ``sessions_resume_50mb_s``: ``load_session`` of a ~50 MB session (quick: ~12 MB; user,
  assistant with tool calls, tool results, tool_execution_end audit records, a rename),
  timed inside a child process, median of 3 runs (quick: 1). Target <= 1.5 s (for 50 MB).
- ``sessions_resume_peak_mem_ratio``: (peak RSS of a child that loads the file - peak RSS
  of a baseline child that only imports the same modules) / file size, both from
  the peak RSS (``VmHWM`` of /proc/self/status; ``ru_maxrss`` elsewhere). Target < 3.
- ``sessions_resume_short_msgs_*``: the same two figures for the worst case, a file of
  nothing but ~200-byte chat messages (Python's per-dict overhead dominates). Info only.
- ``sessions_append_records_per_s``: ``OpenSession.append_message`` of ~300-byte messages,
  each one ``write()`` before returning, with an fsync every 20 records (a turn's end).
  Target >= 5,000/s.

Fixtures live in a temporary directory that is removed afterwards. Single-threaded apart
from the child processes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kward.client import Client  # noqa: E402
from kward.model import AssistantMessage  # noqa: E402
from kward.sessions.listing import list_sessions  # noqa: E402
from kward.sessions.opening import create_session  # noqa: E402

Row = dict

WORDS = ("the session file append line record model tool read write edit shell output error "
         "python kward workspace list resume fork clone export transcript compact summary diff "
         "function class return import value test assert config path lock turn event").split()


def text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def stamp(i: int) -> str:
    return f"2026-01-01T00:{(i // 60000) % 60:02d}:{(i // 1000) % 60:02d}.{i % 1000:03d}Z"


def turn_records(rng: random.Random, n: int, *, big: bool) -> list[dict[str, Any]]:
    """One user turn: user, assistant(+tool call), tool result, audit record, answer."""
    cid = f"call_{n}"
    result = text(rng, rng.randint(2000, 9000) if big else rng.randint(40, 400))
    return [
        {"type": "message", "timestamp": stamp(n), "message": {"role": "user", "content": text(rng, 120 if big else 60)}},
        {"type": "message", "timestamp": stamp(n), "message": {
            "role": "assistant", "content": text(rng, 600 if big else 80), "reasoning_summary": text(rng, 200 if big else 30),
            "tool_calls": [{"id": cid, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"path": f"src/file_{n % 50}.py"})}}],
            "usage": {"input_tokens": 1000 + n, "output_tokens": 200}, "provider": "Codex", "model": "gpt-5"}},
        {"type": "message", "timestamp": stamp(n), "message": {
            "role": "tool", "tool_call_id": cid, "name": "read_file", "content": result}},
        {"type": "tool_execution_end", "timestamp": stamp(n), "toolCallId": cid, "toolName": "read",
         "args": {"path": f"src/file_{n % 50}.py"}, "result": {"content": result, "isError": False, "images": []},
         "isError": False},
        {"type": "message", "timestamp": stamp(n), "message": {"role": "assistant", "content": text(rng, 400 if big else 60)}},
    ]


def header(sid: str, cwd: str, parent: str | None = None) -> dict[str, Any]:
    h = {"type": "session", "version": 1, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd,
         "model": "gpt-5"}
    if parent:
        h.update(parentId=parent, parentPath=f"/x/{parent}.jsonl")
    return h


def encode(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)


# --- listing -----------------------------------------------------------------------------

def make_listing_dir(directory: Path, files: int, rng: random.Random) -> int:
    """`files` session files of ~100 records; returns the average file size."""
    directory.mkdir(parents=True)
    bodies = []
    for variant in range(8):  # a few different bodies, reused with fresh headers
        records = [{"type": "session_info", "timestamp": stamp(0), "name": f"Session {variant}"}]
        n = 0
        while len(records) < 100:
            records += turn_records(rng, n, big=False)
            n += 1
        bodies.append(encode(records[:100]))
    total = 0
    base = 1_700_000_000
    for i in range(files):
        sid = f"{i:08d}-0000-4000-8000-{rng.getrandbits(48):012x}"
        parent = f"{i - 1:08d}-0000-4000-8000-000000000000" if i % 7 == 0 and i else None
        data = encode([header(sid, "/bench/ws", parent)]) + bodies[i % len(bodies)]
        path = directory / f"2026-01-01T00-00-00.{i % 1000:03d}Z_{sid}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.close(fd)
        os.utime(path, ns=((base + i) * 10**9,) * 2)
        total += len(data)
    return total // files


def bench_list(tmp: Path, quick: bool, rng: random.Random) -> list[Row]:
    files = 2_000 if quick else 10_000
    directory = tmp / "sessions" / "--bench-ws--"
    avg = make_listing_dir(directory, files, rng)
    list_sessions(str(directory), "/bench/ws", 20)  # warm-up (page cache, imports)
    times = []
    for _ in range(20 if quick else 40):
        t0 = time.perf_counter()
        items = list_sessions(str(directory), "/bench/ws", 20)
        times.append((time.perf_counter() - t0) * 1000)
    assert len(items) == 20
    times.sort()
    base = []
    for _ in range(20 if quick else 40):  # baseline: only find and stat the files, read nothing
        t0 = time.perf_counter()
        with os.scandir(directory) as it:
            stats = [(e.stat().st_mtime_ns, e.path) for e in it if e.name.endswith(".jsonl")]
        stats.sort(reverse=True)
        base.append((time.perf_counter() - t0) * 1000)
    note = f"{files:,} files of 100 records (~{avg // 1024} KiB), limit 20"
    whole = _list_via_rpc(tmp, directory, 5 if quick else 15)
    return [
        {"name": "baseline: scandir + stat + sort of the same files, nothing read", "value": statistics.median(base),
         "unit": "ms", "target": "-"},
        {"name": "sessions_list_ms_p50", "value": statistics.median(times), "unit": "ms",
         "target": f"<= 150 ({note})"},
        {"name": "sessions_list_ms_p95", "value": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
         "unit": "ms", "target": f"info ({note})"},
        {"name": "whole process: spawn kward rpc, initialize, sessions/list, exit (p50)", "value": whole, "unit": "ms",
         "target": "info (what a UI's short-lived list refresh costs)"},
    ]


def _list_via_rpc(tmp: Path, directory: Path, runs: int) -> float:
    """p50 ms of a short-lived `kward rpc` that answers one sessions/list of `directory`.
    The listing's workspace is rebuilt from the directory name the way kward names it."""
    home = tmp / "rpc-home"
    (home / ".kward").mkdir(parents=True, exist_ok=True)
    sessions = home / ".kward" / "sessions"
    if not sessions.exists():
        sessions.symlink_to(directory.parent, target_is_directory=True)
    workspace = tmp / "bench" / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    target = sessions / ("--" + str(workspace).strip("/").replace("/", "-") + "--")
    if not target.exists():
        target.symlink_to(directory, target_is_directory=True)
    env = dict(os.environ, HOME=str(home), KWARD_CONFIG_PATH=str(home / ".kward" / "config.json"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))

    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        client = Client.spawn(None, env=env, cwd=workspace)
        client.request("initialize", {})
        listing = client.request("sessions/list", {"workspaceRoot": str(workspace)}, timeout=60)
        assert client.close() == 0
        times.append((time.perf_counter() - t0) * 1000)
        assert listing["sessions"], listing
    return statistics.median(times)


# --- resume ------------------------------------------------------------------------------

LOADER = r"""
import resource, sys, time, json
from kward.sessions.opening import load_session
if sys.argv[1] == "load":
    t0 = time.perf_counter()
    s = load_session(sys.argv[2], sys.argv[3])
    elapsed = time.perf_counter() - t0
    count = len(s.conversation)
else:
    elapsed, count = 0.0, 0
try:  # VmHWM is this image's peak; ru_maxrss also counts the parent's pages inherited at fork
    with open("/proc/self/status") as f:
        peak = int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "maxrss_kb": peak, "messages": count}))
"""


def make_big_session(path: Path, size: int, rng: random.Random) -> int:
    with open(path, "wb") as f:
        f.write(encode([header("big-0000", "/bench/ws")]))
        written, n = 0, 0
        while written < size:
            chunk = encode(turn_records(rng, n, big=True))
            if n == 10:
                chunk += encode([{"type": "session_info", "timestamp": stamp(n), "name": "Big one"}])
            f.write(chunk)
            written += len(chunk)
            n += 1
    return path.stat().st_size


def run_loader(mode: str, path: Path, root: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", LOADER, mode, str(path), str(root)], env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def make_small_session(path: Path, size: int, rng: random.Random) -> int:
    """The worst case for memory: nothing but short chat messages (~200 bytes a line)."""
    with open(path, "wb") as f:
        f.write(encode([header("small-000", "/bench/ws")]))
        written, n = 0, 0
        while written < size:
            role = "user" if n % 2 == 0 else "assistant"
            chunk = encode([{"type": "message", "timestamp": stamp(n),
                             "message": {"role": role, "content": text(rng, rng.randint(20, 200))}}])
            f.write(chunk)
            written += len(chunk)
            n += 1
    return path.stat().st_size


def measure_resume(tmp: Path, name: str, size: int, quick: bool) -> tuple[float, float, int]:
    """(median seconds, peak-memory ratio, live messages) for loading `tmp/name`."""
    path = tmp / name
    root = tmp / "ws"
    root.mkdir(exist_ok=True)
    baseline = run_loader("baseline", path, root)
    runs = [run_loader("load", path, root) for _ in range(1 if quick else 3)]
    seconds = statistics.median(r["seconds"] for r in runs)
    peak_kb = max(r["maxrss_kb"] for r in runs) - baseline["maxrss_kb"]
    return seconds, peak_kb * 1024 / size, runs[0]["messages"]


def bench_resume(tmp: Path, quick: bool, rng: random.Random) -> list[Row]:
    target = (12 if quick else 50) * 1024 * 1024
    size = make_big_session(tmp / "big.jsonl", target, rng)
    seconds, ratio, count = measure_resume(tmp, "big.jsonl", size, quick)
    mb = size / 1024 / 1024
    rows = [
        {"name": "sessions_resume_s", "value": seconds, "unit": "s",
         "target": f"<= 1.5 for 50 MB ({mb:.1f} MB of turns with tool output, {count:,} live messages)"},
        {"name": "sessions_resume_peak_mem_ratio", "value": ratio, "unit": "x file size",
         "target": "< 3 (peak RSS delta vs an import-only child)"},
    ]
    size = make_small_session(tmp / "small.jsonl", target, rng)
    seconds, ratio, count = measure_resume(tmp, "small.jsonl", size, quick)
    rows += [
        {"name": "sessions_resume_short_msgs_s", "value": seconds, "unit": "s",
         "target": f"info: worst case, {size / 1024 / 1024:.1f} MB of {count:,} short chat messages"},
        {"name": "sessions_resume_short_msgs_mem_ratio", "value": ratio, "unit": "x file size",
         "target": "info: worst case (per-message dict overhead)"},
    ]
    return rows


# --- append ------------------------------------------------------------------------------

def bench_append(tmp: Path, quick: bool, rng: random.Random) -> list[Row]:
    root = tmp / "append-ws"
    root.mkdir()
    session = create_session(tmp / "append-sessions", str(root))
    count = 5_000 if quick else 20_000
    messages = [{"role": "assistant", "content": text(rng, 250)} for _ in range(50)]
    typed = [AssistantMessage(m["content"]) for m in messages]
    t0 = time.perf_counter()
    for i in range(count):
        session.append_message(typed[i % 50])
        if i % 20 == 19:
            session.sync()  # end of a turn
    session.sync()
    elapsed = time.perf_counter() - t0
    session.close(delete_if_unused=False)
    lines = [json.dumps({"type": "message", "timestamp": stamp(i), "message": m}).encode() + b"\n"
             for i, m in enumerate(messages)]
    fd = os.open(tmp / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    t0 = time.perf_counter()
    for i in range(count):  # baseline: the bare system calls, no JSON, no lock, no bookkeeping
        os.write(fd, lines[i % 50])
        if i % 20 == 19:
            os.fsync(fd)
    os.fsync(fd)
    raw = count / (time.perf_counter() - t0)
    os.close(fd)
    return [{"name": "baseline: bare os.write of ready lines, fsync per 20", "value": raw, "unit": "records/s",
             "target": "-"},
            {"name": "sessions_append_records_per_s", "value": count / elapsed, "unit": "records/s",
             "target": ">= 5,000 (one write() per record, fsync per 20)"}]


def bench(quick: bool = False) -> list[Row]:
    rng = random.Random(42)
    tmp = Path(tempfile.mkdtemp(prefix="kward-bench-sessions-"))
    try:
        rows = bench_list(tmp, quick, rng)
        rows += bench_resume(tmp, quick, rng)
        rows += bench_append(tmp, quick, rng)
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    sys.stdout.write("| figure | value | unit | target |\n|---|---:|---|---|\n")
    for row in bench(quick):
        sys.stdout.write(f"| {row['name']} | {row['value']:.3f} | {row['unit']} | {row['target']} |\n")
