"""Slash command /memory (kward.terminal.memory_view): the memory methods on the shell's
client, for the current session and its workspace; while memory is off, each command
says so and how to turn it on. Main thread only."""

from __future__ import annotations

from kward.terminal.commands import ShellPort, register
from kward.terminal.memory_view import MemoryUsage, note_after, run


@register("memory", "[command]", "memory: enable, disable, auto-summary, core, add, list, forget, promote, relax, "
          "inspect, why, summarize")
def memory(shell: ShellPort, arg: str) -> None:
    session = shell.session or {}
    try:
        text = run(shell.client, arg, workspace_root=session.get("workspaceRoot") or shell.cwd,
                   session_id=session.get("id"))
    except MemoryUsage as exc:
        shell.note(str(exc))
        return
    shell.say(text)
    note = note_after(shell.client, arg)
    if note:
        shell.note(note)
