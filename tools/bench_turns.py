#!/usr/bin/env python3
"""Turn benchmarks over the real `kward rpc` with the Scripted provider.

Figures (each beside a baseline measured in the same run):
- streaming: one turn emitting 100,000 assistant deltas, events/s as read by the client
  (baseline: a process that writes 100,000 ready-made notification frames);
- parallel sessions: 16 sessions each running a 1 s turn at once, total time (baseline:
  one such turn alone);
- cancellation: `turns/cancel` to `turnFinished`, p50/p99 over many cancels of turns blocked
  in a scripted delay and in a `sleep` shell command;
- quick requests: `turns/status` round trip p50/p99 while 8 turns stream (baseline: the
  same with nothing running).

    python3 tools/bench_turns.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from kward.client import Client  # noqa: E402
from kward.rpc.framing import FrameReader, encode_frame  # noqa: E402
from lib.rpc_client import RpcClient, kward_env  # noqa: E402

Row = dict


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def _client(home: Path, script: dict, workers: int = 32) -> RpcClient:
    path = home / f"script-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(script))
    ws = home / "ws"
    ws.mkdir(exist_ok=True)
    env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(path), KWARD_RPC_WORKERS=str(workers))
    c = RpcClient(home, cwd=ws, env=env)
    c.request("initialize")
    return c


def _finished(c: RpcClient, turn_id: str, timeout: float = 120) -> dict:
    return c.wait_notification(lambda n: n["params"]["turnId"] == turn_id and n["params"]["type"] == "turnFinished",
                               timeout)


BASELINE_WRITER = r'''
import json, os, sys
n = int(sys.argv[1])
sys.stdin.buffer.read(1)  # the client is subscribed: go
out = os.fdopen(1, "wb", buffering=1 << 16)
for i in range(n):
    body = json.dumps({"jsonrpc": "2.0", "method": "turn/event", "params": {"sequence": i + 1, "timestamp": "2026-01-01T00:00:00.000Z",
        "sessionId": "s", "turnId": "t", "type": "assistantDelta", "payload": {"delta": "x"}}}).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
out.flush()
'''


def bench_streaming(home: Path, n: int) -> list[Row]:
    script = home / "stream.json"
    script.write_text(json.dumps({"loop": True, "steps": [[{"type": "text", "text": "x", "repeat": n}]]}))
    (home / "ws").mkdir(exist_ok=True)
    env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    rates, base = [], []
    for _ in range(3):
        with Client.spawn(None, env=env, cwd=home / "ws") as client:
            client.request("initialize")
            sid = client.request("sessions/create")["id"]
            t0 = time.perf_counter()
            seqs, deltas = [], 0
            for event in client.turn(sid, "go", timeout=120):
                seqs.append(event["sequence"])
                deltas += event["type"] == "assistantDelta"
            rates.append(len(seqs) / (time.perf_counter() - t0))
        assert seqs == list(range(1, len(seqs) + 1)) and deltas == n, (len(seqs), deltas)
        with Client.spawn([sys.executable, "-c", BASELINE_WRITER, str(n)], env=env, cwd=home) as client:
            events = client.subscribe()
            client.notify("go")
            t0 = time.perf_counter()
            for _ in range(n):
                events.get(60)
            base.append(n / (time.perf_counter() - t0))
    return [
        {"name": f"baseline: {n:,} ready-made notification frames read by the same client",
         "value": statistics.median(base), "unit": "events/s", "target": "-"},
        {"name": f"one scripted turn streaming {n:,} deltas, complete and in order (median of 3)",
         "value": statistics.median(rates), "unit": "events/s", "target": ">= 20,000"},
    ]


def bench_parallel(home: Path, sessions: int = 16, seconds: float = 1.0) -> list[Row]:
    script = {"loop": True, "steps": [[{"type": "delay", "seconds": seconds}, {"type": "text", "text": "done"}]]}
    c = _client(home, script)
    one = c.request("sessions/create")
    t0 = time.perf_counter()
    _finished(c, c.request("turns/start", {"sessionId": one["id"], "input": "x"})["id"])
    single = time.perf_counter() - t0
    ids = [c.request("sessions/create", {"name": f"s{i}"})["id"] for i in range(sessions)]
    t0 = time.perf_counter()
    turns = [c.request("turns/start", {"sessionId": sid, "input": "x"})["id"] for sid in ids]
    for tid in turns:
        _finished(c, tid)
    total = time.perf_counter() - t0
    c.close()
    return [
        {"name": f"baseline: one session running a {seconds:g} s scripted turn", "value": single, "unit": "s", "target": "-"},
        {"name": f"{sessions} sessions running that turn at once, all finished", "value": total, "unit": "s",
         "target": "about the baseline"},
    ]


def bench_cancel(home: Path, rounds: int) -> list[Row]:
    rows = []
    for label, step in (("scripted delay", {"type": "delay", "seconds": 60}),
                        ("shell `sleep 60`", {"type": "toolCall", "name": "run_shell_command",
                                              "arguments": {"command": "sleep 60"}})):
        c = _client(home, {"loop": True, "steps": [[step], [{"type": "text", "text": "after"}]]})
        lat = []
        for _ in range(rounds):
            s = c.request("sessions/create")
            turn = c.request("turns/start", {"sessionId": s["id"], "input": "x"})
            if label.startswith("shell"):
                c.wait_notification(lambda n: n["params"]["turnId"] == turn["id"] and n["params"]["type"] == "toolCall")
            else:
                c.wait_notification(lambda n: n["params"]["turnId"] == turn["id"] and n["params"]["type"] == "turnStarted")
            t0 = time.perf_counter()
            c.request("turns/cancel", {"turnId": turn["id"]})
            done = _finished(c, turn["id"])
            lat.append(time.perf_counter() - t0)
            assert done["params"]["payload"]["status"] == "canceled"
        c.close()
        rows += [{"name": f"turns/cancel -> turnFinished, running turn in a {label}, p50 ({rounds} runs)",
                  "value": percentile(lat, 50) * 1000, "unit": "ms", "target": "-"},
                 {"name": f"turns/cancel -> turnFinished, running turn in a {label}, p99",
                  "value": percentile(lat, 99) * 1000, "unit": "ms", "target": "<= 200"}]
    return rows


class ThreadedPeer:
    """A lean client (kward's framing, a reader thread that decodes only responses and
    counts notifications by prefix), so that request latency is measured while events
    stream at full speed: kward.client would decode every event on the way."""

    def __init__(self, argv: list[str], env: dict, cwd: Path):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
        self.next_id = 0
        self.cond = threading.Condition()
        self.responses: dict[int, dict] = {}
        self.finished: set[str] = set()
        self.notifications = 0
        threading.Thread(target=self._loop, daemon=True).start()

    def send(self, method: str, params: dict | None = None) -> int:
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}).encode()
        self.p.stdin.write(encode_frame(body))
        self.p.stdin.flush()
        return self.next_id

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(30)
        self.p.stdout.close()

    def _loop(self) -> None:
        frames = FrameReader(self.p.stdout, 1 << 31)
        while True:
            body = frames.read()
            if body is None:
                return
            if body.startswith(b'{"jsonrpc":"2.0","id"'):
                arrived = time.perf_counter()  # stamped here: the waiting thread may wake later
                msg = json.loads(body)
                msg["_arrived"] = arrived
                with self.cond:
                    self.responses[msg["id"]] = msg
                    self.cond.notify_all()
            else:
                self.notifications += 1
                if b'"turnFinished"' in body:
                    with self.cond:
                        self.finished.add(json.loads(body)["params"]["turnId"])
                        self.cond.notify_all()

    def call(self, method: str, params: dict | None = None) -> dict:
        return self.timed_call(method, params)[0]

    def timed_call(self, method: str, params: dict | None = None) -> tuple[dict, float]:
        """(result, seconds from writing the request to reading the response frame)."""
        sent = time.perf_counter()
        rid = self.send(method, params)
        with self.cond:
            self.cond.wait_for(lambda: rid in self.responses, 60)
            msg = self.responses.pop(rid)
        if "error" in msg:
            raise RuntimeError(msg["error"]["message"])
        return msg["result"], msg["_arrived"] - sent

    def wait_finished(self, turn_ids: list[str]) -> None:
        with self.cond:
            self.cond.wait_for(lambda: all(t in self.finished for t in turn_ids), 120)


def bench_quick_while_streaming(home: Path, samples: int, interval: float = 0.0) -> list[Row]:
    """`interval` 0: the 8 turns stream flat out (CPU-bound, the worst case for the GIL);
    otherwise each streams one delta every `interval` seconds, like a fast model."""
    script = home / f"busy-{interval}.json"
    script.write_text(json.dumps({"loop": True, "steps": [[{"type": "text", "text": "stream ", "repeat": 200_000,
                                                             "interval": interval}]]}))
    (home / "ws").mkdir(exist_ok=True)
    env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    peer = ThreadedPeer([sys.executable, "-m", "kward", "rpc"], env, home / "ws")
    peer.call("initialize")
    ids = [peer.call("sessions/create", {"name": f"s{i}"})["id"] for i in range(9)]

    def status_latencies(turn_id: str) -> list[float]:
        return [peer.timed_call("turns/status", {"turnId": turn_id})[1] for _ in range(samples)]

    probe = peer.call("turns/start", {"sessionId": ids[0], "input": "x"})["id"]
    peer.call("turns/cancel", {"turnId": probe})
    peer.wait_finished([probe])
    idle = status_latencies(probe)
    busy_turns, refusals = [], 0
    for sid in ids[1:]:
        while True:  # a client is expected to back off and retry when told "overloaded"
            try:
                busy_turns.append(peer.call("turns/start", {"sessionId": sid, "input": "x"})["id"])
                break
            except RuntimeError:
                refusals += 1
                time.sleep(0.01)
    before = peer.notifications
    busy = status_latencies(probe)
    streamed = peer.notifications - before
    running = sum(1 for t in busy_turns if peer.call("turns/status", {"turnId": t})["status"] == "running")
    for t in busy_turns:
        peer.call("turns/cancel", {"turnId": t})
    peer.wait_finished(busy_turns)
    peer.close()
    pace = f"paced, a delta every {interval * 1000:g} ms each" if interval else "flat out, CPU-bound"
    return [
        {"name": f"baseline: turns/status round trip p99, nothing running ({samples} requests)",
         "value": percentile(idle, 99) * 1000, "unit": "ms", "target": "-"},
        {"name": f"turns/status round trip p50 while 8 turns stream ({pace})", "value": percentile(busy, 50) * 1000,
         "unit": "ms", "target": "-"},
        {"name": f"turns/status round trip p99 while 8 turns stream ({pace}; {streamed:,} events arrived meanwhile, "
                 f"{running} of 8 still streaming at the end; {refusals} overloaded refusals while starting)",
         "value": percentile(busy, 99) * 1000, "unit": "ms", "target": "<= 5"},
    ]


def bench(quick: bool = False) -> list[Row]:
    home = Path(tempfile.mkdtemp(prefix="kward-bench-turns-"))
    rows = bench_streaming(home, 100_000)
    rows += bench_parallel(home)
    rows += bench_cancel(home, 10 if quick else 40)
    rows += bench_quick_while_streaming(home, 200 if quick else 1000, interval=0.001)
    rows += bench_quick_while_streaming(home, 200 if quick else 1000)
    return rows


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})", flush=True)
