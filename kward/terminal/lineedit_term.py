"""The line editor's terminal: its modes, its size, and the keys read from it.

`usable` says whether the editor can run at all. A `Terminal` (one per editor) works on
the terminal's file descriptor and its output stream:

- `raw()` puts it in raw mode (`raw_mode`: keys one by one, no echo, no signal keys) with
  bracketed paste on; `normal()` gives back the mode it had and turns paste off (nothing
  when it is not raw; it never raises), so the editor can call it in any `finally`.
- `begin()` starts a read: fresh decoders (`lineedit_keys.KeyDecoder` and UTF-8: a read
  never inherits a half sequence), and until `end()` SIGWINCH and SIGINT are noted
  through a self-pipe `keys()` also waits on (so a SIGINT sent from outside is the
  `ctrl-c` key, never a KeyboardInterrupt in the middle of a redraw).
- `keys()` waits for the next read of the terminal and gives the keys it completes; none
  while a paste or an escape sequence is still arriving (a silence of `ESC_WAIT` or
  `PASTE_WAIT` flushes what is held), `ctrl-c` for a SIGINT, `resize` when the window
  changed, `eof` when the terminal is gone (an empty read or EIO).
- `typed_lines()` gives what was typed while the terminal was in its normal mode, one whole
  line per `os.read` (the line discipline hands over one at a time), as
  `lineedit_keys.typed_ahead` reads it; an empty read there is a Ctrl-D on an empty line.
  `held_line()`, once raw, gives what it held of a line not ended. `echoed` says whether
  either took something (its echo may be on the screen).

Main thread only (a signal handler; terminal modes); one read at a time.
"""

from __future__ import annotations

import codecs
import os
import select
import signal
import termios
from types import FrameType
from typing import Any, Callable, Iterator, Mapping, TextIO

from kward.terminal.lineedit_keys import ESC_WAIT, PASTE_WAIT, Key, KeyDecoder, typed_ahead

PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
_READ = 65536  # bytes an os.read of the terminal asks for
_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None
_NOTES: dict[int, bytes] = {signal.SIGINT: b"i", signal.SIGWINCH: b"w"}  # what each signal writes to the pipe


def usable(stdin: TextIO, stdout: TextIO, env: Mapping[str, str]) -> bool:
    """Whether the editor can run: stdin and stdout are terminals and TERM is set and not
    `dumb` (otherwise the shell reads with plain `input()`)."""
    if env.get("TERM", "") in ("", "dumb"):
        return False
    try:
        fd = stdin.fileno()
        if not (os.isatty(fd) and stdout.isatty()):
            return False
        termios.tcgetattr(fd)
    except (AttributeError, ValueError, OSError, termios.error):
        return False
    return True


def raw_mode(attrs: list[Any]) -> list[Any]:
    """`attrs` (of `termios.tcgetattr`) with input taken key by key: no echo, no canonical
    lines, no signal keys, no CR-to-LF or flow control; output processing stays (LF is
    written as CR LF)."""
    mode = list(attrs)
    mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR | termios.IXON | termios.ISTRIP | termios.BRKINT)
    mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
    cc = list(mode[6])
    cc[termios.VMIN], cc[termios.VTIME] = 1, 0
    mode[6] = cc
    return mode


def _ready(fd: int) -> bool:
    """Whether a read of `fd` would not block (in canonical mode: a whole line waits)."""
    return bool(select.select([fd], [], [], 0)[0])


class Terminal:
    """The terminal `fd` (input) and `out` (its output stream); see the module docstring."""

    _decoder: KeyDecoder  # (`begin` makes both for each read)
    _utf8: codecs.IncrementalDecoder

    def __init__(self, fd: int, out: TextIO):
        self.fd = fd
        self.out = out
        self.echoed = False  # typed-ahead text was taken this read
        self._saved: list[Any] | None = None  # the terminal's normal mode while raw
        self._signals = os.pipe()  # the handlers write a byte here while a read runs (_NOTES)
        for end in self._signals:
            os.set_blocking(end, False)
        self._previous: dict[int, _Handler] = {}  # the handlers before `begin`

    def begin(self) -> None:
        self.echoed = False
        self._decoder, self._utf8 = KeyDecoder(), codecs.getincrementaldecoder("utf-8")("replace")
        self._drain()  # (a signal noted after the last read ended is not this one's)
        for signum in _NOTES:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def end(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        self._previous = {}

    def close(self) -> None:
        """Release the signal pipe (not used after this)."""
        for end in self._signals:
            os.close(end)
        self._signals = (-1, -1)

    def in_paste(self) -> bool:
        """Whether a bracketed paste is arriving (begun, not yet ended)."""
        return self._decoder.in_paste()

    # --- modes and output -----------------------------------------------------------------

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def raw(self) -> None:
        self._saved = termios.tcgetattr(self.fd)
        termios.tcsetattr(self.fd, termios.TCSADRAIN, raw_mode(self._saved))
        self.write(PASTE_ON)

    def normal(self) -> None:
        saved, self._saved = self._saved, None
        if saved is None:
            return
        try:
            self.write(PASTE_OFF)
        except (OSError, ValueError):
            pass
        try:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)
        except termios.error:
            pass

    def size(self) -> tuple[int, int]:
        """(columns, lines) now; 80 x 24 when the terminal does not say."""
        try:
            size = os.get_terminal_size(self.out.fileno())
            return size.columns or 80, size.lines or 24
        except (OSError, ValueError, AttributeError):
            return 80, 24

    # --- input ------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        try:
            os.write(self._signals[1], _NOTES[signum])
        except OSError:  # (full: that signal is noted already)
            pass

    def _drain(self) -> bytes:
        try:
            return os.read(self._signals[0], 512)
        except OSError:  # (empty)
            return b""

    def keys(self) -> list[Key]:
        """The keys of the next read of the terminal (see the module docstring)."""
        wait = PASTE_WAIT if self._decoder.in_paste() else ESC_WAIT if self._decoder.waiting() else None
        ready, _, _ = select.select([self.fd, self._signals[0]], [], [], wait)
        if not ready:
            return self._decoder.flush()
        signalled: list[Key] = []
        if self._signals[0] in ready:
            signalled = [Key("ctrl-c") if _NOTES[signal.SIGINT] in self._drain() else Key("resize")]
            if self.fd not in ready:
                return signalled
        try:
            data = os.read(self.fd, _READ)
        except OSError:  # EIO: the terminal is gone
            data = b""
        if not data:
            return [*signalled, Key("eof")]
        return signalled + self._decoder.feed(self._utf8.decode(data))

    def typed_lines(self) -> Iterator[list[Key]]:
        """In the terminal's normal mode: the keys of each whole line typed ahead, while
        there is one (see the module docstring)."""
        if not termios.tcgetattr(self.fd)[3] & termios.ICANON:
            return  # (a terminal kward did not find in its normal mode: nothing typed ahead)
        while _ready(self.fd):
            data = os.read(self.fd, _READ)
            self.echoed = True
            if not data:
                yield [Key("ctrl-d")]
                return  # (a terminal gone reads empty for ever: EOF in raw mode)
            yield typed_ahead(self._utf8.decode(data))

    def held_line(self) -> list[Key]:
        """In raw mode, at once: what the terminal held of a line typed but not ended."""
        if not _ready(self.fd):
            return []
        data = os.read(self.fd, _READ)
        if not data:
            return [Key("eof")]
        self.echoed = True
        return typed_ahead(self._utf8.decode(data))
