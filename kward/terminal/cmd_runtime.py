"""Slash commands on the runtime: /settings /model /reasoning /status /stats /reload.
(`/stats RANGE` shows the telemetry of a range: kward.terminal.stats_view.)

Each is a few protocol requests (`config/read`, `models/*`, `reasoning/set`,
`runtime/*`) on the shell's client. `/model` and `/reasoning` save the choice in
config.json, as those methods do for a UI; a `--model` given for this run (an environment
setting of the in-process server) still wins until kward exits. Main thread only.
"""

from __future__ import annotations

import json
from typing import Any

from kward.terminal.commands import ShellPort, register
from kward.terminal.stats_view import format_stats

_PROVIDERS = {"codex", "openrouter", "openaicompatible", "openai-compatible", "scripted"}
LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


def _entry(model: dict[str, Any]) -> str:
    return f"{model.get('provider')}/{model.get('id')}"


def _override_note(shell: ShellPort) -> None:
    if shell.model_override:
        shell.note(f"(--model {shell.model_override} still applies until kward exits; "
                   "the choice is saved for later runs)")


@register("settings", "", "show the configuration (secrets redacted)")
def settings(shell: ShellPort, arg: str) -> None:
    config = shell.client.request("config/read", {})
    shell.note(f"config file: {config.get('path')}")
    values = config.get("config") or {}
    shell.say(json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False) if values else "{}  (all defaults)")


@register("model", "[provider/id]", "show the models and pick one, or set one")
def model(shell: ShellPort, arg: str) -> None:
    if arg:
        provider, _, model_id = arg.partition("/")
        params = {"model": model_id, "provider": provider} if model_id and provider.lower() in _PROVIDERS else {
            "model": arg}
        current = shell.client.request("models/set", params, timeout=None)
        shell.note(f"model: {_entry(current)}")
        _override_note(shell)
        return
    listed = shell.client.request("models/list", {"sessionId": shell.session_id}, timeout=None)
    models = listed.get("models") or []
    if not models:
        shell.note("No models listed for the current provider.")
        return
    rows = []
    for m in models:
        window = m.get("contextWindow")
        rows.append(f"{'*' if m.get('current') else ' '} {_entry(m)}" + (f"  ({window} tokens)" if window else ""))
    index = shell.pick(rows, "model")
    if index is None:
        return
    chosen = models[index]
    current = shell.client.request("models/set", {"model": chosen.get("id"), "provider": chosen.get("provider")},
                                   timeout=None)
    shell.note(f"model: {_entry(current)}")
    _override_note(shell)


@register("reasoning", "[level]", "show or set the reasoning effort (off, minimal, low, medium, high, xhigh, max); "
                                 "show or hide: the reasoning in full or as one line")
def reasoning(shell: ShellPort, arg: str) -> None:
    if arg in ("show", "hide"):
        shell.reasoning_shown = arg == "show"
        shell.note("reasoning: shown in full" if shell.reasoning_shown
                   else "reasoning: hidden, one line per turn (/reasoning show to see it)")
        return
    if not arg:
        current = shell.client.request("models/current", {})
        offered = current.get("reasoningEfforts")
        shell.note(f"reasoning: {current.get('reasoningEffort', 'off')}"
                   + (f" (sent as {current['effectiveReasoningEffort']})" if current.get("effectiveReasoningEffort")
                      else "")
                   + (f"; {_entry(current)} offers {', '.join(offered) if offered else 'none'}"
                      if isinstance(offered, list) else ""))
        index = shell.pick(list(LEVELS), "level")
        if index is None:
            return
        arg = LEVELS[index]
    current = shell.client.request("reasoning/set", {"effort": arg}, timeout=None)
    effective = current.get("effectiveReasoningEffort")
    shell.note(f"reasoning: {current.get('reasoningEffort')}" + (f" (sent as {effective})" if effective else ""))


@register("status", "", "show the session, model and context usage")
def status(shell: ShellPort, arg: str) -> None:
    state = shell.client.request("runtime/state", {"sessionId": shell.session_id})
    stats = shell.client.request("runtime/stats", {"sessionId": shell.session_id}, timeout=None)
    model = state.get("model") or {}
    usage = stats.get("contextUsage") or {}
    rows = [
        ("session", state.get("sessionName") or "(unnamed)"),
        ("file", state.get("sessionFile")),
        ("workspace", state.get("workspaceRoot")),
        ("model", f"{_entry(model)} ({state.get('providerReason', '')})".replace(" ()", "")),
        ("reasoning", state.get("thinkingLevel")),
        ("messages", state.get("messageCount")),
        ("context", f"{usage.get('tokens')} of {usage.get('contextWindow')} tokens ({usage.get('percent')}%)"
         if usage else "unknown"),
    ]
    for key, value in rows:
        shell.say(f"  {key:<10} {value}")


@register("stats", "[range]", "show this session's counts and cost; with a range (2 days, 1 month): telemetry")
def stats(shell: ShellPort, arg: str) -> None:
    if arg:  # the telemetry records of a range (logging/stats)
        shell.say(format_stats(shell.client.request("logging/stats", {"range": arg}, timeout=None)))
        return
    result = shell.client.request("runtime/stats", {"sessionId": shell.session_id}, timeout=None)
    tokens = result.get("tokens") or {}
    shell.say(f"  messages   {result.get('userMessages', 0)} from you, {result.get('assistantMessages', 0)} "
              f"answers, {result.get('toolCalls', 0)} tool calls")
    shell.say("  tokens     " + ", ".join(f"{k} {v}" for k, v in tokens.items()))
    if result.get("cost") is not None:
        shell.say(f"  cost       ${result['cost']}")
    usage = result.get("contextUsage") or {}
    if usage:
        shell.say(f"  context    {usage.get('tokens')} of {usage.get('contextWindow')} tokens "
                  f"({usage.get('percent')}%)")


@register("reload", "", "re-read the config, credentials, AGENTS.md, prompt templates, skills and plugins")
def reload(shell: ShellPort, arg: str) -> None:
    result = shell.client.request("runtime/reload", {"sessionId": shell.session_id}, timeout=None)
    shell.server_commands = None  # listed again when next needed
    shell.note(str(result.get("message", "Reloaded.")))
