#!/usr/bin/env python3
"""kward benchmarks: whole-process and in-process figures, each beside a baseline measured
in the same run. Medians of several runs; no figure here is a pass/fail test.

    python3 tools/bench.py                 # everything, markdown table on stdout
    python3 tools/bench.py --only startup,rpc --quick

Sections: rpc (sequential round trips and pipelined throughput, vs a minimal
single-threaded framing echo loop), plus the sections the modules tools/bench_<name>.py
provide (a `bench(quick) -> rows` function each): startup (cold start to the `initialize`
response and the other start-up figures vs `python3 -c pass`, bench_startup.py), warmup
(first turn vs warm turn, requests at start-up, bench_warmup.py), list (a UI's list
refresh after a turn vs the floor, tools/floor_list.py; bench_list.py), providers,
sessions, turns, live (live tool output: toolUpdate throughput and the turn time with and
without it, bench_live.py), changes (what changed-file detection adds to a shell call,
bench_changes.py), mcp (configured MCP servers at start-up, a tool call's round trip over
stdio, bench_mcp.py), listen (a round trip over the Unix socket vs stdio, and a reattach
to the first replayed event, bench_listen.py). `startup` runs first. tools/bench_trees.py is no section: it measures
several trees (commits, the working tree) side by side in one run.

Bytecode: the kward package is byte-compiled first (what `pip install` does), so start-up
is not charged for compiling sources when PYTHONDONTWRITEBYTECODE is set.
"""

from __future__ import annotations

import argparse
import compileall
import importlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from kward.client import Client  # noqa: E402
from kward.rpc.framing import FrameReader, encode_frame  # noqa: E402

Row = dict


def frame(obj) -> bytes:
    return encode_frame(json.dumps(obj).encode())


def env_for(home: Path) -> dict:
    env = dict(os.environ, HOME=str(home), KWARD_CONFIG_PATH=str(home / ".kward" / "config.json"),
               PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return env


def read_frame(stream) -> dict | None:
    """The next message on `stream` (kward's own frame reader), None at its end."""
    body = FrameReader(stream, 1 << 31).read()
    return None if body is None else json.loads(body)


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


# --- rpc round trips and throughput ------------------------------------------------------

ECHO_BASELINE = r'''
import io, json, os, sys
inp = io.open(0, "rb", buffering=262144); out = io.FileIO(1, "wb")
while True:
    line = inp.readline()
    if not line: break
    n = int(line.split(b":")[1]); inp.readline()
    msg = json.loads(inp.read(n))
    body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"root": "/x", "basename": "x", "writable": True}}).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
'''


def round_trips(client: Client, n: int, method: str = "workspace/info") -> list[float]:
    """`n` sequential `method` requests through kward.client; each one's seconds."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.request(method)
        out.append(time.perf_counter() - t0)
    return out


class Peer:
    """A child process written to as fast as the pipe takes it: kward.client waits for each
    answer, so pipelined throughput is driven with kward's own framing here."""

    def __init__(self, cmd: list[str], env: dict, cwd: Path):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)

    def pipelined(self, n: int) -> float:
        data = b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "workspace/info"}) for i in range(n))

        def write():
            self.p.stdin.write(data)
            self.p.stdin.flush()

        t0 = time.perf_counter()
        w = threading.Thread(target=write)
        w.start()
        for _ in range(n):
            read_frame(self.p.stdout)
        elapsed = time.perf_counter() - t0
        w.join()
        return n / elapsed

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(10)
        self.p.stdout.close()


