"""Warm-up benchmarks: the first requests of a fresh `kward rpc`, with and without the
warm-up (kward/rpc/warmup.py; off with KWARD_NO_WARMUP=1).

`bench(quick)` returns rows for `tools/bench.py` (section `warmup`). Every process is the
installed `kward rpc` of bench_startup's virtual environment, with a fresh HOME, driven
by `kward.client` (one request at a time; `initialize` alone, as before the library).

The warm-up starts once the client was given a session (sessions/create, resume, clone,
fork) and has been quiet for 50 ms, never in a process that only answers `initialize` and a
list.

- First turn vs warm turn: initialize, `sessions/create` (timed: it loads the session
  store), then the client is idle for `IDLE` seconds (a user typing; the warm-up runs
  meanwhile), then three turns of one text answer; the first turn (`turns/start` written
  to `turnFinished` read) against the third, median over fresh processes. With the
  Scripted provider and with a loopback fake OpenRouter (the HTTP stack: `requests`).
- Requests into the warm-up: `sessions/list` written right after the `sessions/create`
  response was read (the warm-up has not started: it waits for 50 ms of quiet), 60 ms
  after it (the warm-up has been importing for about 10 ms: the request meets it and
  pauses it) and 100 ms after it, each with and without the warm-up, median over fresh
  processes.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))  # kward.client from this checkout, whichever kward it starts

from bench_startup import user_env, venv  # noqa: E402
from kward.client import Client  # noqa: E402

IDLE = 0.5  # seconds between the sessions/create response and the first turn
MEET_DELAY = 0.06  # seconds: into the warm-up (which starts after 0.05 s of quiet)
LATER_DELAY = 0.1  # seconds: the warm-up has imported the session store by then


def _turn(client: Client, session: str) -> float:
    """Seconds from `turns/start` written to its `turnFinished` read."""
    t0 = time.perf_counter()
    *_, done = client.turn(session, "hello", timeout=60)
    assert done["payload"]["status"] == "completed", done
    return time.perf_counter() - t0


def _turns(kward: str, env: dict, work: Path, before_turn=None) -> tuple[float, float, float]:
    """(first sessions/create, first turn, third turn) seconds of one fresh process."""
    with Client.spawn([kward, "rpc"], env=env, cwd=work) as client:
        client.request("initialize", {})
        t0 = time.perf_counter()
        session = client.request("sessions/create", {"workspaceRoot": str(work)})["id"]
        create = time.perf_counter() - t0
        time.sleep(IDLE)  # the client is idle (a user typing): what the warm-up waits for
        times = []
        for _ in range(3):
            if before_turn is not None:
                before_turn()
            times.append(_turn(client, session))
    return create, times[0], times[2]


def _list_after(kward: str, env: dict, work: Path, delay: float) -> float:
    with Client.spawn([kward, "rpc"], env=env, cwd=work) as client:
        client.request("initialize", {})
        client.request("sessions/create", {"workspaceRoot": str(work)})
        if delay:
            time.sleep(delay)  # the moment the request is sent, not a synchronisation
        t0 = time.perf_counter()
        client.request("sessions/list", {"limit": 20})
        return time.perf_counter() - t0


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
                row(f"{label}, {what}: first sessions/create (median of {runs} processes)",
                    _median_ms(r[0] for r in results))
                row(f"{label}, {what}: first turn {IDLE:g} s after it, turns/start to turnFinished", first)
                row(f"{label}, {what}: warm turn (the third)", third)
                row(f"{label}, {what}: first turn - warm turn", first - third, "ms",
                    "<= ~20" if warm else "-")
    times: dict[str, list[float]] = {}
    cases = {}
    for warm in (True, False):
        env = user_env(Path(tempfile.mkdtemp(prefix="kward-bench-")), **({} if warm else {"KWARD_NO_WARMUP": "1"}))
        what = "warm-up" if warm else "no warm-up"
        for delay, when in ((0.0, "right after the sessions/create response"),
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
