"""One-shot mode: `kward PROMPT...`, `kward -- PROMPT` or a prompt piped on stdin.

One turn through the in-process server, no session kept and no memory used: the session
is created for the turn with memory off and deleted after it (`sessions/create {memory:
false}`, `turns/start`, `sessions/delete`), so
nothing is left in the session directory (unless the process is killed with SIGKILL
meanwhile). Exit status: 0 when the turn completed, 1 with a one-line reason on stderr when
it failed (not logged in, a provider error, ...), 130 when Ctrl-C canceled it, 141 when
stdout was closed early.

stdout carries the final answer only; reasoning, tool lines, retries, and the text the
model wrote before calling a tool (in the message holding the calls) go to stderr. When
stdout is not a terminal (`kward "q" > out.txt`, a pipe), each message's text is held
until the message ends (`assistantMessage`) and then written to stdout when it called no
tool, else to stderr (`_FinalAnswerView`); on a terminal it streams as it comes.

Standard input that is not a terminal is read before anything starts (`read_piped`): at
most `PIPED_INPUT_CAP` bytes (cap + 1 are read, to know it was cut; an endless stream is
never drained). It must be UTF-8 text: invalid UTF-8 or a NUL byte is refused with one
line naming the byte offset (exit 1), never mangled. Without a prompt it is the prompt;
with one it is attached after it (`with_piped`):

    PROMPT

    Standard input:
    ```
    TEXT
    ```

(the fence is longer than any run of backticks in TEXT). When it was cut, a line after the
block says so and how many bytes were left out (when stdin is a file; a pipe is not read
further), and one line on stderr says the same. Empty (or blank) input: the prompt alone.
A standard input not open for reading (`0>file`: EBADF) is no input, as a closed
one is; one whose read fails (EIO, EISDIR for `< directory`, ...) is refused with one line
(exit 1), never a traceback.

Tool calls run unasked unless config.json sets `security.approvalMode` (`--yes`: off for
the run); with `ask` the user is asked on the terminal (`kward.terminal.approve`) when
stdin is one, else every such call is declined with a reason saying how to allow it.

Main thread only.
"""

from __future__ import annotations

import codecs
import errno
import logging
import os
import re
import stat
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Mapping, TextIO

from kward import __version__
from kward.client import Client, ClientClosed, RpcError
from kward.terminal import approve
from kward.terminal.host import fail
from kward.terminal.render import TurnView
from kward.terminal.style import Style, isatty
from kward.terminal.turn import (
    Interrupts,
    Question,
    TurnAbandoned,
    ask_inline,
    run_turn,
)
from kward.terminal.wording import error_text, turn_error_text

log = logging.getLogger(__name__)

CANCELED = 130
BROKEN_PIPE = 141
#: At most this many bytes of piped standard input go to the model (200 KiB).
PIPED_INPUT_CAP = 200 * 1024


class _QuietView(TurnView):
    """A TurnView that leaves the failure to the final one-line reason."""

    def on_error(self, payload: dict[str, Any]) -> None:
        pass


class _FinalAnswerView(_QuietView):
    """stdout is not a terminal: a message's text is held until the message ends, then
    written as the answer when it called no tool, else to stderr (module docstring). A
    command turn (no `assistantMessage`) writes its text at its `answer`."""

    def __init__(self, out: TextIO, side: TextIO, out_style: Style, side_style: Style):
        super().__init__(out, side, out_style, side_style)
        self._held: list[str] = []
        self._aside = _QuietView(side, side, side_style, side_style, clean_answer=True)  # text before a tool call

    def on_assistantDelta(self, payload: dict[str, Any]) -> None:  # noqa: N802 - event names
        self._held.append(str(payload.get("delta", "")))

    def on_assistantMessage(self, payload: dict[str, Any]) -> None:  # noqa: N802
        raw = payload.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self._release(answer=not (message.get("tool_calls") or message.get("toolCalls")))

    def on_answer(self, payload: dict[str, Any]) -> None:
        self._release(answer=True)
        super().on_answer(payload)

    def on_turnFinished(self, payload: dict[str, Any]) -> None:  # noqa: N802
        self._release(answer=True)  # streamed but never stored (the turn failed): as today
        super().on_turnFinished(payload)

    def _release(self, *, answer: bool) -> None:
        text, self._held = "".join(self._held), []
        if not text:
            return
        if answer:
            super().on_assistantDelta({"delta": text})
            return
        self.end()  # whatever runs on stderr (reasoning) ends first
        self._aside.on_assistantDelta({"delta": text})
        self._aside.end()


