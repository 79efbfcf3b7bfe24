#!/usr/bin/env python3
"""Several trees of this repository measured in one interleaved run: a markdown table, one
column per tree.

    python3 tools/bench_trees.py [--quick] [--rounds N] [--only rpc|terminal] COMMIT[=LABEL] ... [--worktree]
    python3 tools/bench_trees.py --quick 07c823f 2a10550 WORKTREE
    python3 tools/bench_trees.py --only terminal cf63254=before main=after

A tree is a commit-ish (its sources taken with `git archive`, which changes nothing in the
repository) or the working tree as it is now (`WORKTREE`, `.`, or `--worktree`). Each is
built into a wheel and installed into a venv of its own (tools/tree_venv.py: what a user
gets from pip, byte-compiled), and measured through its installed `kward` console script
over the wire protocol only (tools/rpc_peer.py) or as a user at a terminal does
(tools/bench_terminal.py), so old trees work as well as new ones.
Every figure runs round-robin over the trees, in a shuffled order each round, so machine
noise hits all of them alike; cells are medians, and the notes say of how many runs. A
figure a tree cannot give (a method or event it lacks, a crash) is `n/a` with a note.

Two groups of figures, both by default; `--only rpc` or `--only terminal` runs one.
Every process has a temp HOME and config dir, keyring's fail backend, the Scripted
provider, no network.

The `rpc` group (`kward rpc` driven over its pipes):

- list refresh, 10 and 1,000 sessions: a fresh process, spawn -> `initialize` -> its
  response -> `sessions/list {limit: 20}` -> its response -> stdin closed -> reaped; wall
  (spawn to reaped), list round trip (sessions/list written to its answer read) and CPU
  (user + sys of the child, `os.wait4`). Beside them in the same rounds: `python3 -c pass`
  of each tree's venv and the floor (tools/floor_list.py: the same answer from the same
  files, nothing but the work). The session files are made once, through the protocol, by
  one tree (the last that can); every tree lists its own byte-identical copy (mtimes
  kept), and the table says whether the copies were still unchanged at the end.
- spawn -> `initialize` response: taken from the list-refresh runs (both fixtures), and its
  ratio to the same venv's `python3 -c pass`.
- RSS: VmRSS of the server 1 s after its `initialize` response (stdin kept open meanwhile).
- first turn: a fresh process, `initialize`, `sessions/create`, then at once `turns/start`
  (a script answering text): from writing turns/start to the first `turn/event` of that
  session, and to its `turnFinished`.
- warm tool turn: one long-lived process per tree (all open at once, turns taken in turn
  across trees), 40 turns of one session, each a `read_file` of the workspace's README then
  a text answer: turns/start written to `turnFinished` read, median of turns 6-40.
- pipelined: a fresh process, `initialize`, then 10,000 `workspace/info` requests written
  at once (a writer thread): requests per second from the first byte written to the last
  answer read.

The `terminal` group (tools/bench_terminal.py; its docstring says how each is taken),
`kward` as a user runs it, every run in a fresh copy of a HOME made by one untimed
interactive session of the tree, interleaved with `python3 -c pass` of each venv:

- one-shot `kward PROMPT` (stdin a terminal), stdout a pipe, a short answer and a
  ~200-line Markdown answer streamed in small deltas: spawn -> first answer byte on
  stdout, spawn -> exit, CPU (user + sys, `os.wait4`);
- the same long answer with stdout and stderr a pty, colours on: spawn -> first byte,
  -> its last line shown, -> exit, CPU;
- interactive `kward` on a pty (session leader, the pty its controlling terminal):
  spawn -> first `kward> ` shown; VmRSS of the kward process then; after a second idle, a
  request typed and Enter -> the long answer's last line and the next `kward> ` shown;
  VmRSS then; Ctrl-D -> exited; the session's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))

import bench_terminal  # noqa: E402
from bench_list import (FLOOR, LIMIT, TEXT_SCRIPT, bare_run, interleaved, list_refresh, make_fixtures,  # noqa: E402
                        snapshot, write_script)
from rpc_peer import Peer, PeerError, clean_env, request_frame  # noqa: E402
from tree_venv import REPO, WORKTREE, export_tree, install, resolve_commit  # noqa: E402

TOOL_SCRIPT = {"loop": True, "steps": [[{"type": "toolCall", "name": "read_file", "arguments": {"path": "README.md"}}],
                                       [{"type": "text", "text": "It is a README."}]]}
GROUPS = ("rpc", "terminal")
WARM_TURNS, WARM_FROM = 40, 6
PIPELINED = 10_000
RSS_DELAY = 1.0  # seconds after the initialize response: the figure's definition


class Tree:
    """One tree under test: its venv, its own homes, and the copy of the fixtures it lists."""

    def __init__(self, spec: str, label: str, base: Path):
        self.spec, self.label, self.base = spec, label, base
        self.error: str | None = None
        self.python = ""
        self.kward: list[str] = []
        self.script = ""  # the installed console script
        self.list_config = base / "list-config"
        self.turn_config = base / "turn-config"
        if spec in WORKTREE:
            changed = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"],
                                     capture_output=True, text=True).stdout.splitlines()
            self.describe = f"{resolve_commit('HEAD')[:7]} + {len(changed)} changed or new files"
        else:
            self.describe = resolve_commit(spec)[:7]

    def build(self) -> None:
        v = install(export_tree(self.spec, self.base / "src"), self.base)
        self.python, self.script = str(v["python"]), str(v["kward"])
        self.kward = [self.script, "rpc"]
        if v["completed"]:
            self.describe += f" (its wheel lacks {', '.join(v['completed'])}: copied in)"

    def env(self, config: Path, script: Path) -> dict[str, str]:
        return clean_env(self.base, config, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))


class Case:
    """One measured thing: each call adds a run; after its first failure it runs no more
    and every cell it feeds says n/a."""

    def __init__(self, fn: Callable[[], dict]):
        self.fn = fn
        self.runs: list[dict] = []
        self.error: str | None = None

    def __call__(self) -> dict:
        if self.error is None:
            try:
                self.runs.append(self.fn())
            except Exception as exc:  # an old tree may lack what a figure needs: reported, not fatal
                self.error = describe(exc)
        return {}

    def warm(self) -> None:
        self()
        self.runs.clear()  # first-start effects (config dir, page cache) stay out of the figures

    def median(self, key: str) -> float:
        return statistics.median(r[key] for r in self.runs)


# --- single runs -------------------------------------------------------------------------

def rss_run(tree: Tree, env: dict, ws: Path) -> dict:
    """VmRSS (MiB) of the server RSS_DELAY seconds after its initialize response."""
    with Peer(tree.kward, env, ws) as peer:
        peer.call("initialize", {})
        time.sleep(RSS_DELAY)  # not a synchronisation: the moment the figure is defined at
        status = Path(f"/proc/{peer.pid}/status").read_text()
        return {"rss": int(status.split("VmRSS:")[1].split()[0]) / 1024}


def finished_ok(event: dict) -> None:
    payload = event["params"].get("payload") or {}
    if payload.get("status") != "completed":
        raise PeerError(f"turn ended {payload.get('status')}: {payload.get('error')}")


def first_turn_run(tree: Tree, env: dict, ws: Path) -> dict:
    with Peer(tree.kward, env, ws) as peer:
        peer.call("initialize", {})
        sid = peer.call("sessions/create", {"workspaceRoot": str(ws)})["id"]
        rid, sent = peer.send("turns/start", {"sessionId": sid, "input": "Say hello."})
        t_first, _ = peer.turn_event(sid, timeout=30)
        t_done, done = peer.turn_event(sid, "turnFinished", timeout=30)
        _, turn = peer.response(rid)
        if done["params"].get("turnId") != turn.get("id"):
            raise PeerError("turnFinished of another turn")
        finished_ok(done)
    return {"first": t_first - sent, "done": t_done - sent}


def tool_turn(peer: Peer, sid: str) -> float:
    """One turn of TOOL_SCRIPT: seconds from turns/start written to turnFinished read."""
    rid, sent = peer.send("turns/start", {"sessionId": sid, "input": "Read the README."})
    kinds = []
    while True:
        t, event = peer.turn_event(sid, timeout=30)
        p = event["params"]
        kinds.append(p.get("type"))
        if p.get("type") == "toolResult" and (p.get("payload", {}).get("result") or {}).get("isError"):
            raise PeerError(f"read_file failed: {p['payload'].get('content')}")
        if p.get("type") == "turnFinished":
            break
    peer.response(rid)
    finished_ok(event)
    if "toolResult" not in kinds:
        raise PeerError(f"no toolResult event among {kinds}")
    return t - sent


def pipelined_run(tree: Tree, env: dict, ws: Path, n: int = PIPELINED) -> dict:
    with Peer(tree.kward, env, ws) as peer:
        peer.call("initialize", {})
        data = b"".join(request_frame(peer.next_id + 1 + i, "workspace/info") for i in range(n))
        peer.next_id += n
        writer = threading.Thread(target=peer.write, args=(data,))
        t0 = time.perf_counter()
        writer.start()
        try:
            answered = 0
            while answered < n:
                t, msg = peer.read(t0 + 120)
                if "method" in msg:
                    continue  # a notification
                if "result" not in msg:
                    raise PeerError(f"workspace/info failed: {msg.get('error')}")
                answered += 1
        except BaseException:
            peer.kill()  # a writer blocked on a stalled child gets EPIPE and ends
            raise
        finally:
            writer.join()
    return {"rate": n / (t - t0)}


# --- figures over all trees --------------------------------------------------------------

def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def warm_turns(trees: list[Tree], env_of: Callable[[Tree], dict], ws: Path, rounds: int) -> dict[str, Case]:
    """Per tree, the durations of turns WARM_FROM..WARM_TURNS of `rounds` long-lived processes."""
    cases = {t.label: Case(dict) for t in trees}
    rng = random.Random(2)
    for _ in range(rounds):
        with ExitStack() as stack:  # every process is reaped, whatever happens
            live: dict[str, tuple[Peer, str]] = {}
            for tree in trees:
                if cases[tree.label].error is None:
                    try:
                        peer = stack.enter_context(Peer(tree.kward, env_of(tree), ws))
                        peer.call("initialize", {})
                        live[tree.label] = peer, peer.call("sessions/create", {"workspaceRoot": str(ws)})["id"]
                    except Exception as exc:
                        cases[tree.label].error = describe(exc)
            for i in range(1, WARM_TURNS + 1):
                labels = list(live)
                rng.shuffle(labels)
                for label in labels:
                    peer, sid = live[label]
                    try:
                        took = tool_turn(peer, sid)
                    except Exception as exc:
                        cases[label].error = describe(exc)
                        peer.kill()
                        del live[label]
                        continue
                    if i >= WARM_FROM:
                        cases[label].runs.append({"turn": took})
    return cases


def ms(case: Case, key: str) -> float:
    return case.median(key) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", metavar="COMMIT[=LABEL]")
    ap.add_argument("--worktree", action="store_true", help="measure the working tree too (as WORKTREE)")
    ap.add_argument("--quick", action="store_true", help="fewer runs")
    ap.add_argument("--rounds", type=int, help="rounds of the list-refresh and terminal figures (default 10 quick, 21)")
    ap.add_argument("--only", choices=GROUPS, help="run one group of figures (default: both)")
    args = ap.parse_args()
    specs = args.trees + (["WORKTREE"] if args.worktree else [])
    if not specs:
        ap.error("name at least one tree")
    rounds = args.rounds or (10 if args.quick else 21)
    runs = {"list": rounds, "rss": max(3, rounds // 3), "turn": max(5, rounds // 2), "warm": 1 if args.quick else 3,
            "pipe": 3 if args.quick else 5, "term": rounds}  # rounds of each figure (warm: processes per tree)
    base = Path(tempfile.mkdtemp(prefix="kward-bench-trees-")).resolve()
    try:
        trees = []
        for i, item in enumerate(specs):
            spec, _, label = item.partition("=")
            try:
                trees.append(Tree(spec, label or ("WORKTREE" if spec in WORKTREE else spec), base / f"tree{i}"))
            except ValueError as exc:
                ap.error(str(exc))
        if len({t.label for t in trees}) != len(trees):
            ap.error("two trees have the same label: name them COMMIT=LABEL")
        return run(trees, base, runs, (args.only,) if args.only else GROUPS)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class RpcRun:
    """What the rpc group's table needs besides its cases."""

    def __init__(self, fx: Any, maker: Tree, original: list, warm: dict[str, Case]):
        self.fx, self.maker, self.original, self.warm = fx, maker, original, warm


