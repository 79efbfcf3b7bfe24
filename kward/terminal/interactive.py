"""Interactive mode: `kward` on a terminal.

kward's own line editor (`lineedit.LineEditor`: multi-line input, bracketed paste, the
user's editor on the input; plain `input()` when stdin or stdout is not a terminal or TERM
is `dumb`) with the history in `<config dir>/history` (`lineedit_history`), a session
opened at start (`sessions/create`; the same session files the RPC uses, so `/resume` and
a UI see them), each input a turn whose answer streams in (the input as typed, its
indentation kept, less the blank lines around it and the blanks at its end), slash
commands from `commands.TABLE`, and a status line with the model and the context usage
after each turn (`runtime/state`, `runtime/stats`). Answers to a pick list or a question
of the model are read with `input()` in the terminal's normal mode (`Shell.read`).

Before a tool call that may change something the user is asked inline (approval mode
`ask`, this mode's default unless config.json sets one; `--yes`: off for every session of
the run): the terminal declares that it answers `tool/requestApproval` and answers it in
the turn loop (`kward.terminal.approve`; `e` edits the command in the line editor).

Ctrl-C while a turn runs cancels it (see `turn`); at the prompt it clears the input, and a
second Ctrl-C at an empty prompt within `EXIT_WINDOW` seconds (`ExitGuard`), or Ctrl-D on
an empty input, exits; the Ctrl-C that canceled a turn does not count. What is typed while
a turn runs is kept by the terminal and taken by the next read: a line ended with Enter is
sent when the turn ends (the next one after the next turn), a line not ended is the start
of the input (see `lineedit`); a Ctrl-C that cancels a turn drops what was typed ahead.
On the way out the session is closed (`sessions/close`: the server removes it when it
stayed unused).

Main thread only; `Shell` is the object slash-command handlers receive (a
`commands.ShellPort`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from kward import __version__
from kward.client import Client, ClientClosed, RpcError
from kward.terminal import approve, banner, commands, lineedit_external, lineedit_term
from kward.terminal.host import fail, warn
from kward.terminal.lineedit import EOF, INTERRUPT, LINE, LineEditor, ReadResult
from kward.terminal.lineedit_history import History
from kward.terminal.render import TurnView
from kward.terminal.style import Style
from kward.terminal.turn import Interrupts, Question, ask_inline, run_turn
from kward.terminal.wording import error_text

PROMPT = "kward> "
EXIT_WINDOW = 2.0  # seconds: a second Ctrl-C at an empty prompt within this exits


class ExitGuard:
    """Whether a Ctrl-C at the prompt exits: the second one on an empty input within
    `window` seconds of the first does. Sending anything, or a Ctrl-C that cleared typed
    text, disarms it; a turn canceled with Ctrl-C does not touch it. `clock` is injected
    (seconds, monotonic). Main thread only."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: float = EXIT_WINDOW):
        self.clock = clock
        self.window = window
        self._armed_at: float | None = None

    @property
    def armed(self) -> bool:
        return self._armed_at is not None

    def interrupt(self, cleared: str) -> bool:
        """A Ctrl-C at the prompt that cleared `cleared`; True: exit now."""
        if cleared:
            self._armed_at = None
            return False
        now = self.clock()
        if self._armed_at is not None and now - self._armed_at <= self.window:
            return True
        self._armed_at = now
        return False

    def reset(self) -> None:
        self._armed_at = None


def _as_sent(text: str) -> str:
    """An input as it is sent: as typed (a pasted block keeps its indentation), without the
    blank lines around it and the blanks at its end."""
    lines = text.rstrip().split("\n")
    while not lines[0].strip():
        del lines[0]
    return "\n".join(lines)


def _tokens(n: object) -> str:
    if not isinstance(n, (int, float)):
        return "?"
    return f"{n / 1000:.0f}k" if n >= 10_000 else str(int(n))


