"""kward's line editor for the interactive prompt (instead of GNU readline): multi-line
input, bracketed paste, the history, and the user's editor on the input.

`LineEditor.read(prompt, prefill)` reads one input with the terminal in raw mode (no echo,
no line discipline, no signals from keys: Ctrl-C, Ctrl-Z and Ctrl-\\ arrive as bytes) and
bracketed paste on (`ESC[?2004h`); both are undone before it returns, however it returns
(a key, an exception, SIGTERM/SIGHUP made SystemExit by the Host), and while it runs the
user's editor or is suspended, so the terminal is in its normal mode whenever kward is not
reading a prompt. It returns a `ReadResult`: the `line` sent, an `interrupt` (Ctrl-C; the
`text` that was cleared) or `eof` (Ctrl-D on an empty input, or the terminal gone).

Keys: Enter sends (a buffer ending in `\\` gets a line break for the `\\` instead);
Alt-Enter, Ctrl-J (and Shift-Enter where the terminal reports it) insert a line break; a
bracketed paste is inserted as it is (its line breaks too) and never sends. Left/Right,
Ctrl-B/F; Home/End, Ctrl-A/E (of the current line); Alt-B/F, Ctrl- or Alt-Left/Right by
word; Backspace, Delete; Ctrl-D deletes (exits on an empty input); Ctrl-K, Ctrl-U, Ctrl-W,
Alt-D, Alt-Backspace kill, Ctrl-Y yanks the last kill; Up/Down move between the input's
lines and, from its first or last line, through the history (Ctrl-P/Ctrl-N: always the
history); Tab completes a slash command's name; Ctrl-L clears the screen; Ctrl-Z suspends;
Ctrl-X Ctrl-E edits the input in $VISUAL/$EDITOR (`lineedit_external`), the result
becoming the input, sent on Enter.

Type-ahead: what was typed while a turn ran, in the terminal's normal mode (its line
discipline echoed it and made Enter LF, which raw mode would read as Ctrl-J), is taken when
a read begins, as `lineedit_keys.typed_ahead` reads it (each LF is Enter). First the whole
lines, still in that mode (`_typed_ahead`: one os.read gives one line; an empty one is a
Ctrl-D on an empty line, taken as that key): the first is sent at once, shown after the
prompt as a line sent there is, and the rest stay in the terminal's queue for the next
reads, in order (a Ctrl-C that cancels the next turn discards them, as the terminal does).
Then, once raw mode is on, what the terminal held of a line not ended is the start of the
input. Keys pressed at the prompt are read as ever. The prompt's row is cleared first when
type-ahead was taken (it may hold the echo of a line not ended).

The screen: each change redraws the input from the first row that changed
(`lineedit_layout`), at the terminal width read at that moment, and a resize (SIGWINCH,
seen through a self-pipe the read also waits on) draws it again at once; the keys come from
`lineedit_keys`, the edits from `lineedit_buffer`, the entries from `lineedit_history`.

Main thread only (it changes terminal modes and sends itself SIGTSTP); one read at a time.
"""

from __future__ import annotations

import codecs
import os
import select
import signal
import termios
from types import FrameType
from typing import Any, Callable, Mapping, NamedTuple, TextIO

from kward.terminal import lineedit_external
from kward.terminal.lineedit_buffer import Buffer
from kward.terminal.lineedit_history import History
from kward.terminal.lineedit_keys import ESC_WAIT, PASTE_WAIT, Key, KeyDecoder, clean_paste, typed_ahead
from kward.terminal.lineedit_layout import Layout, continuation_for, end_of, layout, redraw, visible_width
from kward.terminal.style import Style

LINE, INTERRUPT, EOF = "line", "interrupt", "eof"
PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
CLEAR_SCREEN = "\x1b[H\x1b[2J"
CLEAR_ROW = "\r\x1b[J"  # (the row the cursor is on and all below)

#: Completes a slash command: the word before the cursor ("/re") -> the full names.
Completer = Callable[[str], list[str]]


class ReadResult(NamedTuple):
    """What `read` ended with: `kind` LINE (the input in `text`), INTERRUPT (`text`: what was
    cleared) or EOF."""

    kind: str
    text: str = ""


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


