#!/usr/bin/env python3
"""Changed-file detection benchmarks: what `kward.tools.changes.ChangeWatch` adds to one
shell call on a 10,000-file workspace (100 directories of 100 files), in a git work tree
and in a plain directory, beside the same command run without detection in the same run.
Medians of several calls.

- no change: ``true``;
- a few changes: a command that modifies one file, adds one and deletes one (put back
  after each call, untimed).

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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kward.cancel import CancelToken  # noqa: E402
from kward.tools.changes import ChangeWatch  # noqa: E402
from kward.tools.process import child_environment, run_command  # noqa: E402

Row = dict
FILES = 10_000
CHANGE = "echo x >> d0/s0/f0.txt; echo n > new.txt; rm d1/s10/f5.txt"
UNDO = "printf 'x\\n' > d0/s0/f0.txt; rm new.txt; printf 'xxxxxx\\n' > d1/s10/f5.txt"
GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


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


def timed(ws: Path, command: str, detect: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one shell call with or without detection."""
    env = child_environment()
    cancel = CancelToken()
    start, start_cpu = time.perf_counter(), cpu()
    watch = ChangeWatch(ws, env, cancel) if detect else None
    before = watch.begin() if watch is not None else None
    run_command(command, cwd=str(ws), timeout=30, cancel=cancel, env=env)
    if watch is not None and before is not None:
        changes = watch.end(before)
        if command == CHANGE:
            assert changes.paths == ["d0/s0/f0.txt", "d1/s10/f5.txt", "new.txt"], changes
        elif command == "true":
            assert changes.paths == [] and changes.complete, changes
    elapsed, used = time.perf_counter() - start, cpu() - start_cpu
    if command == CHANGE:
        run_command(UNDO, cwd=str(ws), timeout=30, cancel=cancel, env=env)
    return elapsed, used


def floor(ws: Path, git: bool, reps: int) -> float:
    """Median ms of one look alone: the `git status` kward runs, or one snapshot walk (a call
    makes two, before and after)."""
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


def bench_workspace(ws: Path, label: str, reps: int) -> list[Row]:
    git = label.startswith("git")
    rows: list[Row] = [{"name": f"{label}: one {'git status' if git else 'snapshot walk'} alone (two per call)",
                        "value": floor(ws, git, reps), "unit": "ms", "target": "-"}]
    for what, command in (("no change", "true"), ("3 changes", CHANGE)):
        timed(ws, command, True)  # warm: imports, caches, the OS's
        plain, watched = [], []
        for _ in range(reps):  # interleaved, so both see the same machine
            plain.append(timed(ws, command, False))
            watched.append(timed(ws, command, True))
        base, full = (statistics.median(t[0] for t in plain) * 1000, statistics.median(t[0] for t in watched) * 1000)
        base_cpu, full_cpu = (statistics.median(t[1] for t in plain) * 1000,
                              statistics.median(t[1] for t in watched) * 1000)
        rows += [
            {"name": f"{label}, {what}: shell call without detection (median of {reps})", "value": base,
             "unit": "ms", "target": "-"},
            {"name": f"{label}, {what}: shell call with detection", "value": full, "unit": "ms", "target": "-"},
            {"name": f"{label}, {what}: detection overhead per call", "value": full - base, "unit": "ms",
             "target": "<= 30"},
            {"name": f"{label}, {what}: detection CPU per call (kward and git, any core)", "value": full_cpu - base_cpu,
             "unit": "ms", "target": "-"},
        ]
    return rows


def bench(quick: bool = False) -> list[Row]:
    home = Path(tempfile.mkdtemp(prefix="kward-bench-changes-"))
    reps = 7 if quick else 21
    rows = bench_workspace(make_workspace(home / "git", git=True), f"git work tree, {FILES:,} files", reps)
    rows += bench_workspace(make_workspace(home / "plain", git=False), f"plain workspace (snapshot), {FILES:,} files",
                            reps)
    return rows


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})", flush=True)
