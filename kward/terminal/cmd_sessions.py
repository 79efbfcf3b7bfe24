"""Slash commands on sessions: /new /resume /name /clone /fork /export (without a path:
a new file in the current directory named after the session, never one that exists).

Each is a few protocol requests (`sessions/*`) on the shell's client; the shell switches
to the session a command opens and closes the previous one. Main thread only.
"""

from __future__ import annotations

import os
import re
from typing import Any

from kward.terminal.commands import ShellPort, register
from kward.terminal.render import short
from kward.terminal.textwidth import clean


def _title(item: dict[str, Any]) -> str:
    return short(str(item.get("name") or item.get("firstMessage") or "(no messages yet)"), 60)


def _when(stamp: object) -> str:
    return str(stamp or "")[:16].replace("T", " ")


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")


def _opened(shell: ShellPort, verb: str, session: dict[str, Any]) -> None:
    """Report the session just opened: its name, size and last exchange."""
    shell.switch(session)
    state = shell.client.request("runtime/state", {"sessionId": shell.session_id})
    name = clean(str(state.get("sessionName") or "(unnamed)"))
    shell.note(f"{verb}: {name} ({state.get('messageCount', 0)} messages) {session.get('path', '')}")
    transcript = shell.client.request("sessions/transcript", {"sessionId": shell.session_id}, timeout=None)
    last: dict[str, str] = {}
    for message in transcript.get("messages") or []:
        if message.get("role") in ("user", "assistant") and _text_of(message).strip():
            last[message["role"]] = _text_of(message)
    for role in ("user", "assistant"):
        if role in last:
            shell.note(f"  {role}: {short(last[role], 100)}")


@register("new", "", "start a new session")
def new(shell: ShellPort, arg: str) -> None:
    session = shell.new_session()
    shell.note(f"new session: {session.get('path', '')}")


@register("resume", "[path]", "resume a session of this workspace (a numbered list without a path)")
def resume(shell: ShellPort, arg: str) -> None:
    if not arg:
        listed = shell.client.request("sessions/list", {"workspaceRoot": shell.cwd, "limit": 20}, timeout=None)
        current = shell.session.get("path") if shell.session else None
        items = [s for s in listed.get("sessions") or [] if s.get("path") != current]
        if not items:
            shell.note("No other sessions in this workspace.")
            return
        rows = [f"{'  ' * int(s.get('depth') or 0)}{_title(s)}  ({s.get('messageCount', 0)} messages, "
                f"{_when(s.get('modifiedAt'))})" for s in items]
        index = shell.pick(rows, "resume")
        if index is None:
            return
        arg = items[index]["path"]
    session = shell.client.request("sessions/resume", {"path": os.path.expanduser(arg), "workspaceRoot": shell.cwd},
                                   timeout=None)
    _opened(shell, "resumed", session)


@register("name", "[name]", "name the session (without a name: show it)")
def name(shell: ShellPort, arg: str) -> None:
    if not arg:
        state = shell.client.request("runtime/state", {"sessionId": shell.session_id})
        shell.note(f"session name: {clean(str(state.get('sessionName') or '(unnamed)'))}")
        return
    renamed = shell.client.request("sessions/rename", {"sessionId": shell.session_id, "name": arg})
    shell.session = {**(shell.session or {}), **renamed}
    shell.note(f"session named: {clean(arg)}")


@register("clone", "", "continue in a copy of this session")
def clone(shell: ShellPort, arg: str) -> None:
    session = shell.client.request("sessions/clone", {"sessionId": shell.session_id}, timeout=None)
    _opened(shell, "cloned", session)


@register("fork", "", "continue from before one of your messages (pick it from a list)")
def fork(shell: ShellPort, arg: str) -> None:
    listed = shell.client.request("sessions/forkMessages", {"sessionId": shell.session_id}, timeout=None)
    messages = listed.get("messages") or []
    if not messages:
        shell.note("Nothing to fork from yet: this session has no messages of yours.")
        return
    index = shell.pick([short(str(m.get("text", "")), 100) for m in messages], "fork before")
    if index is None:
        return
    result = shell.client.request("sessions/fork", {"sessionId": shell.session_id,
                                                    "entryId": messages[index]["entryId"]}, timeout=None)
    _opened(shell, "forked", result["session"])
    if result.get("text"):
        shell.prefill(str(result["text"]))


@register("export", "[path]", "write the session as Markdown (or HTML for a .html path); without a path into "
          "the current directory")
def export(shell: ShellPort, arg: str) -> None:
    params: dict[str, Any] = {"sessionId": shell.session_id, "path": arg or free_name(shell.cwd, _export_stem(shell))}
    if params["path"].lower().endswith((".html", ".htm")):
        params["format"] = "html"
    result = shell.client.request("sessions/export", params, timeout=None)
    shell.note(f"exported ({result.get('format')}): {result.get('path')}")


def _export_stem(shell: ShellPort) -> str:
    """`kward-<session name>` or `kward-<when the session started>` (from its file name)."""
    state = shell.client.request("runtime/state", {"sessionId": shell.session_id})
    name = _slug(str(state.get("sessionName") or ""))
    if name:
        return f"kward-{name}"
    started = os.path.basename(str(state.get("sessionFile") or "")).partition("_")[0]
    return "kward-" + (_slug(started.replace("T", "-")[:16]) or "session")


def _slug(text: str) -> str:
    """Lower-case letters, digits and single dashes, at most 60 characters."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].rstrip("-")


def free_name(directory: str, stem: str, suffix: str = ".md") -> str:
    """`directory/stem.md`, or `stem-2.md`, `stem-3.md`, ... the first that does not exist
    (an existing file is never overwritten)."""
    n = 1
    while True:
        candidate = os.path.join(directory, f"{stem}{'' if n == 1 else f'-{n}'}{suffix}")
        if not os.path.lexists(candidate):
            return candidate
        n += 1
