"""Counts in the terminal, in words a person reads: the session's usage of `/status` and
`/stats` (`runtime/stats`: "cache read", not `cacheRead`; 12,345 tokens; $0.0123; the
context usage as a bar), `/stats RANGE` (the `logging/stats` result as text) and
`kward stats tokens [RANGE] [--bucket UNIT] [--output PATH]` (the token CSV of
`logging/tokenCsv`, to stdout or a file). The formatting functions are pure (any
thread); the commands run on the main thread.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Mapping

from kward import __version__
from kward.client import Client, RpcError
from kward.terminal.wording import error_text

TOKENS_USAGE = ("usage: kward stats tokens [N minutes|hours|days|weeks|months|years] "
                "[--bucket second|minute|hour|day|week|month|year] [--output PATH]")


#: `runtime/stats` token keys -> words
TOKEN_WORDS = {"input": "input", "output": "output", "cacheRead": "cache read", "cacheWrite": "cache write",
               "reasoning": "reasoning", "total": "total"}
BAR_WIDTH = 20


def words(key: str) -> str:
    """A wire key in words: `cacheRead` and `cache_read_tokens` -> "cache read"."""
    if key in TOKEN_WORDS:
        return TOKEN_WORDS[key]
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key).replace("_", " ").lower()
    return spaced[: -len(" tokens")] if spaced.endswith(" tokens") and spaced != "tokens" else spaced


def number(value: object) -> str:
    """12345 -> "12,345" (a float keeps one decimal unless whole); "?" for a non-number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def money(value: object) -> str:
    """A cost in USD: "$0.0123" (four decimals; two from $100 on)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    return f"${value:,.2f}" if value >= 100 else f"${value:.4f}"


def bar(fraction: float, unicode: bool, width: int = BAR_WIDTH) -> str:
    """`[██████░░░░]` (or `[######....]` without Unicode) filled to `fraction` (0 to 1)."""
    filled = max(0, min(width, round(fraction * width)))
    full, empty = ("\u2588", "\u2591") if unicode else ("#", ".")
    return "[" + full * filled + empty * (width - filled) + "]"


def context_text(usage: Mapping[str, Any] | None, unicode: bool, *, window: object = None,
                 empty: bool = False) -> str:
    """The context usage: `[bar] 31%  40,000 of 128,000 tokens`; for a conversation with
    nothing in it yet (`empty`) and a known `window`, `[bar] 0%  0 of 128,000 tokens`;
    "unknown" without a window."""
    if not usage:
        if empty and isinstance(window, (int, float)) and window > 0:
            usage = {"tokens": 0, "contextWindow": window, "percent": 0}
        else:
            return "unknown"
    tokens, limit = usage.get("tokens"), usage.get("contextWindow")
    if not isinstance(tokens, (int, float)):
        return "unknown"
    if not isinstance(limit, (int, float)) or limit <= 0:
        return f"{number(tokens)} tokens (the context window is unknown)"
    percent = usage.get("percent")
    share = float(percent) if isinstance(percent, (int, float)) else 100.0 * tokens / limit
    return f"{bar(share / 100, unicode)} {share:.0f}%  {number(tokens)} of {number(limit)} tokens"


def usage_lines(result: Mapping[str, Any], unicode: bool, *, window: object = None) -> list[str]:
    """`/stats` without a range: the `runtime/stats` result as `  label      value` lines."""
    tokens = result.get("tokens") or {}
    lines = [f"  messages   {result.get('userMessages', 0)} from you, {result.get('assistantMessages', 0)} "
             f"answers, {result.get('toolCalls', 0)} tool calls",
             "  tokens     " + (", ".join(f"{words(k)} {number(v)}" for k, v in tokens.items()) or "none yet")]
    if result.get("cost") is not None:
        lines.append(f"  cost       {money(result['cost'])}")
    lines.append("  context    " + context_text(result.get("contextUsage"), unicode, window=window,
                                                 empty=not result.get("totalMessages")))
    return lines


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
    lines += [f"  {words(k)}: {number(v)}" for k, v in sorted(totals.items())] or ["  token totals: none"]
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
            sys.stderr.write(f"kward stats tokens: {error_text(exc)}\n")
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
