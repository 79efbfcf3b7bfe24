"""List-refresh benchmarks: what a UI really pays to refresh its session list after a turn.

`bench(quick) -> rows` for tools/bench.py (section `list`); `python3 tools/bench_list.py
[--quick]` prints the rows alone. The building blocks (`make_fixtures`, `list_refresh`,
`bare_run`, `interleaved`) are shared with tools/bench_trees.py and use the wire protocol
only (tools/rpc_peer.py), never kward's Python API, so they measure old trees too.

One list refresh is one fresh process: spawn -> `initialize` -> its response ->
`sessions/list {workspaceRoot, limit: 20}` -> its response -> stdin closed -> the process
has exited and is reaped. Figures of each run:

- wall: spawn to reaped (the whole process, start-up and shutdown included);
- list round trip: `sessions/list` written to its response read;
- CPU: the child's user + system seconds (`os.wait4`), threads included.

Measured for the installed console script `kward rpc` of bench_startup.venv() (the working
tree's wheel in a fresh venv), beside, in the same rounds and in a shuffled order each
round: `python3 -c pass` of the venv's interpreter, and the floor (tools/floor_list.py run
by that interpreter: the same answer from the same files, with nothing but the work). Two
workspaces: 10 sessions and 1,000 sessions, each session made through the protocol
(Scripted provider: `sessions/create` then one short turn, waited for until its
`turnFinished`), once per run, in a temp HOME (never ~/.kward; keyring's fail backend; no
network). The floor's answer is compared with kward's: the ratio rows mean something only
when both list the same sessions.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))

from rpc_peer import Peer, PeerError, clean_env  # noqa: E402

FLOOR = TOOLS / "floor_list.py"
COUNTS = (10, 1000)
LIMIT = 20
TEXT_SCRIPT = {"loop": True, "steps": [[{"type": "text", "text": "Hello there."}]]}
LANES = 4  # processes creating the bigger fixture side by side


class Fixtures:
    """Session files made through the protocol: `config` is the config dir (its
    `sessions/` holds them), `workspaces[n]` the workspace holding `n` sessions."""

    def __init__(self, base: Path):
        self.base = base
        self.config = base / "kward-config"
        self.workspaces: dict[int, Path] = {}

    def env(self, **extra: str) -> dict[str, str]:
        return clean_env(self.base, self.config, **extra)

    def snapshot(self) -> list[tuple[str, int, int]]:
        return snapshot(self.config)


def snapshot(config: Path) -> list[tuple[str, int, int]]:
    """(relative path, size, mtime_ns) of every file under `config/sessions/`: listing
    must change none of them."""
    root = config / "sessions"
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in root.rglob("*") if p.is_file())


def write_script(path: Path, script: dict) -> Path:
    path.write_text(json.dumps(script))
    return path


def _lane(argv: list[str], env: dict, ws: Path, first: int, count: int, errors: list[str]) -> None:
    """Sessions `first` .. `first+count-1` of `ws` in one process, one after the other:
    create, a turn, its turnFinished. (A session with no message yet would be deleted as
    unused by the process's next create, so a lane never creates before the last
    session's turn is done.)"""
    try:
        with Peer(argv, env, ws) as peer:
            peer.call("initialize", {"clientInfo": {"name": "kward-bench-fixtures", "version": "1"}})
            for i in range(first, first + count):
                sid = peer.call("sessions/create", {"workspaceRoot": str(ws)})["id"]
                peer.call("turns/start", {"sessionId": sid, "input": f"Session {i}: what does this project do?"})
                _, done = peer.turn_event(sid, "turnFinished")
                if done["params"]["payload"].get("status") != "completed":
                    raise PeerError(f"fixture turn ended {done['params']['payload']}")
    except Exception as exc:  # reported by make_fixtures
        errors.append(f"{type(exc).__name__}: {exc}")


def make_fixtures(argv: list[str], base: Path, counts: tuple[int, ...] = COUNTS) -> Fixtures:
    """Make the workspaces and their sessions with the server `argv` (a `kward rpc`)."""
    base.mkdir(parents=True, exist_ok=True)
    fx = Fixtures(base)
    env = fx.env(KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(write_script(base / "fixture-script.json", TEXT_SCRIPT)))
    for n in counts:
        ws = base / f"ws{n}"
        ws.mkdir()
        (ws / "README.md").write_text("# Widget\n\nA small project.\n")
        lanes = min(LANES, n)
        errors: list[str] = []
        threads = [threading.Thread(target=_lane, args=(argv, env, ws, k * n // lanes, (k + 1) * n // lanes
                                                        - k * n // lanes, errors)) for k in range(lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(f"making {n} sessions failed: {errors[0]}")
        made = list((fx.config / "sessions").glob(f"*{ws.name}--/*.jsonl"))
        if len(made) != n:
            raise RuntimeError(f"{len(made)} session files for {ws}, expected {n}")
        fx.workspaces[n] = ws
    return fx


def list_refresh(argv: list[str], env: dict, ws: Path) -> dict:
    """One refresh (see the module docstring): {"wall", "init", "rt", "cpu"} in seconds and
    the `answer` (the sessions/list result). `init` is spawn to the initialize response."""
    with Peer(argv, env, ws) as peer:
        rid, _ = peer.send("initialize", {"clientInfo": {"name": "kward-bench", "version": "1"}})
        t_init, _ = peer.response(rid)
        rid, t_sent = peer.send("sessions/list", {"workspaceRoot": str(ws), "limit": LIMIT})
        t_list, answer = peer.response(rid)
        code = peer.close()
    if code != 0:
        raise PeerError(f"{argv[0]} exited {code}")
    return {"wall": peer.t_exit - peer.t_spawn, "init": t_init - peer.t_spawn, "rt": t_list - t_sent,
            "cpu": peer.cpu, "answer": answer}


def bare_run(argv: list[str], env: dict, cwd: Path) -> dict:
    """A process that reads nothing (`python3 -c pass`), on the same pipes: {"wall", "cpu"}."""
    peer = Peer(argv, env, cwd)
    peer.close()
    return {"wall": peer.t_exit - peer.t_spawn, "cpu": peer.cpu}


def interleaved(rounds: int, cases: Mapping[Any, Callable[[], dict]], seed: int = 1) -> dict[Any, list[dict]]:
    """Every case once per round, in a new shuffled order each round (seeded), so that
    machine noise and the order of runs hit every case alike; each case's results."""
    rng = random.Random(seed)
    results: dict[Any, list[dict]] = {name: [] for name in cases}
    names = list(cases)
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            results[name].append(cases[name]())
    return results


def med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def same_answer(a: dict, b: dict) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _row(name: str, value: float, unit: str, target: str = "-") -> dict:
    return {"name": name, "value": value, "unit": unit, "target": target}


def bench(quick: bool = False) -> list[dict]:
    from bench_startup import venv

    v = venv()
    py, kward = str(v["python"]), [str(v["kward"]), "rpc"]
    rounds = 10 if quick else 21
    base = Path(tempfile.mkdtemp(prefix="kward-bench-list-")).resolve()
    try:
        fx = make_fixtures(kward, base)
        env = fx.env(KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(base / "fixture-script.json"))
        before = fx.snapshot()
        cases: dict[str, Callable[[], dict]] = {"pass": lambda: bare_run([py, "-c", "pass"], env, base)}
        for n, ws in fx.workspaces.items():
            cases[f"floor{n}"] = lambda ws=ws: list_refresh([py, str(FLOOR)], env, ws)
            cases[f"kward{n}"] = lambda ws=ws: list_refresh(kward, env, ws)
        for case in cases.values():
            case()  # one untimed round: first-start effects (config dir, page cache) out of the figures
        res = interleaved(rounds, cases)
        unchanged = fx.snapshot() == before
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = [_row(f"venv baseline: python3 -c pass, spawn to reaped (median of {rounds})",
                 med(res["pass"], "wall") * 1000, "ms"),
            _row("venv baseline: python3 -c pass, CPU user+sys", med(res["pass"], "cpu") * 1000, "ms")]
    for n in fx.workspaces:
        floor, kw = res[f"floor{n}"], res[f"kward{n}"]
        what = f"{n:,} sessions, limit {LIMIT}"
        same = all(same_answer(a["answer"], b["answer"]) for a, b in zip(floor, kw))
        for key, label in (("wall", "spawn -> initialize -> sessions/list answered -> exit, wall"),
                           ("rt", "sessions/list round trip"), ("cpu", "whole process CPU user+sys")):
            rows.append(_row(f"floor ({what}): {label} (median of {rounds})", med(floor, key) * 1000, "ms"))
            rows.append(_row(f"installed `kward rpc` ({what}): {label} (median of {rounds})", med(kw, key) * 1000,
                             "ms"))
            rows.append(_row(f"installed `kward rpc` ({what}): {label} / floor", med(kw, key) / med(floor, key), "x",
                             "<= 2.5x floor"))
        rows.append(_row(f"installed `kward rpc` ({what}): spawn to initialize response (median of {rounds})",
                         med(kw, "init") * 1000, "ms"))
        rows.append(_row(f"{what}: kward's answer identical to the floor's in every run (1 = yes)", float(same), "",
                         "1"))
    rows.append(_row("session files unchanged by all the listing (1 = yes)", float(unchanged), "", "1"))
    return rows


if __name__ == "__main__":
    for r in bench("--quick" in sys.argv):
        print(f"{r['name']}: {r['value']:.4g} {r['unit']} (target {r['target']})", flush=True)
