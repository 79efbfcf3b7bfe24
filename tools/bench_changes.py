#!/usr/bin/env python3
"""Changed-file detection benchmarks: what `kward.tools.changes.ChangeWatch` adds to one
shell call on a 10,000-file workspace (100 directories of 100 files), in a git work tree
and in a plain directory, beside the same command run without detection in the same run.
Medians of several calls.

Three ways, in the same run:

- **watched** (the default): the steady state, several shell calls in a row in one
  workspace with the look kept between them and a watcher (`kward.tools.lookcache`);
- **cold**: the first call in a workspace (no kept look, the watcher opened then): the
  registry is emptied before each;
- **KWARD_NO_FSWATCH=1**: no watcher, two whole looks per call (the behaviour before).

Commands:

- no change: ``true``;
- 3 changes, again: a command that modifies one file, adds one and deletes one, put back
  after each call (untimed, by this process: a change between two calls, which the next
  call's look must take in);
- 3 changes, new files each call: the same on other files every call (files clean in git
  until then, so their baselines come from HEAD; in the first form they are the bytes
  read before the call).

Each figure: the wall-clock overhead, and the CPU time it costs (this process and its
children), which a loaded machine does not inflate.

The git repository's files are dated 10 s back before they are committed, so the index is
not racily clean (what a repository someone works in looks like; a racily clean index
makes every ``git status`` hash those files again, and kward never refreshes the index).

    python3 tools/bench_changes.py [--quick]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kward.cancel import CancelToken  # noqa: E402
from kward.tools import lookcache  # noqa: E402
from kward.tools.changes import ChangeWatch  # noqa: E402
from kward.tools.process import child_environment, run_command  # noqa: E402

Row = dict[str, Any]
FILES = 10_000
GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


class Command:
    """A shell command to time (`text(i)` for call `i`), what it must be found to change,
    and what puts the workspace back after it (untimed)."""

    def __init__(self, text: Callable[[int], str], expect: Callable[[int], list[str] | None],
                 undo: Callable[[int], str | None]):
        self.text, self.expect, self.undo = text, expect, undo


def _change(i: int) -> str:
    return f"echo x >> d{i // 10 % 10}/s{i % 100}/f0.txt; echo n > new{i}.txt; rm d{i // 10 % 10}/s{i % 100}/f5.txt"


def _undo(i: int) -> str:
    return (f"printf 'x\\n' > d{i // 10 % 10}/s{i % 100}/f0.txt; rm new{i}.txt; "
            f"printf 'xxxxxx\\n' > d{i // 10 % 10}/s{i % 100}/f5.txt")


def _paths(i: int) -> list[str]:
    return sorted([f"d{i // 10 % 10}/s{i % 100}/f0.txt", f"d{i // 10 % 10}/s{i % 100}/f5.txt", f"new{i}.txt"])


NO_CHANGE = Command(lambda i: "true", lambda i: [], lambda i: None)
AGAIN = Command(lambda i: _change(0), lambda i: _paths(0), lambda i: _undo(0))
ROTATING = Command(lambda i: _change(i + 1), lambda i: _paths(i + 1), lambda i: _undo(i + 1))
COMMANDS = (("no change", NO_CHANGE), ("3 changes, again", AGAIN), ("3 changes, new files each call", ROTATING))


def make_workspace(root: Path, git: bool) -> Path:
    past = time.time() - 10
    for d in range(FILES // 100):
        folder = root / f"d{d // 10}" / f"s{d}"
        folder.mkdir(parents=True)
        for f in range(100):
            path = folder / f"f{f}.txt"
            path.write_text("x" * (f + 1) + "\n")
            os.utime(path, (past, past))
    if git:
        env = {**os.environ, **GIT}
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "files"]):
            subprocess.run(["git", *args], cwd=root, env=env, check=True)
    return root


def cpu() -> float:
    """CPU seconds of this process and its reaped children (git, the command)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(ws: Path, command: Command, i: int, detect: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of shell call `i` of `command`, with or without detection."""
    env = child_environment()
    cancel = CancelToken()
    text = command.text(i)
    start, start_cpu = time.perf_counter(), cpu()
    watch = ChangeWatch(ws, env, cancel) if detect else None
    before = watch.begin() if watch is not None else None
    run_command(text, cwd=str(ws), timeout=30, cancel=cancel, env=env)
    if watch is not None and before is not None:
        changes = watch.end(before)
        assert changes.paths == command.expect(i) and changes.complete, (text, changes)
    elapsed, used = time.perf_counter() - start, cpu() - start_cpu
    undo = command.undo(i)
    if undo is not None:
        run_command(undo, cwd=str(ws), timeout=30, cancel=cancel, env=env)
    return elapsed, used


def floor(ws: Path, git: bool, reps: int) -> float:
    """Median ms of one whole look alone: the `git status` kward runs, or one snapshot walk."""
    from kward.tools import snapshot
    from kward.tools.gitstatus import STATUS_ARGS, git_environment

    env = git_environment(child_environment())
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        if git:
            subprocess.run(["git", *STATUS_ARGS], cwd=ws, env=env, stdout=subprocess.DEVNULL, check=True)
        else:
            snapshot.take(str(ws))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples) * 1000, statistics.median(s[1] for s in samples) * 1000


def bench_workspace(ws: Path, label: str, reps: int) -> list[Row]:
    git = label.startswith("git")
    rows: list[Row] = [{"name": f"{label}: one whole look alone ({'git status' if git else 'snapshot walk'})",
                        "value": floor(ws, git, reps), "unit": "ms", "target": "-"}]
    ways = ("watched", "cold", "KWARD_NO_FSWATCH=1")
    n = 0
    for what, command in COMMANDS:
        timed(ws, command, n, True)  # warm: imports, caches, the OS's, the kept look
        n += 1
        base, runs = [], {way: [] for way in ways}  # type: ignore[var-annotated]
        for _ in range(reps):  # interleaved, so that each sees the same machine
            base.append(timed(ws, command, n, False))
            n += 1
            for way in ways:
                if way == "cold":
                    lookcache.close_all()
                os.environ.pop("KWARD_NO_FSWATCH", None)
                if way == "KWARD_NO_FSWATCH=1":
                    os.environ["KWARD_NO_FSWATCH"] = "1"
                try:
                    runs[way].append(timed(ws, command, n, True))
                finally:
                    os.environ.pop("KWARD_NO_FSWATCH", None)
                n += 1
        base_ms, base_cpu = medians(base)
        rows.append({"name": f"{label}, {what}: shell call without detection (median of {reps})", "value": base_ms,
                     "unit": "ms", "target": "-"})
        for way in ways:
            wall, used = medians(runs[way])
            rows += [
                {"name": f"{label}, {what}, {way}: detection overhead per call", "value": wall - base_ms,
                 "unit": "ms", "target": "<= 30" if way == "watched" else "-"},
                {"name": f"{label}, {what}, {way}: detection CPU per call (kward and git, any core)",
                 "value": used - base_cpu, "unit": "ms", "target": "-"},
            ]
    return rows


def bench(quick: bool = False) -> list[Row]:
    home = Path(tempfile.mkdtemp(prefix="kward-bench-changes-"))
    reps = 7 if quick else 21
    saved = os.environ.pop("KWARD_NO_FSWATCH", None)
    try:
        rows = bench_workspace(make_workspace(home / "git", git=True), f"git work tree, {FILES:,} files", reps)
        rows += bench_workspace(make_workspace(home / "plain", git=False),
                                f"plain workspace (snapshot), {FILES:,} files", reps)
    finally:
        lookcache.close_all()
        if saved is not None:
            os.environ["KWARD_NO_FSWATCH"] = saved
    return rows


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})", flush=True)