def bench_rpc(quick: bool) -> list[Row]:
    home = Path(tempfile.mkdtemp(prefix="kward-bench-"))
    env = env_for(home)
    n_rt = 300 if quick else 1000
    n_pipe = 10_000
    reps = 3 if quick else 5
    rows: list[Row] = []
    for label, cmd in (("baseline: minimal 1-thread framing echo", [sys.executable, "-c", ECHO_BASELINE]),
                       ("kward rpc", [sys.executable, "-m", "kward", "rpc"])):
        with Client.spawn(cmd, env=env, cwd=home) as client:
            round_trips(client, 50)  # warm up
            rt = round_trips(client, n_rt)
        peer = Peer(cmd, env, home)
        rates = [peer.pipelined(n_pipe) for _ in range(reps)]
        peer.close()
        rows += [
            {"name": f"{label}: sequential round trip p50 ({n_rt} x workspace/info, kward.client)",
             "value": percentile(rt, 50) * 1000, "unit": "ms", "target": "-"},
            {"name": f"{label}: sequential round trip p99", "value": percentile(rt, 99) * 1000, "unit": "ms",
             "target": "-"},
            {"name": f"{label}: pipelined {n_pipe} requests (median of {reps})", "value": statistics.median(rates),
             "unit": "req/s", "target": ">= 10,000" if label == "kward rpc" else "-"},
        ]
    rows += bench_inprocess(quick)
    return rows


def bench_inprocess(quick: bool) -> list[Row]:
    """Round trips through `Client.in_process` (the same client and server core, no child
    process), and the same pipelined load against an RpcServer in this process (no process
    start, no child interpreter): isolates the server's own cost per request."""
    from kward.rpc.compose import build_server, resolve

    home = Path(tempfile.mkdtemp(prefix="kward-bench-"))
    n_rt = 300 if quick else 1000
    with Client.in_process(env=env_for(home), cwd=home) as client:
        round_trips(client, 50)  # warm up
        rt = round_trips(client, n_rt)
    rows = [{"name": f"Client.in_process: sequential round trip p50 ({n_rt} x workspace/info)",
             "value": percentile(rt, 50) * 1000, "unit": "ms", "target": "-"},
            {"name": "Client.in_process: sequential round trip p99", "value": percentile(rt, 99) * 1000,
             "unit": "ms", "target": "-"}]
    setup = resolve({"HOME": str(home)}, home)
    n = 10_000
    rates = []
    for _ in range(3 if quick else 5):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        server = build_server(io.open(in_r, "rb", buffering=262144), io.FileIO(out_w, "wb"), setup)
        t = threading.Thread(target=server.serve)
        t.start()
        data = b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "workspace/info"}) for i in range(n))
        reader = io.open(out_r, "rb")
        t0 = time.perf_counter()
        w = threading.Thread(target=lambda: os.write(in_w, data) and None)
        w.start()
        for _ in range(n):
            read_frame(reader)
        rates.append(n / (time.perf_counter() - t0))
        w.join()
        os.close(in_w)
        t.join(10)
        reader.close()
    return rows + [{"name": f"in-process RpcServer: pipelined {n} requests (median)",
                    "value": statistics.median(rates), "unit": "req/s", "target": "-"}]


SECTIONS = {"rpc": bench_rpc}
NOT_SECTIONS = {"trees"}  # tools/bench_trees.py: a command of its own (several trees in one run), no section


def discover() -> dict:
    found = dict(SECTIONS)
    for path in sorted((REPO / "tools").glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if name in NOT_SECTIONS:
            continue
        found[name] = lambda quick, mod=path.stem: importlib.import_module(mod).bench(quick)
    first = {name: found.pop(name) for name in ("startup", "rpc") if name in found}
    return {**first, **found}


def fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value < 1 else f"{value:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated sections")
    ap.add_argument("--quick", action="store_true", help="fewer runs")
    args = ap.parse_args()
    compileall.compile_dir(str(REPO / "kward"), quiet=1)
    sections = discover()
    chosen = args.only.split(",") if args.only else list(sections)
    print(f"python {sys.version.split()[0]} on {os.uname().sysname} {os.uname().machine}, "
          f"{os.cpu_count()} cpus, {time.strftime('%Y-%m-%d')}")
    print()
    print("| section | figure | value | unit | target |")
    print("|---|---|---:|---|---|")
    for name in chosen:
        for row in sections[name](args.quick):
            print(f"| {name} | {row['name']} | {fmt(row['value'])} | {row['unit']} | {row['target']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
