"""The terminal's answer to `tool/requestApproval` (the approval policy's question before a
tool call that may change something, `kward.agent.approval`): the terminal modes declare
in `initialize` that they answer it (`DECLARE`) and register an `Inbox` or `decline_all`.

`Inbox.handle` runs on the client's callback thread: it hands the request to the main
thread, which takes it in the turn loop (`kward.terminal.turn.run_turn`, `take`), asks
the user with `ask` and gives the reply back (`Pending.answer`); `handle` waits for it and
returns it as the request's result. A request still waiting when the turn loop stops
(`drain`) is declined. `ask` shows the tool, the diff of a write or edit (or the command
and its directory) and reads ``Allow? [y]es / [n]o / [a]lways this session / [e]dit
command`` (`e` only for the shell): y approves, n declines, a approves for the session,
e reads the command again (the line editor with it prefilled) and approves the edited one
(the reply's `args`). End of input declines; a KeyboardInterrupt (Ctrl-C) is the caller's
to turn into a decline (`CTRL_C`).

`decline_all` is the answer where nobody can be asked (one-shot mode without a terminal):
every call is declined with a reason saying how to allow it.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from kward.terminal.style import Style
from kward.terminal.textwidth import clean, cut
from kward.terminal.toolview import diff_lines

METHOD = "tool/requestApproval"
DECLARE = {"serverRequests": [METHOD]}  # the client capability (initialize)
SHELL = "run_shell_command"
QUESTION = "Allow? [y]es / [n]o / [a]lways this session"
EDIT_CHOICE = " / [e]dit command"
NO_TERMINAL = ("approval mode is ask and there is no terminal to ask on; give kward --yes, or set "
               "security.approvalMode to off in config.json, to allow such calls without asking")
CTRL_C = "the user declined this tool call (Ctrl-C)"

Reply = dict[str, Any]
#: Reads one line with a prompt (KeyboardInterrupt and EOFError propagate).
Read = Callable[[str], str]
#: Reads the edited command: the prompt and the text prefilled; None when dismissed.
EditLine = Callable[[str, str], "str | None"]


def decline(reason: str) -> Reply:
    return {"decision": "decline", "reason": reason}


def decline_all(params: object) -> Reply:
    """The handler where nobody can be asked."""
    return decline(NO_TERMINAL)


class Pending:
    """One request waiting for the main thread's answer."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self._done = threading.Event()
        self._reply: Reply = decline("no answer")

    def answer(self, reply: Reply) -> None:
        self._reply = reply
        self._done.set()

    def wait(self) -> Reply:
        self._done.wait()
        return self._reply


class Inbox:
    """Requests handed from the callback thread (`handle`) to the main thread (`take`,
    `drain`). The queue is the only shared state."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Pending] = queue.SimpleQueue()

    def handle(self, params: object) -> Reply:
        pending = Pending(params if isinstance(params, dict) else {})
        self._queue.put(pending)
        return pending.wait()

    def take(self) -> Pending | None:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def drain(self) -> None:
        """Decline whatever is still waiting (the turn loop stopped)."""
        while (pending := self.take()) is not None:
            pending.answer(decline("the turn ended before the user answered"))


def _object(params: dict[str, Any], key: str) -> dict[str, Any]:
    value = params.get(key)
    return value if isinstance(value, dict) else {}


def question_lines(params: dict[str, Any], style: Style, width: int) -> list[str]:
    """What is shown before the question: the tool and what it would do."""
    tool = clean(str(params.get("tool") or params.get("toolName") or "tool"))
    preview, args = _object(params, "preview"), _object(params, "args")
    lines = [style.bold(f"Approve {tool}?")]
    if isinstance(preview.get("command"), str):
        lines.append("  $ " + clean(preview["command"]))
        lines.append(style.dim("  in " + clean(str(preview.get("cwd", "")))))
    elif isinstance(preview.get("diff"), str):
        lines.append("  " + clean(str(args.get("path", ""))))
        lines.extend(diff_lines(preview["diff"], style, width))
    elif isinstance(preview.get("error"), str):
        lines.append(style.dim("  (it would fail: " + cut(clean(preview["error"]), width - 20) + ")"))
    else:
        lines.append(style.dim("  " + cut(clean(str(args)), width - 4)))
    return lines


def ask(params: dict[str, Any], say: Callable[[str], None], read: Read, edit_line: EditLine) -> Reply:
    """Ask the user about one call (see the module docstring)."""
    shell = params.get("tool") == SHELL
    prompt = QUESTION + (EDIT_CHOICE if shell else "") + ": "
    while True:
        try:
            reply = read(prompt).strip().lower()
        except EOFError:
            return decline("no answer (end of input)")
        if reply in ("y", "yes"):
            return {"decision": "approve"}
        if reply in ("n", "no"):
            return decline("the user declined this tool call")
        if reply in ("a", "always"):
            return {"decision": "approveForSession"}
        if shell and reply in ("e", "edit"):
            args = _object(params, "args")
            command = edit_line("$ ", str(args.get("command", "")))
            if command is None or not command.strip():
                return decline("the user declined this tool call (the edit was dismissed)")
            return {"decision": "approve", "args": {**args, "command": command}}
        say(f"(answer y, n, a{', e' if shell else ''})")
