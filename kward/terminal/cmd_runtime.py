"""Slash commands on the runtime: /settings /model /reasoning /status /stats /reload.
(`/stats RANGE` shows the telemetry of a range: kward.terminal.stats_view.)

Each is a few protocol requests (`config/read`, `models/*`, `reasoning/set`,
`runtime/*`) on the shell's client. `/model` and `/reasoning` save the choice in
config.json, as those methods do for a UI; a `--model` given for this run (an environment
setting of the in-process server) still wins until kward exits. `/model ID` saves only an
id the provider's model list has; when that list cannot be fetched (not logged in, the
server unreachable), only what kward's built-in list of the provider has (Codex,
OpenRouter), and anything else is refused with one line saying why it cannot be checked
and what fixes that. Main thread only.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from kward import __version__
from kward.client import Client, RpcError
from kward.providers import specs
from kward.providers.catalog import FALLBACKS
from kward.terminal.commands import ShellPort, register
from kward.terminal.stats_view import context_text, format_stats, number, usage_lines
from kward.terminal.style import is_utf8
from kward.terminal.wording import error_text, login_fix

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


@register("model", "[N|provider/id|id]", "show the numbered models and pick one, or set one: a number of the list, "
          "provider/id or id (checked against the list)")
def model(shell: ShellPort, arg: str) -> None:
    if not arg:
        _pick_model(shell)
        return
    listed = _listing(shell.client)
    models = listed.get("models") or []
    if arg.isdigit():
        n = int(arg)
        if not 1 <= n <= len(models):
            shell.error(f"no model {n}: /model lists {_range(len(models))}")
            return
        _set(shell, models[n - 1])
        return
    current = next((m for m in models if m.get("current")), models[0] if models else {})
    known = next((m for m in models if m.get("id") == arg), None)
    if known is not None:
        _set(shell, known)
        return
    prefix, _, model_id = arg.partition("/")
    spec = specs.find(prefix)
    if spec is not None and not model_id:
        shell.error(f"give the model too: /model {prefix}/<id> (/model lists the models of the provider in use)")
        return
    if spec is None or spec.label == current.get("provider"):
        provider = spec.label if spec is not None else str(current.get("provider"))
        model_id = model_id if spec is not None else arg
        _checked_set(shell, provider, model_id, _find(shell.client, provider, model_id, listed))
        return
    try:
        if spec.label == "OpenRouter":  # (its catalog is listed whichever provider is in use)
            found = _find(shell.client, spec.label, model_id, {})
        else:
            with Client.in_process(env={**shell.env, "KWARD_PROVIDER": spec.key}, cwd=shell.cwd) as probe:
                probe.initialize(name="kward-terminal-models", version=__version__)
                found = _find(probe, spec.label, model_id, _listing(probe))
    except RpcError as exc:
        shell.error(f"cannot switch to {spec.label}: {error_text(exc)}")
        return
    _checked_set(shell, spec.label, model_id, found)


def _listing(client: Client) -> dict[str, Any]:
    return client.request("models/list", {}, timeout=None)


@dataclass(frozen=True, slots=True)
class Found:
    """What the model lists say of an id: its entry (None: not listed), and whether the
    lists could be fetched at all (`checked`; a built-in fallback with `sourceError` was
    not: its entries are kward's built-in list)."""

    entry: dict[str, Any] | None
    checked: bool


def _find(client: Client, provider: str, model_id: str, listed: dict[str, Any]) -> Found:
    """`model_id` in `listed` (the provider's `models/list`; {}: none), and for OpenRouter
    also in its public catalog (`openrouter/catalog`: models the key may not list yet).
    `client` is a kward whose provider in use is `provider` (for OpenRouter any)."""
    lists = [listed] if listed else []
    if provider == "OpenRouter" and _entry_of(listed, model_id) is None:
        lists.append(client.request("openrouter/catalog", {}, timeout=None))
    for listing in lists:
        entry = _entry_of(listing, model_id)
        if entry is not None:
            return Found({**entry, "provider": provider}, True)
    return Found(None, any(not (li.get("sourceError") and li.get("source") in FALLBACKS) for li in lists))


def _entry_of(listing: dict[str, Any], model_id: str) -> dict[str, Any] | None:
    return next((m for m in listing.get("models") or [] if m.get("id") == model_id), None)


def _range(count: int) -> str:
    return "no models" if count == 0 else "only model 1" if count == 1 else f"models 1 to {count}"


def _checked_set(shell: ShellPort, provider: str, model_id: str, found: Found) -> None:
    """Set `provider`/`model_id` when the lists have it; refuse it (nothing saved) when
    they do not, also when they could not be fetched (module docstring: saying why and
    what fixes it; the server's own reason names protocol methods, so it is not shown)."""
    if found.entry is not None:
        _set(shell, found.entry)
        return
    if found.checked:
        shell.error(f"unknown model {model_id} for {provider}; /model lists them")
        return
    fix = f"{login_fix(provider)}; `kward doctor` tells what fails"
    spec = specs.find(provider)
    if spec is not None and spec.builtin:
        shell.error(f"unknown model {model_id} for {provider}: not in kward's built-in list, and the list of "
                    f"{provider} cannot be fetched to check it ({fix})")
    else:
        shell.error(f"cannot check model {model_id} for {provider}: its model list cannot be fetched ({fix}); "
                    "nothing saved")


def _pick_model(shell: ShellPort) -> None:
    listed = _listing(shell.client)
    models = listed.get("models") or []
    if not models:
        shell.note("No models listed for the current provider.")
        return
    rows = []
    for m in models:
        window = m.get("contextWindow")
        rows.append(f"{'*' if m.get('current') else ' '} {_entry(m)}"
                    + (f"  ({number(window)} tokens)" if window else ""))
    index = shell.pick(rows, "model")
    if index is not None:
        _set(shell, models[index])


def _set(shell: ShellPort, wanted: dict[str, Any]) -> None:
    """`models/set` (saved in config.json), then say what is in use, and why it is not
    the choice when an environment variable or `--model` pins the provider or model."""
    provider, model_id = str(wanted.get("provider")), str(wanted.get("id"))
    current = shell.client.request("models/set", {"model": model_id, "provider": provider}, timeout=None)
    if (current.get("provider"), current.get("id")) == (provider, model_id):
        shell.note(f"model: {_entry(current)}")
        _override_note(shell)
        return
    shell.note(f"model: {_entry(current)} for now; {provider}/{model_id} is saved, and "
               + _pinned(shell, provider, str(current.get("provider"))))


def _pinned(shell: ShellPort, provider: str, in_use: str) -> str:
    """What keeps the saved choice from applying now, and when it will (one clause)."""
    override = f"--model {shell.model_override}" if shell.model_override else None
    if provider != in_use:
        if override:
            return f"applies to runs without {override}, which sets the provider for this run"
        value = shell.env.get("KWARD_PROVIDER")
        if value:
            return f"applies once KWARD_PROVIDER (set to {value} in the environment) is unset"
        return f"applies once nothing else chooses the provider ({in_use} is in use)"
    spec = specs.find(provider)
    variable = next((s.env for s in spec.model if s.env and shell.env.get(s.env)), None) if spec else None
    if override:
        return f"applies to runs without {override}, which sets the model for this run"
    if variable:
        return f"applies once {variable} (set to {shell.env[variable]} in the environment) is unset"
    return "applies once nothing else chooses the model"


@register("reasoning", "[level|show|hide]", "show or set the reasoning effort (off, minimal, low, medium, high, xhigh, max); "
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
    reason = state.get("providerReason")
    rows = [
        ("session", state.get("sessionName") or "(unnamed)"),
        ("file", state.get("sessionFile")),
        ("workspace", state.get("workspaceRoot")),
        ("model", f"{_entry(model)} ({reason})" if reason else _entry(model)),
        ("reasoning", state.get("thinkingLevel")),
        ("messages", state.get("messageCount")),
        ("context", context_text(stats.get("contextUsage"), is_utf8(sys.stdout), window=model.get("contextWindow"),
                                 empty=not state.get("messageCount"))),
    ]
    for key, value in rows:
        shell.say(f"  {key:<10} {value}")


@register("stats", "[range]", "show this session's counts and cost; with a range (2 days, 1 month): telemetry")
def stats(shell: ShellPort, arg: str) -> None:
    if arg:  # the telemetry records of a range (logging/stats)
        shell.say(format_stats(shell.client.request("logging/stats", {"range": arg}, timeout=None)))
        return
    result = shell.client.request("runtime/stats", {"sessionId": shell.session_id}, timeout=None)
    window = None
    if not result.get("contextUsage"):
        window = (shell.client.request("models/current", {}) or {}).get("contextWindow")
    for line in usage_lines(result, is_utf8(sys.stdout), window=window):
        shell.say(line)


@register("reload", "", "re-read the config, credentials, AGENTS.md, prompt templates, skills and plugins")
def reload(shell: ShellPort, arg: str) -> None:
    result = shell.client.request("runtime/reload", {"sessionId": shell.session_id}, timeout=None)
    shell.server_commands = None  # listed again when next needed
    shell.note(str(result.get("message", "Reloaded.")))
