"""The memory commands of the terminal: `/memory ...` in an interactive session and
`kward memory ...` on the command line, both requests on a `kward.client.Client`.

    status | enable | disable | auto-summary enable|disable | core TEXT | add TEXT |
    list [--all] | forget ID | promote ID | relax ID | inspect | why | summarize

`core` adds a global core memory, `add` a soft memory of the current workspace; `list`
shows the global core, workspace core and workspace soft memories (`--all`: forgotten
ones too); `relax` makes a global core memory one of this workspace, `promote` a soft
memory core (or a workspace core memory global); `why` explains the last retrieval;
`summarize` learns soft memories from the session (interactive only). Main thread.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from kward import __version__
from kward.client import Client, RpcError
from kward.terminal.wording import error_text

USAGE = ("enable|disable|auto-summary enable|disable|core <text>|add <text>|list [--all]|forget <id>|"
         "promote <id>|relax <id>|inspect|why|summarize|status")


class MemoryUsage(Exception):
    """The command line was not a memory command; the text is the usage."""


def unquote(text: str) -> str:
    value = text.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value


def _records(title: str, items: list[dict[str, Any]]) -> list[str]:
    lines = [title]
    lines += [f"- {m.get('id')} [{m.get('scope')}] {m.get('text')}" for m in items] or ["- none"]
    return lines


def format_list(result: dict[str, Any]) -> str:
    return "\n".join(_records("Global Core Memories:", result.get("global_core") or [])
                     + _records("Workspace Core Memories:", result.get("workspace_core") or [])
                     + _records("Workspace Soft Memories:", result.get("workspace_soft") or [])
                     + (_records("Global Soft Memories:", result["global_soft"]) if result.get("global_soft") else []))


def format_status(status: dict[str, Any], prefix: str = "/memory") -> str:
    paths = status.get("paths") or {}
    lines = [f"Memory: {'enabled' if status.get('enabled') else 'disabled'}; auto-summary: "
             f"{'enabled' if status.get('autoSummary') else 'disabled'}",
             *(f"  {name:<7} {paths[name]}" for name in ("core", "soft", "events") if name in paths)]
    if not status.get("enabled"):
        lines.append(off_note(prefix))
    return "\n".join(lines)


def off_note(prefix: str = "/memory") -> str:
    """The line of a memory command run while memory is off: what that means, and how to
    switch it on (the spelling of `prefix`, `/memory` or `kward memory`, first)."""
    first = f"`{prefix} enable`" if prefix != "/memory" else "/memory enable"
    rest = "`kward memory enable`" if prefix == "/memory" else "/memory enable in `kward`"
    return (f"(memory is off: memories are kept but not used in turns; turn it on with {first}, {rest}, "
            'or "memory": {"enabled": true} in config.json)')


def run(client: Client, line: str, *, workspace_root: str, session_id: str | None = None, prefix: str = "/memory") -> str:
    """Run one memory command; the text to show. MemoryUsage for an unknown command or a
    missing argument; kward.client.RpcError when the server refused it."""
    return _run(client, line, workspace_root=workspace_root, session_id=session_id, prefix=prefix)


def note_after(client: Client, line: str, prefix: str = "/memory") -> str | None:
    """`off_note` when memory is off and `line` was a command that works on memories (not
    status, which says it, nor enable or disable); None otherwise."""
    sub = line.strip().partition(" ")[0].lower()
    if sub in ("", "status", "enable", "disable", "auto-summary"):
        return None
    return None if client.request("memory/status", {}).get("enabled") else off_note(prefix)


def _run(client: Client, line: str, *, workspace_root: str, session_id: str | None, prefix: str) -> str:
    sub, _, rest = line.strip().partition(" ")
    sub, rest = sub.lower(), rest.strip()
    usage = MemoryUsage(f"Usage: {prefix} {USAGE}")

    def need(what: str) -> str:
        if not rest:
            raise MemoryUsage(f"Usage: {prefix} {sub} <{what}>")
        return rest

    request = client.request
    if sub in ("", "status"):
        return format_status(request("memory/status", {}), prefix)
    if sub in ("enable", "disable"):
        request(f"memory/{sub}", {}, timeout=None)
        return f"Memory {sub}d."
    if sub == "auto-summary":
        choice = {"enable": "enable", "on": "enable", "disable": "disable", "off": "disable"}.get(rest.lower())
        if choice is None:
            raise MemoryUsage(f"Usage: {prefix} auto-summary enable|disable")
        request(f"memory/autoSummary/{choice}", {}, timeout=None)
        return f"Memory auto-summary {choice}d."
    if sub in ("core", "add"):
        text = unquote(need("text"))
        params = {"text": text, "workspaceRoot": workspace_root}
        if sub == "add":
            params["scope"] = "workspace"
        record = request("memory/addCore" if sub == "core" else "memory/add", params, timeout=None)["memory"]
        return f"Added {'core' if sub == 'core' else 'soft'} memory {record.get('id')}."
    if sub == "list":
        if rest not in ("", "--all"):
            raise MemoryUsage(f"Usage: {prefix} list [--all]")
        return format_list(request("memory/list", {"workspaceRoot": workspace_root, "includeInactive": rest == "--all"},
                                   timeout=None))
    if sub == "forget":
        memory_id = need("id")
        forgotten = request("memory/forget", {"id": memory_id}, timeout=None).get("forgotten")
        return f"Forgot {memory_id}." if forgotten else f"No memory found for {memory_id}."
    if sub in ("promote", "relax"):
        params = {"id": need("id"), "workspaceRoot": workspace_root}
        record = request(f"memory/{sub}", params, timeout=None)["memory"]
        return f"{'Promoted' if sub == 'promote' else 'Relaxed'} memory {record.get('id')}."
    if sub == "inspect":
        return json.dumps(request("memory/inspect", {}, timeout=None), indent=2, ensure_ascii=False)
    if sub == "why":
        result = request("memory/why", {"sessionId": session_id} if session_id else {}, timeout=None)
        return str(result.get("explanation") if result.get("reasons") else result.get("message"))
    if sub in ("summarize", "learn"):
        if session_id is None:
            raise MemoryUsage("memory summarize learns from a session: use /memory summarize in `kward`")
        found = request("memory/summarize", {"sessionId": session_id}, timeout=None).get("memories") or []
        return f"Learned {len(found)} soft {'memory' if len(found) == 1 else 'memories'}."
    raise usage


def run_memory_command(args: list[str], env: Mapping[str, str], cwd: str) -> int:
    """`kward memory ...` through an in-process server: 0, 2 for a usage error, 1 when
    the server refused the command (one line on stderr)."""
    with Client.in_process(env=env, cwd=cwd) as client:
        client.initialize(name="kward-memory", version=__version__)
        try:
            text = run(client, " ".join(args), workspace_root=cwd, prefix="kward memory")
            note = note_after(client, " ".join(args), prefix="kward memory")
        except MemoryUsage as exc:
            sys.stderr.write(f"{exc}\n")
            return 2
        except RpcError as exc:
            sys.stderr.write(f"kward memory: {error_text(exc)}\n")
            return 1
    sys.stdout.write(text + "\n")
    if note:
        sys.stderr.write(f"kward memory: {note}\n")
    return 0
