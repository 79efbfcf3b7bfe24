"""One-shot mode: `kward PROMPT...`, `kward -- PROMPT` or a prompt piped on stdin.

One turn through the in-process server, no session kept and no memory used: the session
is created for the turn with memory off and deleted after it (`sessions/create {memory:
false}`, `turns/start`, `sessions/delete`), so
nothing is left in the session directory (unless the process is killed with SIGKILL
meanwhile). Only the answer goes to stdout, streamed; reasoning, tool lines and retries go
to stderr. Exit status: 0 when the turn completed, 1 with a one-line reason on stderr when
it failed (not logged in, a provider error, ...), 130 when Ctrl-C canceled it, 141 when
stdout was closed early.

Main thread only.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Mapping

from kward import __version__
from kward.client import Client, ClientClosed, RpcError
from kward.terminal.host import fail
from kward.terminal.render import TurnView
from kward.terminal.style import Style
from kward.terminal.turn import (
    Interrupts,
    Question,
    TurnAbandoned,
    ask_inline,
    run_turn,
)

log = logging.getLogger(__name__)

CANCELED = 130
BROKEN_PIPE = 141


class _QuietView(TurnView):
    """A TurnView that leaves the failure to the final one-line reason."""

    def on_error(self, payload: dict[str, Any]) -> None:
        pass


def _ask_on_terminal(questions: list[Question]) -> list[dict[str, str]] | None:
    def read(prompt: str) -> str:
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line

    def write(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    return ask_inline(questions, write, read)


def run(prompt: str, env: Mapping[str, str], cwd: str) -> int:
    """Answer `prompt` once; returns the exit status."""
    out, err = sys.stdout, sys.stderr
    view = _QuietView(out, err, Style.for_stream(out, env), Style.for_stream(err, env))
    ask = _ask_on_terminal if sys.stdin.isatty() else None  # a piped prompt: nobody to ask
    interrupts = Interrupts()
    with Client.in_process(env=env, cwd=cwd) as client:
        client.initialize(name="kward-terminal", version=__version__)
        try:
            session = client.request("sessions/create", {"workspaceRoot": cwd, "memory": False}, timeout=None)
        except RpcError as exc:
            return fail(exc.message)
        try:
            finished = run_turn(client, session["id"], prompt, view, interrupts, ask=ask, abandon_on_second=True)
        except TurnAbandoned:
            view.end()
            return CANCELED
        except BrokenPipeError:
            _silence_stdout()
            return BROKEN_PIPE
        except RpcError as exc:
            return fail(exc.message)
        except ClientClosed:
            return fail("the kward core stopped unexpectedly (see the log in the config directory)")
        finally:
            _forget(client, session["id"])
    status = finished.get("status")
    if status == "completed":
        return 0
    if status == "canceled":
        return CANCELED
    error = finished.get("error") or {}
    return fail(error.get("message") or "the turn failed")


def _forget(client: Client, session_id: str) -> None:
    """Delete the turn's session: one-shot prompts keep none."""
    try:
        client.request("sessions/delete", {"sessionId": session_id}, timeout=None)
    except (RpcError, ClientClosed):
        log.warning("could not delete the one-shot session %s", session_id, exc_info=True)


def _silence_stdout() -> None:
    """stdout's reader went away: point fd 1 at /dev/null so the exit flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def read_piped_prompt() -> str:
    """The prompt piped on stdin (decoded as UTF-8, undecodable bytes replaced)."""
    data = sys.stdin.buffer.read()
    return data.decode("utf-8", "replace").strip()
