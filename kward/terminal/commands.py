"""The interactive slash commands: ONE table that every feature extends.

A command is registered with `register(name, args, summary, available=None)` as a
decorator on its handler `handler(shell, arg)`; `arg` is the text after the name,
stripped. `available(shell)` (optional) returns None when the command can run now, or the
reason it cannot. `/help`, `kward help` and the man page's INTERACTIVE COMMANDS are made
from (and checked against, tests/test_docs.py) this table. The built-in commands live in
`cmd_sessions` and `cmd_runtime`; later features (compaction, memory, prompt templates,
plugin commands) register theirs the same way. Built-in names are reserved: registering a
name twice raises ValueError.

The table is filled at import time on the main thread and only read afterwards.
"""

from __future__ import annotations

from typing import Any, Callable

Handler = Callable[[Any, str], None]
Availability = Callable[[Any], "str | None"]


class Command:
    """One slash command: `/name args`, its one-line summary and its handler."""

    __slots__ = ("name", "args", "summary", "handler", "available")

    def __init__(self, name: str, args: str, summary: str, handler: Handler, available: Availability | None):
        self.name, self.args, self.summary = name, args, summary
        self.handler, self.available = handler, available

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.args}".rstrip()


TABLE: dict[str, Command] = {}


def register(name: str, args: str = "", summary: str = "",
             available: Availability | None = None) -> Callable[[Handler], Handler]:
    """Add a command to the table (decorator). Raises ValueError for a taken name."""

    def add(handler: Handler) -> Handler:
        if name in TABLE:
            raise ValueError(f"slash command /{name} is already registered")
        TABLE[name] = Command(name, args, summary, handler, available)
        return handler

    return add


def table() -> dict[str, Command]:
    """Every command, the built-in ones loaded, in registration order."""
    from kward.terminal import cmd_sessions  # noqa: F401,I001 - they register themselves, in this order
    from kward.terminal import cmd_runtime  # noqa: F401

    return TABLE


def help_lines(width: int = 20) -> list[str]:
    return [f"  {c.usage:<{width}} {c.summary}" for c in table().values()]


def dispatch(shell: Any, line: str) -> None:
    """Run the slash command on `line` (which starts with "/")."""
    from kward.client import ClientClosed, RpcError  # not at import: `kward help` reads the table only

    name, _, arg = line[1:].strip().partition(" ")
    command = table().get(name)
    if command is None:
        shell.error(f"unknown command: /{name} (type /help for the commands)")
        return
    reason = command.available(shell) if command.available else None
    if reason:
        shell.error(f"/{name} is not available: {reason}")
        return
    try:
        command.handler(shell, arg.strip())
    except RpcError as exc:
        shell.error(exc.message)
    except ClientClosed:
        raise
    except KeyboardInterrupt:
        shell.say()


# --- the commands of the shell itself --------------------------------------------------

@register("help", "", "list the commands")
def _help(shell: Any, arg: str) -> None:
    shell.say("Commands:")
    for line in help_lines():
        shell.say(line)
    shell.say(shell.style.dim("Anything else is sent to the model. Ctrl-C cancels a running turn; "
                              "Ctrl-C twice at an empty prompt, or Ctrl-D, exits."))


@register("exit", "", "leave kward")
def _exit(shell: Any, arg: str) -> None:
    shell.done = True


@register("quit", "", "leave kward (same as /exit)")
def _quit(shell: Any, arg: str) -> None:
    shell.done = True
