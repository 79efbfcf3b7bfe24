"""The interactive slash commands: ONE table that every feature extends.

A command is registered with `register(name, args, summary, available=None)` as a
decorator on its handler `handler(shell, arg)`: `shell` is the interactive session (what a
command may use of it is `ShellPort`; kward.terminal.interactive.Shell is the one), `arg` is
the text after the name, stripped. `available(shell)` (optional) returns None when the
command can run now, or the reason it cannot. `/help`, `kward help` and the man page's
INTERACTIVE COMMANDS are made from (and checked against, tests/packaging/test_docs.py) this table. The built-in commands live in
`cmd_sessions` and `cmd_runtime`; later features (`cmd_memory`, `cmd_compact`, `cmd_edit`)
register theirs the same way. `KEYS` is the prompt's key summary /help shows. Built-in names are reserved: registering a name twice raises ValueError (and
the server reserves them for templates and plugins too: kward.resources.prompts.RESERVED).

Prompt templates and plugin commands are the server's (`commands/list`, fetched once per
shell and again after /reload: `server_commands`): /help lists them, and `/name args`
naming one is sent as a turn, which the server expands or runs (`turns/start`).

The table is filled at import time on the main thread and only read afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

from kward.client import Client, ClientClosed, RpcError
from kward.terminal import wording
from kward.terminal.style import Style


class ShellPort(Protocol):
    """What a slash command may use of the interactive session (main thread only)."""

    client: Client
    env: Mapping[str, str]  # the in-process server's environment (ours plus `--model`'s settings)
    cwd: str
    model_override: str | None  # the `--model` of this run
    style: Style
    session: dict[str, Any] | None  # the current session's payload
    server_commands: dict[str, dict[str, Any]] | None  # `server_commands`' cache; None: fetch again
    done: bool  # set to leave the loop
    reasoning_shown: bool  # the model's reasoning shown in full (else one line per turn)

    @property
    def session_id(self) -> str: ...

    def say(self, text: str = "") -> None: ...

    def note(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...

    def pick(self, items: list[str], what: str) -> int | None: ...

    def prefill(self, text: str) -> None: ...

    def edit(self, text: str) -> None: ...  # /edit: text in $VISUAL/$EDITOR, the result pre-filled

    def switch(self, session: dict[str, Any]) -> None: ...

    def new_session(self) -> dict[str, Any]: ...

    def turn(self, text: str) -> None: ...


Handler = Callable[[ShellPort, str], None]
Availability = Callable[[ShellPort], str | None]


@dataclass(frozen=True, slots=True)
class Command:
    """One slash command: `/name args`, its one-line summary and its handler."""

    name: str
    args: str
    summary: str
    handler: Handler
    available: Availability | None

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
    from kward.terminal import cmd_memory  # noqa: F401
    from kward.terminal import cmd_compact  # noqa: F401
    from kward.terminal import cmd_edit  # noqa: F401

    return TABLE


def help_lines(width: int = 20) -> list[str]:
    return [f"  {c.usage:<{width}} {c.summary}" for c in table().values()]


#: The prompt's keys (kward.terminal.lineedit), as /help lists them: (keys, what they do).
KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send"),
    ("Alt-Enter, Ctrl-J", "a new line (so does a trailing \\ before Enter)"),
    ("paste", "a pasted block is one message, sent on Enter"),
    ("Ctrl-X Ctrl-E, /edit", "edit the input in $VISUAL or $EDITOR"),
    ("Up, Down", "the input's lines, then the history"),
    ("Tab", "complete a command's name"),
    ("Ctrl-C", "clear the input; cancel a running turn"),
    ("Ctrl-C twice, Ctrl-D", "exit (at an empty prompt)"),
)


def key_lines(width: int = 22) -> list[str]:
    return [f"  {keys:<{width}} {what}" for keys, what in KEYS]


def server_commands(shell: ShellPort) -> dict[str, dict[str, Any]]:
    """The server's prompt templates, skill commands (`skill:<name>`) and plugin commands by
    name (`commands/list`), cached on the shell (`shell.server_commands`; None: fetch again)."""
    cached = shell.server_commands
    if cached is None:
        try:
            listed = shell.client.request("commands/list", {"sessionId": shell.session_id}, timeout=None)
        except RpcError as exc:
            shell.error(f"the prompt templates and plugin commands are not available: {wording.error_text(exc)}")
            listed = {}
        cached = {c["name"]: c for c in listed.get("commands") or []
                  if isinstance(c, dict) and c.get("source") in ("prompt", "skill", "plugin") and c.get("name") not in TABLE}
        shell.server_commands = cached
    return cached


def server_help_lines(shell: ShellPort, width: int = 20) -> list[str]:
    lines = []
    for name, c in server_commands(shell).items():
        usage = f"/{name} {c.get('argumentHint') or ''}".rstrip()
        kind = c.get("source") if c.get("source") in ("plugin", "skill") else "prompt"
        description = c.get("description") or ""
        lines.append(f"  {usage:<{width}} {description} ({kind})" if description else f"  {usage:<{width}} ({kind})")
    return lines


def dispatch(shell: ShellPort, line: str) -> None:
    """Run the slash command on `line` (which starts with "/")."""
    name, _, arg = line[1:].strip().partition(" ")
    command = table().get(name)
    if command is None:
        if name in server_commands(shell):
            shell.turn(line)  # the server expands the template or skill, or runs the plugin command
            return
        shell.error(f"unknown command: /{name} (type /help for the commands)")
        return
    reason = command.available(shell) if command.available else None
    if reason:
        shell.error(f"/{name} is not available: {reason}")
        return
    try:
        command.handler(shell, arg.strip())
    except RpcError as exc:
        shell.error(wording.error_text(exc))
    except ClientClosed:
        raise
    except KeyboardInterrupt:
        shell.say()


# --- the commands of the shell itself --------------------------------------------------

@register("help", "", "list the commands")
def _help(shell: ShellPort, arg: str) -> None:
    shell.say("Commands:")
    for line in help_lines():
        shell.say(line)
    extra = server_help_lines(shell)
    if extra:
        shell.say("Prompt templates and plugin commands:")
        for line in extra:
            shell.say(line)
    shell.say("Keys:")
    for line in key_lines():
        shell.say(line)
    shell.say(shell.style.dim("Anything else is sent to the model."))


@register("exit", "", "leave kward")
def _exit(shell: ShellPort, arg: str) -> None:
    shell.done = True


@register("quit", "", "leave kward (same as /exit)")
def _quit(shell: ShellPort, arg: str) -> None:
    shell.done = True
