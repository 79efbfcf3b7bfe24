"""Memory benchmarks: the retrieval a turn does over a large store.

Run from a checkout: ``python3 tools/bench_memory.py [--quick]``. `bench(quick)` returns
rows ``{"name", "value", "unit", "target"}`` for ``tools/bench.py`` to merge into its report.

- ``memory_retrieve_10k_ms_p50`` / ``_p95``: `MemoryStore.retrieve` plus the prompt block
  (what a turn does before its model call: a stat of both files, the scoring of every soft
  memory sharing a term with the input, the hit counts, one `retrieve` event line) over
  9,980 soft memories (20 below the cap, for the adds that follow) (half global, half of the workspace, 12 to 30 words each from a
  2,000-word vocabulary, so each input term is shared by ~100 memories) and 20 core
  memories; 200 inputs of 8 to 30 words (quick: 50). Target p50 <= 20 ms.
- ``memory_cold_load_10k_ms``: the first retrieval of a process (soft.jsonl parsed and
  indexed). Info.
- ``memory_flush_10k_ms``: writing the pending hit counts (a rewrite of soft.jsonl,
  fsynced), at most once a minute and at shutdown. Info.
- ``memory_add_ms``: `memory/add`'s work (lock, one appended line, one event). Info.
- ``memory_add_soft_at_10_ms`` / ``_at_2000_ms`` / ``_at_9000_ms``: the median of 20
  `MemoryStore.add_soft` calls (a warm store, as in a long-lived process) into a store that
  holds that many soft memories: one appended line, so about the same. Info.
- ``memory_add_core_at_10_ms`` / ``_at_180_ms``: the same for `add_core` from that many
  core memories (core.json is read and rewritten whole, fsynced; the 20 adds from 180 end
  at the cap of 200). Info.

Fixtures live in a temporary directory that is removed afterwards. Single-threaded.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kward.memory import records  # noqa: E402
from kward.memory.retrieval import memory_block  # noqa: E402
from kward.memory.store import MemoryStore  # noqa: E402

Row = dict
NOW = datetime(2026, 3, 15, 12, 0, tzinfo=timezone.utc)
SOFT = 9_980  # the retrieval benches' store: 20 adds below the cap of 10,000


def vocabulary(rng: random.Random, size: int = 2000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def make_store(directory: Path, soft: int, rng: random.Random, words: list[str], ws: str) -> int:
    """Write the files directly (as many `memory/add` calls would have)."""
    directory.mkdir(parents=True)
    lines = []
    for i in range(1, soft + 1):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(12, 30)))
        scope = "global" if i % 2 else ws
        memory = records.new_soft(records.format_id("soft", i), text.capitalize(), scope, rng.sample(words, 2), NOW,
                                  confidence=rng.uniform(0.3, 0.9))
        lines.append(json.dumps(records.to_record(memory), separators=(",", ":")))
    data = ("\n".join(lines) + "\n").encode()
    (directory / "soft.jsonl").write_bytes(data)
    core = [records.to_record(records.new_core(records.format_id("core", i),
                                               f"Core rule {i}: " + " ".join(rng.sample(words, 8)),
                                               "global" if i % 3 else ws, [], NOW)) for i in range(1, 21)]
    (directory / "core.json").write_text(json.dumps(core, indent=2) + "\n")
    return len(data)


def add_cost(directory: Path, layer: str, count: int, rng: random.Random, words: list[str], ws: str,
             calls: int = 20) -> float:
    """The median ms of `calls` adds of `layer` into a store already holding `count` memories of it."""
    directory.mkdir(parents=True)
    count -= 1  # the warm-up add makes it `count`
    if layer == "soft":
        lines = [json.dumps(records.to_record(records.new_soft(
            records.format_id("soft", i), " ".join(rng.choice(words) for _ in range(20)).capitalize(), ws,
            rng.sample(words, 2), NOW)), separators=(",", ":")) for i in range(1, count + 1)]
        (directory / "soft.jsonl").write_text("\n".join(lines) + "\n")
    else:
        core = [records.to_record(records.new_core(records.format_id("core", i),
                                                   " ".join(rng.choice(words) for _ in range(20)).capitalize(),
                                                   ws, [], NOW)) for i in range(1, count + 1)]
        (directory / "core.json").write_text(json.dumps(core, indent=2) + "\n")
    store = MemoryStore(directory, clock=lambda: NOW)
    add = store.add_soft if layer == "soft" else store.add_core
    add("warm the store up", ws)
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        add(f"bench memory {i} " + " ".join(rng.sample(words, 10)), ws)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench_adds(tmp: Path, rng: random.Random, words: list[str], ws: str) -> list[Row]:
    rows = []
    for layer, counts in (("soft", (10, 2000, 9000)), ("core", (10, 180))):
        for count in counts:
            value = add_cost(tmp / f"add-{layer}-{count}", layer, count, rng, words, ws)
            rows.append({"name": f"memory_add_{layer}_at_{count}_ms", "value": value, "unit": "ms",
                         "target": f"info (an add into {count:,} {layer} memories)"})
    return rows


def bench(quick: bool = False) -> list[Row]:
    rng = random.Random(15)
    tmp = Path(tempfile.mkdtemp(prefix="kward-bench-memory-"))
    try:
        words = vocabulary(rng)
        ws = records.workspace_scope(str(tmp))
        size = make_store(tmp / "memory", SOFT, rng, words, ws)
        store = MemoryStore(tmp / "memory", clock=lambda: NOW)
        scopes = ["global", ws]
        inputs = [" ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) for _ in range(50 if quick else 200)]
        t0 = time.perf_counter()
        store.retrieve(inputs[0], scopes)
        cold = (time.perf_counter() - t0) * 1000
        times, found = [], 0
        for text in inputs:
            t0 = time.perf_counter()
            result = store.retrieve(text, scopes)
            memory_block(result)
            times.append((time.perf_counter() - t0) * 1000)
            found += len(result.soft)
        times.sort()
        t0 = time.perf_counter()
        store.flush()
        flush = (time.perf_counter() - t0) * 1000
        adds = []
        for i in range(20):
            t0 = time.perf_counter()
            store.add_soft(f"bench memory {i}", ws)
            adds.append((time.perf_counter() - t0) * 1000)
        note = (f"{SOFT:,} soft memories ({size / 1024 / 1024:.1f} MB), 20 core; {len(inputs)} inputs, "
                f"{found / len(inputs):.1f} soft memories given per turn")
        return [
            {"name": "memory_retrieve_10k_ms_p50", "value": statistics.median(times), "unit": "ms",
             "target": f"<= 20 ({note})"},
            {"name": "memory_retrieve_10k_ms_p95", "value": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
             "unit": "ms", "target": "info"},
            {"name": "memory_cold_load_10k_ms", "value": cold, "unit": "ms",
             "target": "info (the first turn of a process: parse and index soft.jsonl)"},
            {"name": "memory_flush_10k_ms", "value": flush, "unit": "ms",
             "target": "info (hit counts written: at most once a minute, and at shutdown)"},
            {"name": "memory_add_ms", "value": statistics.median(adds), "unit": "ms",
             "target": "info (lock, one appended line, one event line)"},
            *bench_adds(tmp, rng, words, ws),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    for row in bench("--quick" in sys.argv):
        print(f"{row['name']}: {row['value']:.4g} {row['unit']} (target {row['target']})")