def _ready(fd: int) -> bool:
    """Whether a read of `fd` would not block (in canonical mode: a whole line waits)."""
    return bool(select.select([fd], [], [], 0)[0])


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


class LineEditor:
    """Reads prompt inputs from the terminal `fd` (see the module docstring); `out` is the
    terminal's output stream, `history` the entries Up/Down go through (the shell adds to
    it), `complete` the slash-command completer, `env` where $VISUAL/$EDITOR are read."""

    def __init__(self, fd: int, out: TextIO, history: History, *, complete: Completer,
                 env: Mapping[str, str], style: Style):
        self.fd = fd
        self.out = out
        self.history = history
        self.complete = complete
        self.env = env
        self.style = style
        self.buffer = Buffer()
        self._decoder = KeyDecoder()
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._resized = os.pipe()  # SIGWINCH's handler writes a byte here while a read runs
        for end in self._resized:
            os.set_blocking(end, False)
        self._saved: list[Any] | None = None  # the terminal's normal mode while raw
        self._shown: Layout | None = None  # the layout on screen
        self._prompt = ""
        self._continuation = ""
        self._kill = ""  # the last killed text (Ctrl-Y)
        self._ctrl_x = False  # Ctrl-X was pressed: Ctrl-E may follow
        self._echoed = False  # type-ahead was taken: the terminal's echo may be on the prompt's row
        self._pending: list[Key] = []  # typed-ahead keys after the ones a read ended with
        self._place = 0  # the history entry shown (len(entries): the new input)
        self._edits: dict[int, str] = {}  # entries changed during this read
        self._keys: dict[str, Callable[[Key], ReadResult | None]] = {
            "text": self._insert, "paste": self._insert,
            "enter": self._enter, "alt-enter": self._newline, "ctrl-j": self._newline, "shift-enter": self._newline,
            "left": self._do(Buffer.left), "ctrl-b": self._do(Buffer.left),
            "right": self._do(Buffer.right), "ctrl-f": self._do(Buffer.right),
            "home": self._do(Buffer.home), "ctrl-a": self._do(Buffer.home),
            "end": self._do(Buffer.end), "ctrl-e": self._do(Buffer.end),
            "alt-b": self._do(Buffer.word_left), "ctrl-left": self._do(Buffer.word_left),
            "alt-left": self._do(Buffer.word_left),
            "alt-f": self._do(Buffer.word_right), "ctrl-right": self._do(Buffer.word_right),
            "alt-right": self._do(Buffer.word_right),
            "backspace": self._do(Buffer.backspace), "ctrl-h": self._do(Buffer.backspace),
            "delete": self._do(Buffer.delete), "ctrl-d": self._ctrl_d,
            "ctrl-k": self._cut(Buffer.kill_to_end), "ctrl-u": self._cut(Buffer.kill_to_start),
            "ctrl-w": self._cut(Buffer.kill_word_back), "alt-d": self._cut(Buffer.kill_word_forward),
            "alt-backspace": self._cut(Buffer.kill_word_backward), "ctrl-y": self._yank,
            "up": self._up, "down": self._down,
            "ctrl-p": lambda key: self._through_history(-1), "ctrl-n": lambda key: self._through_history(1),
            "tab": self._tab, "ctrl-l": self._clear, "ctrl-c": self._interrupt, "ctrl-z": self._suspend,
            "ctrl-x": self._prefix, "eof": lambda key: ReadResult(EOF),  # (the terminal is gone: nothing to draw)
            "resize": lambda key: None,  # (drawn again after the keys, as after any)
        }

    # --- the read ---------------------------------------------------------------------

    def read(self, prompt: str, prefill: str = "") -> ReadResult:
        """One input (see the module docstring). KeyboardInterrupt (a SIGINT from outside)
        and SystemExit propagate, with the terminal restored; a terminal that went away
        (an OSError or termios.error on it) is EOF."""
        self._prompt = prompt
        self._continuation = self.style.dim(continuation_for(visible_width(prompt)))
        self.buffer.set(clean_paste(prefill))
        self._shown, self._ctrl_x = None, False
        self._decoder, self._utf8 = KeyDecoder(), codecs.getincrementaldecoder("utf-8")("replace")
        self._place, self._edits = len(self.history.entries), {}
        self._echoed = bool(self._pending)
        previous = signal.signal(signal.SIGWINCH, self._on_resize)
        try:
            pending, self._pending = self._pending, []
            result = self._apply(pending)
            if result is None:
                result = self._typed_ahead()
            if result is not None:
                return result
            self._raw()
            result = self._apply(self._held_line())
            if result is not None:
                return result
            self._draw()
            while True:
                for key in self._read_keys():
                    result = self._key(key)
                    if result is not None:
                        return result
                self._draw()
        except (OSError, termios.error):
            return ReadResult(EOF)
        finally:
            self._normal()
            signal.signal(signal.SIGWINCH, signal.SIG_DFL if previous is None else previous)

    def close(self) -> None:
        """Release the resize pipe (the editor is not used after this)."""
        for end in self._resized:
            os.close(end)
        self._resized = (-1, -1)

    def _on_resize(self, signum: int, frame: FrameType | None) -> None:
        try:
            os.write(self._resized[1], b"w")
        except OSError:  # (full: a redraw is due anyway)
            pass

    def _read_keys(self) -> list[Key]:
        wait = PASTE_WAIT if self._decoder.in_paste() else ESC_WAIT if self._decoder.waiting() else None
        ready, _, _ = select.select([self.fd, self._resized[0]], [], [], wait)
        if not ready:
            return self._decoder.flush()
        if self._resized[0] in ready:
            try:
                os.read(self._resized[0], 512)
            except OSError:
                pass
            if self.fd not in ready:
                return [Key("resize")]
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the terminal is gone
            data = b""
        if not data:
            return [Key("eof")]
        return self._decoder.feed(self._utf8.decode(data))

    def _typed_ahead(self) -> ReadResult | None:
        """The complete lines typed while the terminal was in its normal mode, one os.read
        each, until one ends the read (see the module docstring)."""
        if not termios.tcgetattr(self.fd)[3] & termios.ICANON:
            return None  # (a terminal kward did not find in its normal mode: nothing typed ahead)
        while _ready(self.fd):
            data = os.read(self.fd, 65536)
            self._echoed = True
            result = self._apply(typed_ahead(self._utf8.decode(data)) if data else [Key("ctrl-d")])
            if result is not None or not data:  # (a terminal gone reads empty for ever: EOF in raw mode)
                return result
        return None

    def _held_line(self) -> list[Key]:
        """In raw mode at once: what the terminal held of a line typed but not ended."""
        if not _ready(self.fd):
            return []
        data = os.read(self.fd, 65536)
        if not data:
            return [Key("eof")]
        self._echoed = True
        return typed_ahead(self._utf8.decode(data))

    def _apply(self, keys: list[Key]) -> ReadResult | None:
        """Typed-ahead keys; those after the one that ends the read wait for the next."""
        for n, key in enumerate(keys):
            result = self._key(key)
            if result is not None:
                self._pending = keys[n + 1:]
                return result
        return None

    def _key(self, key: Key) -> ReadResult | None:
        if self._ctrl_x:
            self._ctrl_x = False
            if key.name == "ctrl-e":
                self._external()
                return None
        action = self._keys.get(key.name)
        return action(key) if action is not None else None

    # --- the terminal -----------------------------------------------------------------

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _raw(self) -> None:
        self._saved = termios.tcgetattr(self.fd)
        termios.tcsetattr(self.fd, termios.TCSADRAIN, raw_mode(self._saved))
        self._write(PASTE_ON)

    def _normal(self) -> None:
        saved, self._saved = self._saved, None
        if saved is None:
            return
        try:
            self._write(PASTE_OFF)
        except (OSError, ValueError):
            pass
        try:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)
        except termios.error:
            pass

    def _size(self) -> tuple[int, int]:
        try:
            size = os.get_terminal_size(self.out.fileno())
            return size.columns or 80, size.lines or 24
        except (OSError, ValueError, AttributeError):
            return 80, 24

    def _draw(self) -> None:
        cols, lines = self._size()
        new = layout(self._prompt, self._continuation, self.buffer.text, self.buffer.cursor, cols, max(1, lines - 1))
        start = CLEAR_ROW if self._shown is None and self._echoed else ""
        self._echoed = False
        self._write(start + redraw(self._shown, new))
        self._shown = new

    def _below(self, mark: str = "") -> None:
        """Leave the input, drawn as it is now (and `mark` after it): the cursor to the
        start of the row under it."""
        self._draw()
        assert self._shown is not None
        self._write(mark + end_of(self._shown))
        self._shown = None

    def _say(self, text: str) -> None:
        """A line under the input, which is then drawn again below it."""
        self._below()
        self._write(text + "\n")

    # --- the keys ---------------------------------------------------------------------

    def _do(self, move: Callable[[Buffer], object]) -> Callable[[Key], None]:
        def action(key: Key) -> None:
            move(self.buffer)
        return action

    def _cut(self, kill: Callable[[Buffer], str]) -> Callable[[Key], None]:
        def action(key: Key) -> None:
            self._kill = kill(self.buffer) or self._kill
        return action

    def _insert(self, key: Key) -> None:
        self.buffer.insert(key.text)

    def _newline(self, key: Key) -> None:
        self.buffer.insert("\n")

    def _yank(self, key: Key) -> None:
        self.buffer.insert(self._kill)

    def _end(self, result: ReadResult, mark: str = "") -> ReadResult:
        self.buffer.cursor = len(self.buffer.text)
        self._below(mark)
        return result

    def _enter(self, key: Key) -> ReadResult | None:
        text = self.buffer.text
        if text.endswith("\\"):
            self.buffer.set(text[:-1] + "\n")
            return None
        return self._end(ReadResult(LINE, text))

    def _ctrl_d(self, key: Key) -> ReadResult | None:
        if self.buffer.text:
            self.buffer.delete()
            return None
        return self._end(ReadResult(EOF))

    def _interrupt(self, key: Key) -> ReadResult:
        return self._end(ReadResult(INTERRUPT, self.buffer.text), "^C")

    def _up(self, key: Key) -> None:
        if not self.buffer.up():
            self._through_history(-1)

    def _down(self, key: Key) -> None:
        if not self.buffer.down():
            self._through_history(1)

    def _through_history(self, step: int) -> None:
        entries = self.history.entries
        place = self._place + step
        if not 0 <= place <= len(entries):
            return
        self._edits[self._place] = self.buffer.text
        self._place = place
        self.buffer.set(self._edits.get(place, entries[place] if place < len(entries) else ""))
        if step > 0 and place < len(entries):
            self.buffer.cursor = self.buffer.first_line_end()  # Down again goes through its lines

    def _tab(self, key: Key) -> None:
        text, cursor = self.buffer.text, self.buffer.cursor
        start = cursor
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        word = text[start:cursor]
        if not word.startswith("/"):
            return
        names = self.complete(word)
        if len(names) == 1:
            self.buffer.insert(names[0][len(word):] + " ")
        elif names:
            common = os.path.commonprefix(names)
            if len(common) > len(word):
                self.buffer.insert(common[len(word):])
            else:
                self._say("  ".join(names))

    def _clear(self, key: Key) -> None:
        self._write(CLEAR_SCREEN)
        self._shown = None

    def _prefix(self, key: Key) -> None:
        self._ctrl_x = True

    def _external(self) -> None:
        """Ctrl-X Ctrl-E: the input in the user's editor, the terminal in its normal mode."""
        self._below()
        self._normal()
        try:
            edited = lineedit_external.edit(self.buffer.text, self.env)
        finally:
            self._raw()
        if edited.text is None:
            self._write(self.style.dim(f"({edited.problem})") + "\n")
        else:
            self.buffer.set(edited.text)

    def _suspend(self, key: Key) -> None:
        """Ctrl-Z: stop as the terminal's suspend key would, the terminal restored first."""
        if signal.getsignal(signal.SIGTSTP) == signal.SIG_IGN:
            return  # started with job control off: nothing to go back to
        self._below()
        self._normal()
        try:
            os.kill(os.getpid(), signal.SIGTSTP)  # (returns once continued)
        finally:
            self._raw()