def _read(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _write(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _ask_on_terminal(questions: list[Question]) -> list[dict[str, str]] | None:
    return ask_inline(questions, _write, _read)


def _approve_on_terminal(params: dict[str, Any], view: TurnView) -> dict[str, Any]:
    """The approval question on the terminal (stderr, and stdin read a line at a time)."""
    view.lines(approve.question_lines(params, view.side_style, view.width))

    def edit_line(prompt: str, text: str) -> str | None:
        _write(f"(type the command to run instead of: {text})\n")
        try:
            return _read(prompt).rstrip("\n")
        except EOFError:
            return None

    return approve.ask(params, lambda line: _write(line + "\n"), _read, edit_line)


def run(prompt: str, env: Mapping[str, str], cwd: str, *, yes: bool = False) -> int:
    """Answer `prompt` once; returns the exit status. `yes`: the approval mode is off."""
    out, err = sys.stdout, sys.stderr
    view_class = _QuietView if isatty(out) else _FinalAnswerView
    view = view_class(out, err, Style.for_stream(out, env), Style.for_stream(err, env))
    ask = _ask_on_terminal if sys.stdin is not None and sys.stdin.isatty() else None  # a piped prompt: nobody to ask
    interrupts = Interrupts()
    approvals = approve.Inbox() if ask is not None else None
    with Client.in_process(env=env, cwd=cwd) as client:
        client.on_request(approve.METHOD, approvals.handle if approvals is not None else approve.decline_all)
        client.initialize(name="kward-terminal", version=__version__, experimentalApi=True,  # (every part)
                          **approve.DECLARE)
        try:
            session = client.create_session(cwd, memory=False, timeout=None)
        except RpcError as exc:
            return fail(error_text(exc))
        try:
            if yes:
                client.request("runtime/updateSetting", {"sessionId": session["id"], "settingId": "approvalMode",
                                                         "value": "off"})
            finished = run_turn(client, session["id"], prompt, view, interrupts, ask=ask, abandon_on_second=True,
                                approvals=approvals, approve=_approve_on_terminal)
        except TurnAbandoned:
            view.end()
            return CANCELED
        except BrokenPipeError:
            _silence_stdout()
            return BROKEN_PIPE
        except RpcError as exc:
            return fail(error_text(exc))
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
    return fail(turn_error_text(error))


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


class PipedInputError(Exception):
    """Piped standard input kward will not send (one line for the user)."""


@dataclass(slots=True, frozen=True)
class Piped:
    """What was read of piped standard input: its `text`, the bytes it came from
    (`kept`), whether it was `cut` at the cap, how many bytes were `left_out` (None
    when unknown: a pipe is not read past the cap), and whether it was `readable` at all
    (False: fd 0 is closed, or not open for reading)."""

    text: str
    kept: int
    cut: bool = False
    left_out: int | None = None
    readable: bool = True


def read_piped(stream: BinaryIO, cap: int = PIPED_INPUT_CAP) -> Piped:
    """Read piped standard input (module docstring); PipedInputError when it is not
    UTF-8 text."""
    start = _position(stream)
    try:
        data = stream.read(cap + 1) or b""
    except OSError as exc:
        if exc.errno == errno.EBADF:  # not open for reading (`0>file`): no input, as a closed fd 0
            return Piped("", 0, readable=False)
        raise PipedInputError(f"standard input cannot be read ({exc.strerror or exc}); pipe text or a file to "
                              "kward, or name the file in the prompt instead") from None
    cut = len(data) > cap
    text, kept = decode_piped(data[:cap] if cut else data, final=not cut)
    left_out = None
    if cut:
        size = _file_size(stream)
        if size is not None and start is not None:
            left_out = size - start - kept
    return Piped(text, kept, cut, left_out)


def decode_piped(data: bytes, *, final: bool = True) -> tuple[str, int]:
    """(text, bytes decoded) of `data`, which must be UTF-8 without NUL bytes; an
    incomplete character at the end is left out unless `final`. PipedInputError, naming
    the first bad byte's offset, otherwise."""
    nul = data.find(b"\0")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        text = decoder.decode(data[:nul] if nul >= 0 else data, final=final or nul >= 0)
    except UnicodeDecodeError as exc:
        raise PipedInputError(
            f"standard input is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); convert it "
            "to UTF-8 first (iconv -f ENCODING -t UTF-8), or name the file in the prompt instead") from None
    if nul >= 0:
        raise PipedInputError(f"standard input is binary, not text (a NUL byte at offset {nul}); pipe UTF-8 text, "
                              "or name the file in the prompt instead")
    return text.removeprefix("\ufeff"), len(data) - len(decoder.getstate()[0])


def with_piped(prompt: str, piped: Piped) -> str:
    """The prompt to send: `prompt` with the piped text attached, or the piped text alone
    (module docstring); "" when both are empty."""
    note = f"\n\n({cut_note(piped, for_model=True)})" if piped.cut else ""
    if not piped.text.strip():
        return prompt
    if not prompt:
        return piped.text.strip() + note
    fence = "`" * max(3, _longest_backtick_run(piped.text) + 1)
    body = piped.text if piped.text.endswith("\n") else piped.text + "\n"
    return f"{prompt}\n\nStandard input:\n{fence}\n{body}{fence}{note}"


def cut_note(piped: Piped, *, for_model: bool = False) -> str:
    """What was cut: one line for stderr, or (`for_model`) the note in the prompt."""
    rest = ("the rest was not read" if piped.left_out is None
            else f"{piped.left_out} more byte{'s' if piped.left_out != 1 else ''} left out")
    if for_model:
        return f"Standard input was cut: only its first {piped.kept} bytes are shown; {rest}."
    return (f"standard input is longer than {PIPED_INPUT_CAP // 1024} KiB: only its first {piped.kept} bytes are sent "
            f"({rest})")


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _position(stream: BinaryIO) -> int | None:
    try:
        return stream.tell()
    except (OSError, ValueError):
        return None  # a pipe


def _file_size(stream: BinaryIO) -> int | None:
    """The size of the regular file `stream` reads, else None."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None
