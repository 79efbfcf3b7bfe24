"""Drive `kward` (the one launcher's `lib.rpc_client.kward_argv()`) on a pseudo-terminal
(stdlib `pty`), as a user at a terminal.

The child gets the pty's slave side as stdin, stdout, stderr and controlling terminal
(a small launcher makes it the session leader and calls TIOCSCTTY before exec'ing
kward; it needs only the standard library, so it runs with `-S`: no site-packages and
their .pth files to process at every start), so kward's line editor is active at the prompt (the terminal in raw mode: a
`\\x03` arrives there as a key) and, while a turn runs (the terminal in its normal mode),
a `\\x03` written to the master is turned into SIGINT by the terminal's line discipline,
exactly as when a user presses Ctrl-C.

Output is read from the master with `select` and a deadline; `expect` waits until the
text printed since the last match (with ANSI escape sequences and carriage returns
removed) contains a string or matches a pattern. No sleeps.

Keys are sent as the bytes a terminal sends for them (`KEYS`, `paste` for a bracketed
paste); `mode()` is the pty's terminal mode now (as `termios.tcgetattr`), `initial_mode`
the one it had before kward started, to check that kward gave the terminal back as it
found it.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from typing import Pattern

import pytest

from lib.rpc_client import kward_argv

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|[\x01\x02\r]")
LAUNCH = ("import fcntl, os, sys, termios\n"
          "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
          "os.execvp(sys.argv[1], sys.argv[1:])\n")  # (the kward argv follows)


#: What a terminal (xterm) sends for these keys.
KEYS = {
    "enter": "\r", "alt-enter": "\x1b\r", "ctrl-j": "\n", "ctrl-c": "\x03", "ctrl-d": "\x04",
    "ctrl-x ctrl-e": "\x18\x05", "up": "\x1b[A", "down": "\x1b[B", "left": "\x1b[D", "right": "\x1b[C",
    "home": "\x1b[H", "end": "\x1b[F", "delete": "\x1b[3~", "ctrl-left": "\x1b[1;5D", "alt-b": "\x1bb",
    "ctrl-a": "\x01", "ctrl-e": "\x05", "ctrl-k": "\x0b", "ctrl-u": "\x15", "ctrl-w": "\x17", "ctrl-y": "\x19",
    "ctrl-p": "\x10", "ctrl-n": "\x0e", "ctrl-l": "\x0c", "ctrl-z": "\x1a", "tab": "\t", "backspace": "\x7f",
}


def plain(text: str) -> str:
    return ANSI.sub("", text)


class PtyKward:
    def __init__(self, args: list[str], env: dict[str, str], cwd: str, rows: int = 50, cols: int = 250,
                 launcher: str = LAUNCH, wrapper: tuple[str, ...] = ()):
        """`launcher`: the Python code run as the session leader (standard library only:
        it runs with `-S`), kward's argv after it (LAUNCH execs it; a test may pass one that
        runs it as a job, say). `wrapper`: an
        argv that execs the rest (kward's), run between the launcher and kward."""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.initial_mode = termios.tcgetattr(master)
        self.proc = subprocess.Popen([sys.executable, "-S", "-c", launcher, *wrapper, *kward_argv(), *args],
                                     stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.raw = b""
        self._mark = 0  # position in `text` after the last expect
        self.eof = False

    @property
    def text(self) -> str:
        return plain(self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> None:
        if self.eof:
            return
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed its side
            data = b""
        if not data:
            self.eof = True
        self.raw += data

    def expect(self, what: str | Pattern[str], timeout: float = 10.0) -> str:
        """Wait until the output since the last match contains `what`; returns that output
        up to and including the match, and moves the mark past it."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text
            window = text[self._mark:]
            if isinstance(what, str):
                i = window.find(what)
                end = i + len(what) if i >= 0 else -1
            else:
                m = what.search(window)
                end = m.end() if m else -1
            if end >= 0:
                self._mark += end
                return window[:end]
            if self.eof or time.monotonic() > deadline:
                raise TimeoutError(f"no {what!r} in the output; since the last match:\n{window}\n--- all:\n{text}")
            self._read(deadline - time.monotonic())

    def answered(self, timeout: float = 10.0) -> None:
        """Wait until kward writes something after this call: at the prompt, the redraw
        for the keys just sent (which may only move the cursor or clear rows; kward writes
        nothing there unasked)."""
        deadline = time.monotonic() + timeout
        size = len(self.raw)
        while len(self.raw) == size:
            if self.eof or time.monotonic() > deadline:
                raise TimeoutError(f"nothing written after the keys; all:\n{self.text}")
            self._read(deadline - time.monotonic())

    def send(self, text: str) -> None:
        os.write(self.master, text.encode("utf-8"))

    def line(self, text: str) -> None:
        self.send(text + "\r")

    def key(self, *names: str) -> None:
        """Press these keys (names of `KEYS`), in one write."""
        self.send("".join(KEYS[name] for name in names))

    def paste(self, text: str) -> None:
        """Paste `text` as a terminal in bracketed-paste mode does."""
        self.send("\x1b[200~" + text + "\x1b[201~")

    def resize(self, rows: int, cols: int) -> None:
        """Change the terminal's size, as a window resize does (kward gets SIGWINCH)."""
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def mode(self) -> list:
        """The pty's terminal mode now (it is shared by both sides; readable after the child ended)."""
        return termios.tcgetattr(self.master)

    def wait(self, timeout: float = 15.0) -> int:
        """Read everything until the child exits; returns its exit status."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self._read(deadline - time.monotonic())
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)

    def __enter__(self) -> "PtyKward":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


PROMPT = "kward> "


@pytest.fixture
def term(cli):
    """`term(steps, *args, loop=False, **env) -> PtyKward`: `kward ARGS` on a pseudo-terminal
    (TERM=xterm, NO_COLOR) playing `steps` (looped with `loop`), at its first prompt;
    closed after the test. Needs the `cli` fixture of lib.cli_helpers."""
    started = []

    def start(steps, *args, loop=False, **env):
        cli.script(steps, loop=loop)
        k = PtyKward(list(args), {**cli.env, "TERM": "xterm", "NO_COLOR": "1", **env}, str(cli.ws))
        started.append(k)
        k.expect(PROMPT)
        return k

    yield start
    for k in started:
        k.close()