def run(trees: list[Tree], base: Path, runs: dict[str, int], groups: tuple[str, ...]) -> int:
    for tree in trees:
        log(f"building {tree.label} ({tree.describe})")
        try:
            tree.build()
        except Exception as exc:
            log(f"  build failed: {exc}")
            tree.error = f"build failed: {exc}".splitlines()[0][:200]
    ok = [t for t in trees if t.error is None]
    cases: dict[Any, Case] = {}
    rpc = None
    if "rpc" in groups:
        rpc = run_rpc(ok, base, runs, cases)
        if rpc is None:
            return 1
    if "terminal" in groups:
        run_terminal(ok, base, runs, cases)
    print_table(trees, cases, rpc, runs)
    return 0


def run_terminal(ok: list[Tree], base: Path, runs: dict[str, int], cases: dict[Any, Case]) -> None:
    """The terminal group's cases, keyed (kind, label); `python3 -c pass` beside them
    when the rpc group did not measure it."""
    log(f"terminal figures: {runs['term']} rounds")
    term: dict[Any, Case] = {}
    for tree in ok:
        runner = bench_terminal.Runner(tree.script, tree.base / "terminal")
        setup_error = None
        try:
            runner.setup()
        except Exception as exc:
            setup_error = f"the untimed first interactive session failed: {describe(exc)}"
        for kind in bench_terminal.KINDS:
            case = term[kind, tree.label] = Case(runner.case(kind))
            case.error = setup_error
        if ("pass", tree.label) not in cases:
            term["pass", tree.label] = Case(lambda t=tree: bare_run([t.python, "-c", "pass"], clean_env(t.base), base))
    for case in term.values():
        case.warm()
    interleaved(runs["term"], term)
    cases.update(term)