class Shell:
    """The interactive session: the client, the open session and the terminal."""

    def __init__(self, client: Client, env: Mapping[str, str], cwd: str, *, model_override: str | None = None,
                 clock: Callable[[], float] = time.monotonic, yes: bool = False):
        self.client = client
        self.env = env
        self.cwd = cwd
        self.model_override = model_override
        self.out = sys.stdout
        self.style = Style.for_stream(self.out, env)
        self.interrupts = Interrupts()
        self.session: dict[str, Any] | None = None
        self.server_commands: dict[str, dict[str, Any]] | None = None  # commands.server_commands
        self.done = False
        self.reasoning_shown = True  # /reasoning show|hide
        self.editor: LineEditor | None = None  # the line editor, when the terminal has one
        self.history = History(None)  # (its file is found at start)
        self.exit_guard = ExitGuard(clock)
        self._prefill: str | None = None
        self.yes = yes  # --yes: every session's approval mode is off
        self.approvals = approve.Inbox()  # tool/requestApproval, answered in the turn loop

    # --- output and input helpers (for commands too) ----------------------------------

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def note(self, text: str) -> None:
        self.say(self.style.dim(text))

    def error(self, text: str) -> None:
        self.say(self.style.red("error: ") + text)

    def read(self, prompt: str) -> str:
        """One line from the user (KeyboardInterrupt and EOFError propagate)."""
        with self.interrupts.raising():
            return input(prompt)

    def pick(self, items: list[str], what: str) -> int | None:
        """Show a numbered list and return the chosen index; None when dismissed."""
        for n, item in enumerate(items, 1):
            self.say(f"  {n:>2}. {item}")
        try:
            reply = self.read(f"{what} [1-{len(items)}, empty to cancel]: ").strip()
        except (EOFError, KeyboardInterrupt):
            self.say()
            return None
        if reply.isdigit() and 1 <= int(reply) <= len(items):
            return int(reply) - 1
        if reply:
            self.error(f"not a number from 1 to {len(items)}: {reply}")
        return None

    def prefill(self, text: str) -> None:
        """Offer `text` as the next input (editable); printed where that is not possible."""
        if self.editor is not None:
            self._prefill = text
        else:
            self.say(self.style.dim("Edit and send:") + f" {text}")

    def edit(self, text: str) -> None:
        """/edit: `text` in $VISUAL or $EDITOR (the terminal is in its normal mode here);
        the result is offered as the next input, not sent."""
        edited = lineedit_external.edit(text, self.env)
        if edited.text is None:
            self.note(f"({edited.problem})")
        else:
            self.prefill(edited.text)

    # --- session ----------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        assert self.session is not None
        return str(self.session["id"])

    def switch(self, session: dict[str, Any]) -> None:
        """Make `session` (a session payload) the current one and close the previous id."""
        previous, self.session = self.session, session
        if self.yes:
            self.client.request("runtime/updateSetting", {"sessionId": session["id"], "settingId": "approvalMode",
                                                          "value": "off"})
        if previous is not None and previous.get("id") != session.get("id"):
            try:
                self.client.request("sessions/close", {"sessionId": previous["id"]}, timeout=None)
            except RpcError:
                pass  # already gone (deleted elsewhere): nothing to close

    def new_session(self) -> dict[str, Any]:
        session = self.client.request("sessions/create", {"workspaceRoot": self.cwd}, timeout=None)
        self.switch(session)
        return session

    def status_line(self) -> None:
        try:
            state = self.client.request("runtime/state", {"sessionId": self.session_id})
            stats = self.client.request("runtime/stats", {"sessionId": self.session_id})
        except RpcError:
            return
        model = state.get("model") or {}
        parts = [f"{model.get('provider')}/{model.get('id')}", f"reasoning {state.get('thinkingLevel', 'off')}"]
        usage = stats.get("contextUsage") or {}
        if isinstance(usage.get("tokens"), (int, float)):
            window = usage.get("contextWindow")
            context = f"context {_tokens(usage['tokens'])}"
            if isinstance(window, (int, float)) and window:
                context += f"/{_tokens(window)} ({usage.get('percent', 0)}%)"
            parts.append(context)
        self.note(" | ".join(parts))

    # --- turns ------------------------------------------------------------------------

    def ask(self, questions: list[Question]) -> list[dict[str, str]] | None:
        return ask_inline(questions, self.write, self.read)

    def approve(self, params: dict[str, Any], view: TurnView) -> dict[str, Any]:
        """The approval question of a tool call (`kward.terminal.approve`)."""
        view.lines(approve.question_lines(params, self.style, view.width))
        return approve.ask(params, self.note, self.read, self._edit_line)

    def _edit_line(self, prompt: str, text: str) -> str | None:
        """The command edited: in the line editor with it prefilled, else typed anew."""
        if self.editor is None:
            self.note(f"(type the command to run instead of: {text})")
            try:
                return self.read(prompt)
            except EOFError:
                return None
        got = self.editor.read(prompt, text)
        return got.text if got.kind == LINE else None

    def turn(self, text: str) -> None:
        view = TurnView(self.out, self.out, self.style, self.style, reasoning_shown=self.reasoning_shown)
        try:
            finished = run_turn(self.client, self.session_id, text, view, self.interrupts, ask=self.ask,
                                approvals=self.approvals, approve=self.approve)
        except RpcError as exc:
            self.error(error_text(exc))
            return
        if finished.get("status") == "canceled" and self.editor is not None:
            self.editor.drop_typed_ahead()  # (as the terminal dropped what it held at the Ctrl-C)
        self.status_line()

    # --- the loop ---------------------------------------------------------------------

    def start(self) -> None:
        self.client.on_request(approve.METHOD, self.approvals.handle)
        init = self.client.initialize(name="kward-terminal", version=__version__, experimentalApi=True,
                                      **approve.DECLARE)  # (kward's own client: every part)
        for message in banner.unreported_warnings(init):
            warn(message)
        self.new_session()
        self._setup_history_and_editor()
        for line in banner.lines(self.client, self.cwd, self.style, self.env):
            self.say(line)

    def loop(self) -> None:
        while not self.done:
            got = self._input()
            if got.kind == EOF:
                return
            if got.kind == INTERRUPT:
                if self.exit_guard.interrupt(got.text):
                    return
                if self.exit_guard.armed:
                    self.note("(Ctrl-C again to exit)")
                continue
            self.exit_guard.reset()
            if not got.text.strip():
                continue
            line = _as_sent(got.text)
            if line.lstrip().startswith("/"):
                line = line.strip()  # (a command)
            self._remember(line)
            if line.startswith("/"):
                commands.dispatch(self, line)
            else:
                self.turn(line)

    def close(self) -> None:
        self.approvals.drain()  # (a question that came after its turn loop: declined, its handler released)
        if self.editor is not None:
            self.editor.close()
            self.editor = None
        if self.session is not None:
            try:
                self.client.request("sessions/close", {"sessionId": self.session_id}, timeout=10)
            except (RpcError, ClientClosed, TimeoutError):
                pass

    # --- input -----------------------------------------------------------------------

    def _input(self) -> ReadResult:
        """The next input from the line editor, or from `input()` without one."""
        prefill, self._prefill = self._prefill, None
        prompt = self.style.bold(PROMPT)
        if self.editor is not None:
            try:
                return self.editor.read(prompt, prefill or "")
            except KeyboardInterrupt:  # (a SIGINT as the read began or ended: the editor takes the others)
                self.say()
                return ReadResult(INTERRUPT, self.editor.buffer.text)
        try:
            return ReadResult(LINE, self.read(prompt))
        except EOFError:
            self.say()
            return ReadResult(EOF)
        except KeyboardInterrupt:
            self.say()
            return ReadResult(INTERRUPT)

    def _setup_history_and_editor(self) -> None:
        """The history (its file next to config.json) and the line editor, when stdin and
        stdout are a terminal that has one (`lineedit_term.usable`)."""
        try:
            config = self.client.request("config/read", {})
            self.history = History(Path(config["path"]).parent / "history")
        except (RpcError, KeyError, TypeError):
            self.history = History(None)
        try:
            self.history.load()
        except OSError as exc:
            self._drop_history(exc)
        if lineedit_term.usable(sys.stdin, self.out, self.env):
            self.editor = LineEditor(sys.stdin.fileno(), self.out, self.history, complete=self._complete,
                                     env=self.env, style=self.style)

    def _drop_history(self, exc: OSError) -> None:
        self.history.path = None
        where = f"{exc.filename}: " if exc.filename else ""
        self.note(f"(history not used: {where}{exc.strerror or exc})")

    def _complete(self, word: str) -> list[str]:
        """The slash commands (built-in and the server's) whose `/name` starts with `word`."""
        return [f"/{name}" for name in [*commands.table(), *commands.server_commands(self)]
                if f"/{name}".startswith(word)]

    def _remember(self, line: str) -> None:
        try:
            self.history.add(line)
        except OSError as exc:
            self._drop_history(exc)


def run(env: Mapping[str, str], cwd: str, *, model_override: str | None = None, yes: bool = False) -> int:
    """The interactive session (approval mode `ask` unless config.json sets one; `yes`:
    off); returns the exit status."""
    with Client.in_process(env=env, cwd=cwd, approval_default="ask") as client:
        shell = Shell(client, env, cwd, model_override=model_override, yes=yes)
        try:
            shell.start()
            shell.loop()
        except RpcError as exc:  # the session could not be opened (an unusable workspace or config)
            return fail(error_text(exc))
        except ClientClosed:
            return fail("the kward core stopped unexpectedly (see the log in the config directory)")
        finally:
            shell.close()
    return 0
