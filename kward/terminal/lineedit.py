"""kward's line editor for the interactive prompt (instead of GNU readline): multi-line
input, bracketed paste, the history, and the user's editor on the input.

`LineEditor.read(prompt, prefill)` reads one input with the terminal in raw mode (no echo,
no line discipline, no signals from keys: Ctrl-C, Ctrl-Z and Ctrl-\\ arrive as bytes) and
bracketed paste on (`ESC[?2004h`); both are undone before it returns, however it returns
(a key, an exception, SIGTERM/SIGHUP made SystemExit by the Host), and while it runs the
user's editor or is suspended, so the terminal is in its normal mode whenever kward is not
reading a prompt. It returns a `ReadResult`: the `line` sent, an `interrupt` (Ctrl-C, or a
SIGINT sent from outside; the `text` that was cleared) or `eof` (Ctrl-D on an empty input,
or the terminal gone). Keys read after the one that ended a read (typed fast, or sent in
one write: `first⏎second⏎`, Ctrl-C Ctrl-D) are kept for the next read, which takes them
first (`drop_typed_ahead` discards them, as a canceled turn does).

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
lines, still in that mode (`lineedit_term.Terminal.typed_lines`: one os.read gives one
line; an empty one is a Ctrl-D on an empty line, taken as that key): the first is sent at once, shown after the
prompt as a line sent there is, and the rest stay in the terminal's queue for the next
reads, in order (a Ctrl-C that cancels the next turn discards them, as the terminal does).
Then, once raw mode is on, what the terminal held of a line not ended is the start of the
input. Keys pressed at the prompt are read as ever. The prompt's row is cleared first when
type-ahead was taken (it may hold the echo of a line not ended).

The screen: after the keys of each read of the terminal (none while a paste is still
arriving) the input is drawn again from the first row that changed (`lineedit_layout`,
which lays out only the rows the screen shows), at the terminal width read at that moment,
and a resize draws it again at once. The terminal's modes and keys are `lineedit_term`'s
(the keys decoded by `lineedit_keys`), the edits `lineedit_buffer`'s, the entries
`lineedit_history`'s.

Main thread only (it changes terminal modes and sends itself SIGTSTP); one read at a time.
"""

from __future__ import annotations

import os
import signal
import termios
from typing import Callable, Final, Literal, Mapping, NamedTuple, TextIO

from kward.terminal import lineedit_external
from kward.terminal.lineedit_buffer import Buffer
from kward.terminal.lineedit_history import History
from kward.terminal.lineedit_keys import Key, clean_paste
from kward.terminal.lineedit_layout import Layout, continuation_for, end_of, layout, redraw, visible_width
from kward.terminal.lineedit_term import Terminal
from kward.terminal.style import Style

LINE: Final = "line"
INTERRUPT: Final = "interrupt"
EOF: Final = "eof"
CLEAR_SCREEN = "\x1b[H\x1b[2J"
CLEAR_ROW = "\r\x1b[J"  # (the row the cursor is on and all below)

#: Completes a slash command: the word before the cursor ("/re") -> the full names.
Completer = Callable[[str], list[str]]


class ReadResult(NamedTuple):
    """What `read` ended with: `kind` LINE (the input in `text`), INTERRUPT (`text`: what was
    cleared) or EOF."""

    kind: Literal["line", "interrupt", "eof"]
    text: str = ""


class LineEditor:
    """Reads prompt inputs from the terminal `fd` (see the module docstring); `out` is the
    terminal's output stream, `history` the entries Up/Down go through (the shell adds to
    it), `complete` the slash-command completer, `env` where $VISUAL/$EDITOR are read."""

    def __init__(self, fd: int, out: TextIO, history: History, *, complete: Completer,
                 env: Mapping[str, str], style: Style):
        self.term = Terminal(fd, out)
        self.history = history
        self.complete = complete
        self.env = env
        self.style = style
        self.buffer = Buffer()
        self._shown: Layout | None = None  # the layout on screen
        self._prompt = ""
        self._continuation = ""
        self._kill = ""  # the last killed text (Ctrl-Y)
        self._ctrl_x = False  # Ctrl-X was pressed: Ctrl-E may follow
        self._pending: list[Key] = []  # keys read after the one a read ended with: the next read's
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
        """One input (see the module docstring). A SIGINT from outside is taken as Ctrl-C
        (`lineedit_term`); SystemExit propagates, with the terminal restored; a terminal
        that went away (an OSError or termios.error on it) is EOF."""
        self._prompt = prompt
        self._continuation = self.style.dim(continuation_for(visible_width(prompt)))
        self.buffer.set(clean_paste(prefill))
        self._shown, self._ctrl_x = None, False
        self._place, self._edits = len(self.history.entries), {}
        self.term.begin()
        self.term.echoed = bool(self._pending)  # (keys kept from the last read may be typed-ahead ones, echoed)
        try:
            return self._read()
        except (OSError, termios.error):
            return ReadResult(EOF)
        finally:
            self.term.normal()
            self.term.end()

    def drop_typed_ahead(self) -> None:
        """Forget the keys read ahead for the next read (a canceled turn drops them, as the
        terminal drops what it holds)."""
        self._pending = []

    def _read(self) -> ReadResult:
        pending, self._pending = self._pending, []
        result = self._apply(pending)
        if result is None:
            result = self._typed_ahead()
        if result is not None:
            return result
        self.term.raw()
        result = self._apply(self.term.held_line())
        if result is not None:
            return result
        self._draw()
        while True:
            keys = self.term.keys()
            if not keys:
                continue  # (a paste under way, the rest of a sequence: nothing to draw yet)
            result = self._apply(keys)
            if result is not None:
                return result
            self._draw()

    def _typed_ahead(self) -> ReadResult | None:
        """The lines typed while a turn ran, until one ends the read (see the module docstring)."""
        for keys in self.term.typed_lines():
            result = self._apply(keys)
            if result is not None:
                return result
        return None

    def close(self) -> None:
        """Release what the editor holds (it is not used after this)."""
        self.term.close()

    def _apply(self, keys: list[Key]) -> ReadResult | None:
        """Keys, in order; those after the one that ends the read wait for the next."""
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
        self.term.write(text)

    def _draw(self) -> None:
        cols, lines = self.term.size()
        new = layout(self._prompt, self._continuation, self.buffer.text, self.buffer.cursor, cols, max(1, lines - 1))
        start = CLEAR_ROW if self._shown is None and self.term.echoed else ""
        self.term.echoed = False
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
        self.term.normal()
        try:
            edited = lineedit_external.edit(self.buffer.text, self.env)
        finally:
            self.term.raw()
        if edited.text is None:
            self._write(self.style.dim(f"({edited.problem})") + "\n")
        else:
            self.buffer.set(edited.text)

    def _suspend(self, key: Key) -> None:
        """Ctrl-Z: stop as the terminal's suspend key would, the terminal restored first."""
        if signal.getsignal(signal.SIGTSTP) == signal.SIG_IGN:
            return  # started with job control off: nothing to go back to
        self._below()
        self.term.normal()
        try:
            os.kill(os.getpid(), signal.SIGTSTP)  # (returns once continued)
        finally:
            self.term.raw()
