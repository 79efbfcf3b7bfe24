"""Slash command /compact [instructions]: `sessions/compact` on the shell's session (the
same core operation as a UI's Compact action). When nothing is compacted, says why in
words (a short conversation, one compacted just now, a running turn: by the error's
reason, kward.terminal.wording). Main thread only; blocks while the model writes the
summary (Ctrl-C stops waiting)."""

from __future__ import annotations

from typing import Any

from kward.client import RpcError
from kward.terminal.commands import ShellPort, register
from kward.terminal.wording import error_text

#: reasons that mean "nothing was compacted" rather than a failure
NOTHING_DONE = ("nothing_to_compact", "already_compacted", "turn_in_progress")


@register("compact", "[instructions]", "summarize the older conversation to free context (optional focus)")
def compact(shell: ShellPort, arg: str) -> None:
    params: dict[str, Any] = {"sessionId": shell.session_id}
    if arg:
        params["customInstructions"] = arg
    shell.note("compacting...")
    try:
        result = shell.client.request("sessions/compact", params, timeout=None)
    except RpcError as exc:
        if exc.reason not in NOTHING_DONE:
            raise
        text = error_text(exc)
        shell.note(text[0].upper() + text[1:] + ".")
        return
    details = result.get("details") or {}
    shell.note(f"compacted: about {result.get('tokensBefore')} tokens summarized into a checkpoint; "
               f"kept from {result.get('firstKeptEntryId')} "
               f"({len(details.get('read_files') or [])} files read, "
               f"{len(details.get('modified_files') or [])} modified)")
