#!/usr/bin/env python3
"""Listening-server benchmarks: a round trip over the Unix socket beside one over stdio, and
how long a client that comes back waits for the first event it missed.

Figures (medians; each beside its baseline, measured in the same run):
- sequential `$/ping` round trips through kward.client over stdio (`kward rpc`, the
  baseline) and over the socket (`kward rpc --listen unix://...`, `Client.connect`);
- reattach to the first replayed event: a client drops while a turn streams; a new one
  connects, initializes, `sessions/attach`es and asks `turns/events` for what it missed;
  the time from `connect` to that answer (the baseline: the same client's `$/ping` after
  `initialize`, the floor of any answer).

    python3 tools/bench_listen.py [--quick]
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bench import round_trips  # noqa: E402
from kward.client import Client  # noqa: E402
from lib.rpc_client import kward_env  # noqa: E402
from lib.scripts import text, wait_for_steer, write_script  # noqa: E402

Row = dict


def _pings(client: Client, n: int) -> list[float]:
    """`n` timed `$/ping` round trips, after 20 unmeasured ones."""
    round_trips(client, 20, "$/ping")
    return round_trips(client, n, "$/ping")


def _daemon(home: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    path = str(home / "run" / "kward.sock")
    proc = subprocess.Popen([sys.executable, "-m", "kward", "rpc", "--listen", f"unix://{path}"], env=env,
                            cwd=home / "ws", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            Client.connect(f"unix://{path}").close()
            return proc, path
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def bench(quick: bool) -> list[Row]:
    n, rounds = (300, 5) if quick else (2000, 15)
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "ws").mkdir()
        script = write_script(home / "scripts", [[text("chunk ", repeat=200, interval=0.001), wait_for_steer(600)]])
        env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
        with Client.spawn(env=env, cwd=home / "ws") as stdio:
            stdio.initialize()
            over_stdio = _pings(stdio, n)
        proc, path = _daemon(home, env)
        try:
            with Client.connect(f"unix://{path}") as sock:
                sock.initialize()
                over_socket = _pings(sock, n)
            reattach, floor = [], []
            for _ in range(rounds):
                first = Client.connect(f"unix://{path}")
                first.initialize()
                session = first.create_session(home / "ws")
                turn = first.start_turn(session["id"], "go")
                with first.subscribe(lambda m: m.get("method") == "turn/event") as events:
                    for message in events:
                        if message["params"]["sequence"] >= 20:
                            break
                first.close()
                t0 = time.perf_counter()
                again = Client.connect(f"unix://{path}")
                again.initialize()
                attached = again.request("sessions/attach", {"sessionId": session["id"]})
                replay = again.turn_events(turn["id"], 20)
                reattach.append(time.perf_counter() - t0)
                assert replay["events"] and attached["turns"]
                t1 = time.perf_counter()
                again.request("$/ping")
                floor.append(time.perf_counter() - t1)
                again.cancel_turn(turn["id"])
                again.close()
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(30)
    return [
        {"name": "$/ping round trip over stdio (kward rpc, baseline)", "value": med(over_stdio) * 1e6, "unit": "us",
         "target": "-"},
        {"name": "$/ping round trip over the Unix socket (--listen, Client.connect)", "value": med(over_socket) * 1e6,
         "unit": "us", "target": "about stdio's"},
        {"name": "reattach: connect + initialize + sessions/attach + turns/events replay", "value": med(reattach) * 1000,
         "unit": "ms", "target": "a few round trips"},
        {"name": "one $/ping round trip on that connection (floor)", "value": med(floor) * 1000, "unit": "ms",
         "target": "-"},
    ]


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.3g} {row['unit']} (target: {row['target']})")
