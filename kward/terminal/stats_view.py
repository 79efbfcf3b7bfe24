"""Telemetry in the terminal: `/stats RANGE` (the `logging/stats` result as text) and
`kward stats tokens [RANGE] [--bucket UNIT] [--output PATH]` (the token CSV of
`logging/tokenCsv`, to stdout or a file). Main thread.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

from kward import __version__
from kward.client import Client, RpcError

TOKENS_USAGE = ("usage: kward stats tokens [N minutes|hours|days|weeks|months|years] "
                "[--bucket second|minute|hour|day|week|month|year] [--output PATH]")


def _inline(counts: dict[str, Any]) -> str:
    if not counts:
        return "none"
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _block(counts: dict[str, Any]) -> list[str]:
    return [f"  {k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))] or ["  none"]


def format_stats(result: dict[str, Any]) -> str:
    rng = result.get("range") or {}
    usage = result.get("usageStats") or {}
    tools = result.get("tools") or {}
    errors = result.get("errors") or {}
    lines = [f"Stats for {rng.get('input')} ({rng.get('startAt')} to {rng.get('endAt')})",
             f"Log directory: {result.get('logDir')}",
             f"Enabled categories: {', '.join(result.get('enabledCategories') or [])}",
             f"Records: {result.get('recordCount')}", "", "Records by category:",
             *_block(result.get("recordsByCategory") or {}), "", "Records by event:",
             *_block(result.get("recordsByEvent") or {}), "", "Tokens:",
             f"  model usage events: {usage.get('modelUsageEvents', 0)}"]
    totals = usage.get("totals") or {}
    lines += [f"  {k}: {v}" for k, v in sorted(totals.items())] or ["  token totals: none"]
    lines += ["", "Performance:"]
    events = (result.get("performance") or {}).get("events") or {}
    for event, s in sorted(events.items()):
        d = s.get("durationMs") or {}
        lines.append(f"  {event}: count={s.get('count')}, min={d.get('min')}, avg={d.get('avg')}, max={d.get('max')} ms")
        if s.get("statuses"):
            lines.append(f"    statuses: {_inline(s['statuses'])}")
    if not events:
        lines.append("  none")
    lines += ["", "Tools:", f"  calls: {tools.get('calls', 0)}", f"  result bytes: {tools.get('resultBytes', 0)}",
              f"  by tool: {_inline(tools.get('byName') or {})}", f"  by status: {_inline(tools.get('byStatus') or {})}",
              "", "Errors:", f"  events: {errors.get('count', 0)}",
              *(f"  by {what}: {_inline(errors.get(key) or {})}"
                for what, key in (("event", "byEvent"), ("class", "byClass"), ("provider", "byProvider"),
                                  ("code", "byCode")))]
    return "\n".join(lines)


def parse_tokens_args(args: list[str]) -> tuple[str | None, str | None, str | None]:
    """(range, bucket, output) of `kward stats tokens ...`; ValueError with the problem."""
    words: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in ("--bucket", "--output"):
            if not eq:
                i += 1
                if i >= len(args):
                    raise ValueError(f"{name} needs a value")
                value = args[i]
            if not value:
                raise ValueError(f"{name} needs a value")
            options[name] = value
        elif arg.startswith("--"):
            raise ValueError(f"unknown option: {arg}")
        else:
            words.append(arg)
        i += 1
    return (" ".join(words) or None), options.get("--bucket"), options.get("--output")


def run_stats_command(args: list[str], env: Mapping[str, str], cwd: str) -> int:
    """`kward stats tokens ...`: exit 0, or 1 with one line on stderr (usage errors too)."""
    if args[:1] != ["tokens"]:
        sys.stderr.write(f"kward stats: {'unknown subcommand: ' + args[0] if args else 'what statistics?'}\n"
                         f"{TOKENS_USAGE}\n")
        return 1
    try:
        rng, bucket, output = parse_tokens_args(args[1:])
    except ValueError as exc:
        sys.stderr.write(f"kward stats tokens: {exc}\n{TOKENS_USAGE}\n")
        return 1
    params = {k: v for k, v in (("range", rng), ("bucket", bucket)) if v is not None}
    with Client.in_process(env=env, cwd=cwd) as client:
        client.initialize(name="kward-stats", version=__version__)
        try:
            csv = client.request("logging/tokenCsv", params, timeout=None)["csv"]
        except RpcError as exc:
            sys.stderr.write(f"kward stats tokens: {exc.message}\n")
            return 1
    if output is None:
        sys.stdout.write(csv)
        return 0
    try:
        with open(os.path.join(cwd, os.path.expanduser(output)), "w", encoding="utf-8") as f:
            f.write(csv)
    except OSError as exc:
        sys.stderr.write(f"kward stats tokens: cannot write {output}: {exc.strerror or exc}\n")
        return 1
    return 0
