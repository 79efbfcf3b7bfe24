"""Warm-up benchmarks: the first requests of a fresh `kward rpc`, with and without the
warm-up (kward/rpc/warmup.py; off with KWARD_NO_WARMUP=1).

`bench(quick)` returns rows for `tools/bench.py` (section `warmup`). Every process is the
installed `kward rpc` of bench_startup's virtual environment, with a fresh HOME.

- First turn vs warm turn: initialize, then the client is idle for `IDLE` seconds (a user
  typing; the warm-up runs meanwhile), then `sessions/create` and three turns of one text
  answer; the first turn (`turns/start` written to `turnFinished` read) against the
  third, median over fresh processes. With the Scripted provider and with a loopback fake
  OpenRouter (the HTTP stack: `requests`). The first `sessions/create` is shown too.
- Requests at start-up: `sessions/list` written right after the `initialize` response was
  read (the warm-up has not started: it waits for 50 ms of quiet), 60 ms after it (the
  warm-up has been importing for about 10 ms: the request meets it and pauses it) and
  100 ms after it, each with and without the warm-up, median over fresh processes.
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
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))

from bench import frame, read_frame  # noqa: E402
from bench_startup import user_env, venv  # noqa: E402

IDLE = 0.5  # seconds between the initialize response and the first session request
MEET_DELAY = 0.06  # seconds: into the warm-up (which starts after 0.05 s of quiet)
LATER_DELAY = 0.1  # seconds: the warm-up has imported the session store by then


class Proc:
    """One `kward rpc` child and a minimal client of it (one request at a time)."""

    def __init__(self, cmd: list[str], env: dict, cwd: Path):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
        self.next_id = 0

    def send(self, method: str, params: dict | None = None) -> int:
        self.next_id += 1
        self.p.stdin.write(frame({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}))
        self.p.stdin.flush()
        return self.next_id

    def until(self, predicate) -> dict:
        while True:
            msg = read_frame(self.p.stdout)
            assert msg is not None, "kward rpc ended"
            if predicate(msg):
                return msg

    def request(self, method: str, params: dict | None = None) -> dict:
        rid = self.send(method, params)
        msg = self.until(lambda m: m.get("id") == rid)
        assert "result" in msg, msg
        return msg["result"]

    def timed(self, method: str, params: dict | None = None) -> float:
        t0 = time.perf_counter()
        self.request(method, params)
        return time.perf_counter() - t0

    def turn(self, session: str) -> float:
        t0 = time.perf_counter()
        self.send("turns/start", {"sessionId": session, "input": "hello"})
        done = self.until(lambda m: m.get("method") == "turn/event" and m["params"]["type"] == "turnFinished")
        assert done["params"]["payload"]["status"] == "completed", done
        return time.perf_counter() - t0

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(10)
        self.p.stdout.close()


def _turns(kward: str, env: dict, work: Path, before_turn=None) -> tuple[float, float, float]:
    """(first sessions/create, first turn, third turn) seconds of one fresh process."""
    proc = Proc([kward, "rpc"], env, work)
    proc.request("initialize")
    time.sleep(IDLE)  # the client is idle (a user typing): what the warm-up waits for
    t0 = time.perf_counter()
    session = proc.request("sessions/create", {"workspaceRoot": str(work)})["id"]
    create = time.perf_counter() - t0
    times = []
    for _ in range(3):
        if before_turn is not None:
            before_turn()
        times.append(proc.turn(session))
    proc.close()
    return create, times[0], times[2]


def _list_after(kward: str, env: dict, work: Path, delay: float) -> float:
    proc = Proc([kward, "rpc"], env, work)
    proc.request("initialize")
    if delay:
        time.sleep(delay)  # the moment the request is sent, not a synchronisation
    elapsed = proc.timed("sessions/list", {"limit": 20})
    proc.close()
    return elapsed


def _median_ms(values) -> float:
    return statistics.median(values) * 1000


def bench(quick: bool = False) -> list[dict]:
    from lib import fake_openrouter as fo

    runs = 3 if quick else 7
    list_runs = 5 if quick else 15
    v = venv()
    kward = str(v["kward"])
    home = Path(tempfile.mkdtemp(prefix="kward-bench-"))
    work = home / "project"
    work.mkdir()
    (work / "README.md").write_text("# Widget\n")
    script = home / "script.json"
    script.write_text(json.dumps({"steps": [[{"type": "text", "text": "Hello there."}]], "loop": True}))
    rows = []

    def row(name: str, value: float, unit: str = "ms", target: str = "-") -> None:
        rows.append({"name": name, "value": value, "unit": unit, "target": target})

    with fo.FakeOpenRouter() as fake:
        providers = {
            "Scripted provider": ({"KWARD_PROVIDER": "scripted", "KWARD_SCRIPT": str(script)}, None),
            "loopback fake OpenRouter": ({"KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": fake.base_url,
                                          "OPENROUTER_API_KEY": "sk-or-v1-bench-0000000000000000",
                                          "KWARD_RETRY_DELAYS": ""},
                                         lambda: fake.script("chat", fo.text(("Hel", "lo")))),
        }
        for label, (extra, before_turn) in providers.items():
            for warm in (True, False):
                fresh = Path(tempfile.mkdtemp(prefix="kward-bench-"))
                env = user_env(fresh, **extra, **({} if warm else {"KWARD_NO_WARMUP": "1"}))
                results = []
                for _ in range(runs):  # interleaving would share a HOME between the settings
                    results.append(_turns(kward, env, work, before_turn))
                what = "warm-up" if warm else "no warm-up (KWARD_NO_WARMUP=1)"
                first, third = _median_ms(r[1] for r in results), _median_ms(r[2] for r in results)
                row(f"{label}, {what}: first sessions/create after {IDLE:g} s idle (median of {runs} processes)",
                    _median_ms(r[0] for r in results))
                row(f"{label}, {what}: first turn, turns/start to turnFinished", first)
                row(f"{label}, {what}: warm turn (the third)", third)
                row(f"{label}, {what}: first turn - warm turn", first - third, "ms",
                    "<= ~20" if warm else "-")
    times: dict[str, list[float]] = {}
    cases = {}
    for warm in (True, False):
        env = user_env(Path(tempfile.mkdtemp(prefix="kward-bench-")), **({} if warm else {"KWARD_NO_WARMUP": "1"}))
        what = "warm-up" if warm else "no warm-up"
        for delay, when in ((0.0, "right after the initialize response"),
                            (MEET_DELAY, f"{MEET_DELAY * 1000:.0f} ms after it (meets the warm-up)"),
                            (LATER_DELAY, f"{LATER_DELAY * 1000:.0f} ms after it")):
            cases[f"sessions/list sent {when}, {what}: round trip (median of {list_runs} processes)"] = (
                lambda env=env, delay=delay: _list_after(kward, env, work, delay))
    for _ in range(list_runs):
        for name, case in cases.items():
            times.setdefault(name, []).append(case())
    for name, values in times.items():
        row(name, _median_ms(values), "ms", "info")
    return rows


if __name__ == "__main__":
    for r in bench("--quick" in sys.argv):
        print(f"{r['name']}: {r['value']:.4g} {r['unit']} (target {r['target']})", flush=True)
