"""/edit: write the next input in the user's editor ($VISUAL, else $EDITOR).

The same as Ctrl-X Ctrl-E at the prompt (kward.terminal.lineedit_external), from a slash
command: the editor opens on the text after `/edit` (or on nothing), and what it leaves is
pre-filled as the next input (`ShellPort.edit`), sent only on Enter. Registered in
`commands.table()` like the other `cmd_*` modules; main thread only.
"""

from __future__ import annotations

from kward.terminal.commands import ShellPort, register


@register("edit", "[text]", "write the next message in $VISUAL or $EDITOR (on text, if given)")
def edit(shell: ShellPort, arg: str) -> None:
    shell.edit(arg)
