"""Compaction benchmark (`sessions/compact`, docs/protocol.md): compacting a 20 MB session.

Run from a checkout: ``python3 tools/bench_compaction.py [--quick]``. `bench(quick)` returns
rows for ``tools/bench.py``.

The session is the resume benchmark's big file (`bench_sessions.make_big_session`: turns
of a user message, an assistant message with a tool call and usage, a 2-9 KB tool result,
the audit record, ...), 20 MB (quick: 5 MB), loaded with `load_session`. The compaction is
`kward.compaction.run.compact` with the default settings (keep 20,000 recent tokens) and
a stand-in summarizer that returns a fixed checkpoint at once and times itself, so:

- ``compaction_20mb_outside_model_s``: the whole compaction minus the time inside the
  summarizer call: planning (estimate, cut), serializing the conversation, building the
  prompt, rewriting the files lists, appending the record and rebuilding the live list.
  Median of 3 fresh copies of the file (quick: 1). Target: well under a second.
- ``compaction_20mb_prompt_chars``: the size of the summarizer's user message (tool output
  cut at 2,000 characters, the oldest messages left out to fit a 400,000-token window).
- ``compaction_next_request_bytes_before`` / ``_after``: the JSON body of the next Codex
  request (`codex_wire.build_body`: the instructions, the tools, the conversation and a new
  user message) before and after the compaction.

Single-threaded; fixtures in a temporary directory removed afterwards.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_sessions import make_big_session  # noqa: E402
from kward.compaction.prompt import GENERIC  # noqa: E402
from kward.compaction.run import compact  # noqa: E402
from kward.model import UserMessage  # noqa: E402
from kward.providers.base import ModelRequest  # noqa: E402
from kward.providers.codex_wire import build_body  # noqa: E402
from kward.sessions.opening import load_session  # noqa: E402
from kward.config.settings import CompactionSettings  # noqa: E402
from kward.tools.registry import default_registry  # noqa: E402

Row = dict
SUMMARY = "## Goal\n- Benchmark the compaction\n\n## Files & Code\n### Read\n\n### Modified\n\n## Next Steps\n1. Go on"
INSTRUCTIONS = "You are Kward, a coding agent. " * 40
WINDOW = 400_000  # gpt-5.5's: the summarizer's prompt is cut to fit it


def request_bytes(session, tools) -> int:
    messages = session.entry_messages() + [UserMessage("And now the next step, please.")]
    body = build_body(ModelRequest(instructions=INSTRUCTIONS, messages=messages, tools=tools, model="gpt-5.5"),
                      "cache-key")
    return len(json.dumps(body).encode("utf-8"))


def one_run(path: Path, root: Path, tools) -> dict:
    session = load_session(str(path), str(root))
    try:
        before = request_bytes(session, tools)
        inside = [0.0]
        sizes = []

        def summarize(system: str, user: str, max_tokens: int) -> str:
            t0 = time.perf_counter()
            sizes.append(len(user))
            text = SUMMARY
            inside[0] += time.perf_counter() - t0
            return text

        t0 = time.perf_counter()
        result = compact(session, summarize, CompactionSettings(), GENERIC, instructions=INSTRUCTIONS,
                         window=WINDOW)
        total = time.perf_counter() - t0
        after = request_bytes(session, tools)
        return {"outside": total - inside[0], "prompt": sum(sizes), "before": before, "after": after,
                "live": len(session.entry_messages()), "tokens_after": result.tokens_after}
    finally:
        session.close(delete_if_unused=False)


def bench(quick: bool = False) -> list[Row]:
    rng = random.Random(14)
    tmp = Path(tempfile.mkdtemp(prefix="kward-bench-compaction-"))
    try:
        root = tmp / "ws"
        root.mkdir()
        source = tmp / "big.jsonl"
        size = make_big_session(source, (5 if quick else 20) * 1024 * 1024, rng)
        tools = default_registry().schemas(True)
        runs = []
        for i in range(1 if quick else 3):
            copy = tmp / f"run-{i}.jsonl"
            shutil.copyfile(source, copy)
            runs.append(one_run(copy, root, tools))
        first = runs[0]
        mb = size / 1024 / 1024
        return [
            {"name": "compaction_20mb_outside_model_s", "value": statistics.median(r["outside"] for r in runs),
             "unit": "s", "target": f"info: {mb:.1f} MB session, median of {len(runs)}; stand-in summarizer"},
            {"name": "compaction_20mb_prompt_chars", "value": first["prompt"], "unit": "chars",
             "target": f"info: the summarizer's user message, cut to a {WINDOW:,}-token window"},
            {"name": "compaction_next_request_bytes_before", "value": first["before"], "unit": "bytes",
             "target": "info: the next Codex request body before"},
            {"name": "compaction_next_request_bytes_after", "value": first["after"], "unit": "bytes",
             "target": f"info: after (estimated {first['tokens_after']:,} tokens, {first['live']} live messages)"},
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    sys.stdout.write("| figure | value | unit | target |\n|---|---:|---|---|\n")
    for row in bench(quick):
        value = row["value"]
        shown = f"{value:,.3f}" if isinstance(value, float) else f"{value:,}"
        sys.stdout.write(f"| {row['name']} | {shown} | {row['unit']} | {row['target']} |\n")
