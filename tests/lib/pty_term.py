"""Drive `kward` (the one launcher's `lib.rpc_client.kward_argv()`) on a pseudo-terminal
(stdlib `pty`), as a user at a terminal.

The child gets the pty's slave side as stdin, stdout, stderr and controlling terminal
(a small launcher makes it the session leader and calls TIOCSCTTY before exec'ing
kward), so readline is active and a `\\x03` written to the master is turned into SIGINT
by the terminal's line discipline, exactly as when a user presses Ctrl-C.

Output is read from the master with `select` and a deadline; `expect` waits until the
text printed since the last match (with ANSI escape sequences and carriage returns
removed) contains a string or matches a pattern. No sleeps.
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


def plain(text: str) -> str:
    return ANSI.sub("", text)


class PtyKward:
    def __init__(self, args: list[str], env: dict[str, str], cwd: str, rows: int = 50, cols: int = 250,
                 wrapper: tuple[str, ...] = ()):
        """`wrapper`: an argv that execs the rest (kward's), run between the launcher and kward."""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *wrapper, *kward_argv(), *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=env, cwd=cwd, start_new_session=True, close_fds=True)
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

    def send(self, text: str) -> None:
        os.write(self.master, text.encode("utf-8"))

    def line(self, text: str) -> None:
        self.send(text + "\r")

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
