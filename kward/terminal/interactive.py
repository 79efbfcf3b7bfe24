"""Interactive mode: `kward` on a terminal.

A line editor (stdlib `readline` where available) with history in `<config dir>/history`
(mode 0600), a session opened at start (`sessions/create`; the same session files the RPC
uses, so `/resume` and a UI see them), each input line a turn whose answer streams in,
slash commands from `commands.TABLE`, and a status line with the model and the context
usage after each turn (`runtime/state`, `runtime/stats`).

Ctrl-C while a turn runs cancels it (see `turn`); at the prompt it clears the line, and a
second Ctrl-C at an empty prompt (or Ctrl-D) exits. On the way out the session is closed
(`sessions/close`: the server removes it when it stayed unused).

Main thread only; `Shell` is the object slash-command handlers receive (a
`commands.ShellPort`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from kward import __version__
from kward.client import Client, ClientClosed, RpcError
from kward.fsutil import APPEND_OWN, open_own
from kward.terminal import commands
from kward.terminal.host import fail
from kward.terminal.render import TurnView
from kward.terminal.style import Style
from kward.terminal.turn import Interrupts, Question, ask_inline, run_turn

PROMPT = "kward> "
HISTORY_LIMIT = 1000
HISTORY_BYTES = 4 << 20  # a larger history file is not read (nor written)


class LineEditor(Protocol):
    """What the shell uses of the stdlib `readline` module (GNU readline or libedit)."""

    def get_line_buffer(self) -> str: ...

    def insert_text(self, text: str, /) -> None: ...

    def set_startup_hook(self, hook: Callable[[], object] | None = None, /) -> None: ...

    def get_current_history_length(self) -> int: ...

    def get_history_item(self, index: int, /) -> str: ...

    def add_history(self, line: str, /) -> None: ...

    def write_history_file(self, path: str, /) -> None: ...

    def append_history_file(self, count: int, path: str, /) -> None: ...


def _tokens(n: object) -> str:
    if not isinstance(n, (int, float)):
        return "?"
    return f"{n / 1000:.0f}k" if n >= 10_000 else str(int(n))


class Shell:
    """The interactive session: the client, the open session and the terminal."""

    def __init__(self, client: Client, env: Mapping[str, str], cwd: str, *, model_override: str | None = None):
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
        self.readline: LineEditor | None = None  # the readline module, once set up
        self.history_path: Path | None = None
        self._rewrite_history = False  # the file was too big to read: the next save replaces it
        self._prefill: str | None = None
        self._exit_armed = False

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
        """Offer `text` as the next input line (editable); printed where that is not possible."""
        if self.readline is not None and hasattr(self.readline, "insert_text"):
            self._prefill = text
        else:
            self.say(self.style.dim("Edit and send:") + f" {text}")

    # --- session ----------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        assert self.session is not None
        return str(self.session["id"])

    def switch(self, session: dict[str, Any]) -> None:
        """Make `session` (a session payload) the current one and close the previous id."""
        previous, self.session = self.session, session
        if previous is not None and previous.get("id") != session.get("id"):
            try:
                self.client.request("sessions/close", {"sessionId": previous["id"]}, timeout=None)
            except RpcError:
                pass  # already gone (deleted elsewhere): nothing to close

    def new_session(self) -> dict[str, Any]:
        session = self.client.request("sessions/create", {"workspaceRoot": self.cwd}, timeout=None)
        self.switch(session)
        return session

    def model_label(self) -> str:
        try:
            current = self.client.request("models/current", {})
        except RpcError as exc:
            return f"(model unavailable: {exc.message})"
        return f"{current.get('provider')}/{current.get('id')}"

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

    def turn(self, text: str) -> None:
        view = TurnView(self.out, self.out, self.style, self.style, reasoning_shown=self.reasoning_shown)
        try:
            finished = run_turn(self.client, self.session_id, text, view, self.interrupts, ask=self.ask)
        except RpcError as exc:
            self.error(exc.message)
            return
        if finished.get("status") == "canceled" and self.interrupts.count:
            self._exit_armed = True
            self.note("(Ctrl-C again to exit)")
        self.status_line()

    # --- the loop ---------------------------------------------------------------------

    def start(self) -> None:
        init = self.client.initialize(name="kward-terminal", version=__version__)
        for warning in init.get("warnings") or []:
            self.say(self.style.yellow("warning: ") + str(warning.get("message", "")))
        self.new_session()
        self._setup_readline()
        self.say(self.style.bold(f"kward {__version__}") + self.style.dim(f" | {self.model_label()} | {self.cwd}"))
        self.note("Type a request, /help for the commands, Ctrl-D to exit.")

    def loop(self) -> None:
        while not self.done:
            try:
                line = self._input()
            except EOFError:
                self.say()
                return
            except KeyboardInterrupt:
                typed = self.readline.get_line_buffer() if self.readline is not None else ""
                self.say()
                if self._exit_armed and not typed:
                    return
                self._exit_armed = not typed
                if self._exit_armed:
                    self.note("(Ctrl-C again to exit)")
                continue
            self._exit_armed = False
            line = line.strip()
            if not line:
                continue
            self._remember(line)
            if line.startswith("/"):
                commands.dispatch(self, line)
            else:
                self.turn(line)

    def close(self) -> None:
        if self.session is not None:
            try:
                self.client.request("sessions/close", {"sessionId": self.session_id}, timeout=10)
            except (RpcError, ClientClosed, TimeoutError):
                pass

    # --- readline ---------------------------------------------------------------------

    def _input(self) -> str:
        prefill, self._prefill = self._prefill, None
        prompt = self.style.bold(PROMPT)
        rl = self.readline
        if rl is None:
            return self.read(prompt)
        if prefill is not None:
            rl.set_startup_hook(lambda: rl.insert_text(prefill))
        try:
            return self.read(_rl_safe(prompt))
        finally:
            if prefill is not None:
                rl.set_startup_hook(None)

    def _setup_readline(self) -> None:
        try:
            import readline
        except ImportError:  # no line editing on this Python: plain input()
            return
        self.readline = readline
        readline.set_auto_history(False)  # only prompt lines, not answers to questions
        readline.set_history_length(HISTORY_LIMIT)
        readline.set_completer_delims(" \t\n")
        readline.set_completer(self._complete)
        binding = "bind ^I rl_complete" if "libedit" in (readline.__doc__ or "") else "tab: complete"
        readline.parse_and_bind(binding)
        try:
            config = self.client.request("config/read", {})
            self.history_path = Path(config["path"]).parent / "history"
        except (RpcError, KeyError, TypeError):
            return
        try:
            if self._history_readable():
                readline.read_history_file(str(self.history_path))
            else:  # too big to read: the first save writes it anew, trimmed
                self._rewrite_history = True
        except FileNotFoundError:
            pass
        except OSError as exc:
            self._drop_history(exc)

    def _history_readable(self) -> bool:
        """Whether the history file is small enough to read (HISTORY_BYTES); OSError
        unless it is a regular file of this user (readline itself would follow a link
        and wait on a FIFO)."""
        assert self.history_path is not None
        fd = open_own(self.history_path)
        try:
            return os.fstat(fd).st_size <= HISTORY_BYTES
        finally:
            os.close(fd)

    def _drop_history(self, exc: OSError) -> None:
        self.history_path = None
        where = f"{exc.filename}: " if exc.filename else ""
        self.note(f"(history not used: {where}{exc.strerror or exc})")

    def _complete(self, text: str, state: int) -> str | None:
        if not text.startswith("/"):
            return None
        names = [f"/{name}" for name in [*commands.table(), *commands.server_commands(self)]
                 if f"/{name}".startswith(text)]
        return names[state] if state < len(names) else None

    def _remember(self, line: str) -> None:
        rl = self.readline
        if rl is None:
            return
        length = rl.get_current_history_length()
        if length and rl.get_history_item(length) == line:
            return
        rl.add_history(line)
        if self.history_path is None:
            return
        try:
            self.history_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = open_own(self.history_path, APPEND_OWN)
            try:
                os.fchmod(fd, 0o600)
            finally:
                os.close(fd)
            if length >= HISTORY_LIMIT or self._rewrite_history or not hasattr(rl, "append_history_file"):
                rl.write_history_file(str(self.history_path))  # rewrite, trimmed to the limit
                self._rewrite_history = False
            else:
                rl.append_history_file(1, str(self.history_path))
        except OSError as exc:
            self._drop_history(exc)


_ESCAPE = re.compile(r"(\x1b\[[0-9;]*m)")


def _rl_safe(prompt: str) -> str:
    """Mark the prompt's escape sequences as invisible, so readline counts its width right."""
    return _ESCAPE.sub("\x01\\1\x02", prompt)


def run(env: Mapping[str, str], cwd: str, *, model_override: str | None = None) -> int:
    """The interactive session; returns the exit status."""
    with Client.in_process(env=env, cwd=cwd) as client:
        shell = Shell(client, env, cwd, model_override=model_override)
        try:
            shell.start()
            shell.loop()
        except RpcError as exc:  # the session could not be opened (an unusable workspace or config)
            return fail(exc.message)
        except ClientClosed:
            return fail("the kward core stopped unexpectedly (see the log in the config directory)")
        finally:
            shell.close()
    return 0