def run_rpc(ok: list[Tree], base: Path, runs: dict[str, int], out: dict[Any, Case]) -> RpcRun | None:
    """The rpc group's cases (added to `out`); None when no tree could make the fixtures."""
    rounds = runs["list"]
    cases: dict[Any, Case] = {}
    fx = maker = None
    for tree in reversed(ok):
        log(f"making the session fixtures with {tree.label}")
        try:
            fx, maker = make_fixtures(tree.kward, base / "fixtures"), tree
            break
        except Exception as exc:
            log(f"  failed: {exc}")
            shutil.rmtree(base / "fixtures", ignore_errors=True)
    if fx is None or maker is None:
        log("no tree could make the session fixtures")
        return None
    script, tools_script = write_script(base / "text.json", TEXT_SCRIPT), write_script(base / "tool.json", TOOL_SCRIPT)
    original = snapshot(fx.config)
    for tree in ok:
        shutil.copytree(fx.config / "sessions", tree.list_config / "sessions")  # copy2: mtimes kept
        assert snapshot(tree.list_config) == original, "the fixture copy differs from its original"
    ws_turns = base / "ws-turns"
    ws_turns.mkdir()
    (ws_turns / "README.md").write_text("# Widget\n\nA small project.\n")
    floor_env = fx.env(KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    floor_py = ok[0].python  # the floor runs with the first tree's venv interpreter

    log(f"list refresh: {rounds} rounds")
    for n, ws in fx.workspaces.items():
        cases["floor", n] = Case(lambda ws=ws: list_refresh([floor_py, str(FLOOR)], floor_env, ws))
    for tree in ok:
        env = tree.env(tree.list_config, script)
        cases["pass", tree.label] = Case(lambda t=tree, env=env: bare_run([t.python, "-c", "pass"], env, base))
        for n, ws in fx.workspaces.items():
            cases["list", tree.label, n] = Case(lambda t=tree, env=env, ws=ws: list_refresh(t.kward, env, ws))
    for case in cases.values():
        case.warm()
    interleaved(rounds, cases)
    log(f"RSS 1 s after initialize: {runs['rss']} rounds; first turn: {runs['turn']} rounds")
    for tree in ok:
        cases["rss", tree.label] = Case(lambda t=tree: rss_run(t, t.env(t.turn_config, script), ws_turns))
        cases["turn", tree.label] = Case(lambda t=tree: first_turn_run(t, t.env(t.turn_config, script), ws_turns))
        cases["turn", tree.label].warm()
    interleaved(runs["rss"], {k: c for k, c in cases.items() if k[0] == "rss"})
    interleaved(runs["turn"], {k: c for k, c in cases.items() if k[0] == "turn"})
    log(f"warm tool turns: {runs['warm']} process(es) per tree; pipelined: {runs['pipe']} runs")
    warm = warm_turns(ok, lambda t: t.env(t.turn_config, tools_script), ws_turns, runs["warm"])
    for tree in ok:
        cases["pipe", tree.label] = Case(lambda t=tree: pipelined_run(t, t.env(t.turn_config, script), ws_turns))
    interleaved(runs["pipe"], {k: c for k, c in cases.items() if k[0] == "pipe"})

    for tree in ok:  # spawn -> initialize response, pooled from both fixtures' list runs
        lists = [cases["list", tree.label, n] for n in fx.workspaces]
        base_wall = cases["pass", tree.label].median("wall") if cases["pass", tree.label].runs else float("nan")
        init = cases["init", tree.label] = Case(dict)
        init.error = next((c.error for c in lists if c.error), None)
        init.runs = [{"init": r["init"], "ratio": r["init"] / base_wall} for c in lists for r in c.runs]
    out.update(cases)
    return RpcRun(fx, maker, original, warm)


def print_table(trees: list[Tree], cases: dict[Any, Case], rpc: RpcRun | None, runs: dict[str, int]) -> None:
    notes: list[str] = []
    rows: list[tuple[str, Callable[[Tree], str]]] = [("tree", lambda t: t.describe)]
    warm = rpc.warm if rpc else {}

    def cell(tree: Tree, key: tuple, value: Callable[[Case, Tree], str]) -> str:
        case = warm.get(tree.label) if key == ("warm",) else cases.get((key[0], tree.label, *key[1:]))
        error = tree.error or (case.error if case is not None else "not measured")
        if error is None and case is not None and case.runs:
            return value(case, tree)
        if error not in notes:
            notes.append(error)
        return f"n/a [{notes.index(error) + 1}]"

    def add(name: str, key: tuple, value: Callable[[Case, Tree], str]) -> None:
        rows.append((name, lambda t: cell(t, key, value)))

    pass_runs = runs["list"] if rpc else runs["term"]
    add(f"venv `python3 -c pass`, spawn to reaped, ms ({pass_runs})", ("pass",), lambda c, t: f"{ms(c, 'wall'):.1f}")
    if rpc:
        rpc_rows(add, rows, cases, rpc, runs)
    if any(k[0] in bench_terminal.KINDS for k in cases):
        for kind, key, label, unit in bench_terminal.TABLE_ROWS:
            add(f"{label} ({runs['term']})", (kind,), lambda c, t, key=key, unit=unit:
                f"{ms(c, key):.1f}" if unit == "ms" else f"{c.median(key):.1f}")

    fixtures = f"session fixtures made by {rpc.maker.label}; sessions/list limit {LIMIT}; " if rpc else ""
    print(f"python {sys.version.split()[0]} on {os.uname().sysname} {os.uname().machine}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.2f} at the end, {time.strftime('%Y-%m-%d %H:%M')}; {fixtures}"
          f"(N): runs per median\n")
    print("| figure | " + " | ".join(t.label for t in trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for name, value in rows:
        print(f"| {name} | " + " | ".join(value(t) for t in trees) + " |")
    first = next((t for t in trees if t.error is None), None)
    if rpc and first:
        print(f"\nThe floor (tools/floor_list.py run by {first.label}'s venv interpreter), in the same rounds:\n")
        print("| floor | wall, ms | sessions/list round trip, ms | CPU user+sys, ms |")
        print("|---|---:|---:|---:|")
        for n in rpc.fx.workspaces:
            c = cases["floor", n]
            values = [f"{ms(c, k):.1f}" for k in ("wall", "rt", "cpu")] if c.runs and not c.error else \
                [f"n/a: {c.error}"] * 3
            print(f"| {n:,} sessions ({runs['list']}) | " + " | ".join(values) + " |")
    if notes:
        print()
        for i, note in enumerate(notes, 1):
            print(f"[{i}] {note}")


def rpc_rows(add: Callable[[str, tuple, Callable[[Case, Tree], str]], None],
             rows: list[tuple[str, Callable[[Tree], str]]], cases: dict[Any, Case], rpc: RpcRun,
             runs: dict[str, int]) -> None:
    """The rpc group's rows (after the `python3 -c pass` row)."""
    rounds, fx = runs["list"], rpc.fx

    def answer_text(answer: dict, config: Path) -> str:
        return json.dumps(answer, sort_keys=True).replace(str(config), "<config>")

    def same_as_floor(c: Case, t: Tree, n: int) -> str:
        floor = answer_text(cases["floor", n].runs[0]["answer"], fx.config) if cases["floor", n].runs else None
        return "yes" if all(answer_text(r["answer"], t.list_config) == floor for r in c.runs) else "no"

    add(f"spawn -> initialize response, ms ({2 * rounds}: the list runs)", ("init",),
        lambda c, t: f"{ms(c, 'init'):.1f}")
    add("spawn -> initialize response / `python3 -c pass`, x", ("init",), lambda c, t: f"{c.median('ratio'):.2f}")
    for n in fx.workspaces:
        floor = cases["floor", n]
        for key, what in (("wall", "wall"), ("rt", "sessions/list round trip"), ("cpu", "CPU user+sys")):
            add(f"list refresh, {n:,} sessions: {what}, ms ({rounds})", ("list", n),
                lambda c, t, key=key: f"{ms(c, key):.1f}")
            add(f"list refresh, {n:,} sessions: {what} / floor, x (target <= 2.5)", ("list", n),
                lambda c, t, key=key, floor=floor: f"{c.median(key) / floor.median(key):.2f}" if floor.runs else "n/a")
        add(f"list refresh, {n:,} sessions: same answer as the floor's", ("list", n),
            lambda c, t, n=n: same_as_floor(c, t, n))
    add(f"RSS 1 s after the initialize response, MiB ({runs['rss']})", ("rss",),
        lambda c, t: f"{c.median('rss'):.1f}")
    add(f"first turn: turns/start -> first turn event, ms ({runs['turn']})", ("turn",),
        lambda c, t: f"{ms(c, 'first'):.1f}")
    add(f"first turn: turns/start -> turnFinished, ms ({runs['turn']})", ("turn",),
        lambda c, t: f"{ms(c, 'done'):.1f}")
    add(f"warm tool turn (read_file, then an answer): turns/start -> turnFinished, ms (turns {WARM_FROM}-"
        f"{WARM_TURNS} of {runs['warm']} process(es) each)", ("warm",), lambda c, t: f"{ms(c, 'turn'):.1f}")
    add(f"pipelined {PIPELINED:,} workspace/info, req/s ({runs['pipe']})", ("pipe",),
        lambda c, t: f"{c.median('rate'):,.0f}")
    rows.append(("session fixtures unchanged after the run",
                 lambda t: "n/a" if t.error else "yes" if snapshot(t.list_config) == rpc.original else "no"))


if __name__ == "__main__":
    sys.exit(main())
