"""Slash command /compact [instructions]: `sessions/compact` on the shell's session (the
same core operation as a UI's Compact action). Main thread only; blocks while the model
writes the summary (Ctrl-C stops waiting)."""

from __future__ import annotations

from typing import Any

from kward.terminal.commands import ShellPort, register


@register("compact", "[instructions]", "summarize the older conversation to free context (optional focus)")
def compact(shell: ShellPort, arg: str) -> None:
    params: dict[str, Any] = {"sessionId": shell.session_id}
    if arg:
        params["customInstructions"] = arg
    shell.note("compacting...")
    result = shell.client.request("sessions/compact", params, timeout=None)
    details = result.get("details") or {}
    shell.note(f"compacted: about {result.get('tokensBefore')} tokens summarized into a checkpoint; "
               f"kept from {result.get('firstKeptEntryId')} "
               f"({len(details.get('read_files') or [])} files read, "
               f"{len(details.get('modified_files') or [])} modified)")
