"""The line editor's key decoder: the text a terminal in raw mode sends, as named keys.

`KeyDecoder.feed(text)` takes what was read (already decoded from UTF-8) and returns the
keys it completes; an escape sequence cut between two reads is held until the next
`feed`. When nothing more arrives within `ESC_WAIT` seconds the reader calls `flush()`,
which gives a held lone ESC as `escape` (and drops an unfinished sequence); `waiting()`
says whether such a flush is due.

Names: `text` (a run of printable characters, in `Key.text`), `paste` (a bracketed paste,
`ESC[200~` ... `ESC[201~`, its text cleaned by `clean_paste`: CR and CRLF become LF, other
control characters but tab are dropped), `enter` (CR), `ctrl-j` (LF), `alt-enter` (ESC CR,
ESC LF, and the CSI-u / modifyOtherKeys forms), `shift-enter`, `tab`, `backspace` (DEL),
`alt-backspace`, `ctrl-a` ... `ctrl-z` (ctrl-h is also backspace's other code), `alt-<c>`
for ESC followed by a printable character, `up` `down` `left` `right` with `ctrl-`/`alt-`
forms, `home`, `end`, `delete`, `insert`, `page-up`, `page-down`, `escape`, and `unknown`
for a sequence it does not know. A paste that never ends (its end marker lost) is closed by
`flush()` too, after `PASTE_WAIT` seconds without input.

`typed_ahead(text)` reads text typed with the terminal in its normal mode (while a turn
ran: the line discipline edited and echoed it, and made Enter LF) as the keys it meant:
each line break is `enter`, the text between them `text`; what only raw mode makes keys
(escape sequences, control characters) is dropped.

Pure: no I/O; a decoder per read of an input (`lineedit_term` makes a new one for each),
used from the thread that reads the terminal.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

ESC_WAIT = 0.1  # seconds after a lone ESC before it counts as the Escape key
PASTE_WAIT = 1.0  # seconds of silence that close a paste whose end marker never came
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
_MAX_SEQUENCE = 32  # a CSI longer than this is garbage, not a key


class Key(NamedTuple):
    """One key (or a run of typed text, or a paste)."""

    name: str
    text: str = ""


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # (category Cc but LF and tab)


def clean_paste(text: str) -> str:
    """`text` as it goes into the buffer: CRLF and CR become LF, control characters other
    than LF and tab are dropped."""
    return _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def _printable(ch: str) -> bool:
    return unicodedata.category(ch) != "Cc"


_CONTROL = {"\r": "enter", "\n": "ctrl-j", "\t": "tab", "\x7f": "backspace", "\x08": "ctrl-h"}
_ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left", "H": "home", "F": "end"}
_TILDE = {"1": "home", "7": "home", "4": "end", "8": "end", "3": "delete", "2": "insert",
          "5": "page-up", "6": "page-down"}
_MODIFIERS = {"3": "alt-", "5": "ctrl-", "7": "ctrl-", "9": "alt-"}  # xterm: 1 + (shift 1, alt 2, ctrl 4)


def _enter_with(modifier: str) -> str:
    return "shift-enter" if modifier == "2" else "alt-enter"


def _csi(params: str, final: str) -> Key:
    """The key a complete `ESC [ params final` stands for."""
    parts = params.split(";")
    modifier = parts[1] if len(parts) > 1 else ""
    if final in _ARROWS:
        name = _ARROWS[final]
        prefix = _MODIFIERS.get(modifier, "") if name in ("up", "down", "left", "right") else ""
        return Key(prefix + name)
    if final == "~":
        if parts[0] == "27" and len(parts) == 3 and parts[2] == "13":  # xterm modifyOtherKeys
            return Key(_enter_with(parts[1]))
        return Key(_TILDE.get(parts[0], "unknown"))
    if final == "u" and parts[0] == "13" and modifier:  # the CSI-u ("kitty") form of a modified Enter
        return Key(_enter_with(modifier))
    return Key("unknown")


def typed_ahead(text: str) -> list[Key]:
    """The keys `text`, typed in the terminal's normal mode, stands for (see the module
    docstring): LF, CR and CRLF are `enter`; a tab is kept as text."""
    keys: list[Key] = []
    for n, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        if n:
            keys.append(Key("enter"))
        decoder = KeyDecoder()
        typed = "".join(key.text if key.name in ("text", "paste") else "\t" if key.name == "tab" else ""
                        for key in decoder.feed(line) + decoder.flush())
        if typed:
            keys.append(Key("text", typed))
    return keys


class KeyDecoder:
    """Incremental: `feed` what was read, get the keys (see the module docstring)."""

    def __init__(self) -> None:
        self._held = ""  # the start of a sequence not yet complete
        self._paste: list[str] | None = None  # the text of a paste under way

    def waiting(self) -> bool:
        """Whether something is held that `flush` would give (a lone ESC, a cut sequence,
        an open paste)."""
        return bool(self._held) or self._paste is not None

    def in_paste(self) -> bool:
        return self._paste is not None

    def feed(self, text: str) -> list[Key]:
        self._held += text
        keys: list[Key] = []
        while self._held:
            if self._paste is not None:
                if not self._paste_part(keys):
                    break
                continue
            key, used = self._one(self._held)
            if used == 0:
                break  # an unfinished sequence: wait for more
            self._held = self._held[used:]
            if key.name == "paste-start":
                self._paste = []
            elif key.name == "text" and keys and keys[-1].name == "text":
                keys[-1] = Key("text", keys[-1].text + key.text)
            else:
                keys.append(key)
        return keys

    def flush(self) -> list[Key]:
        """Nothing more came: a held lone ESC is the Escape key, an unfinished sequence is
        dropped, an open paste is closed with what it got."""
        keys: list[Key] = []
        if self._paste is not None:
            self._paste.append(self._held)
            keys.append(Key("paste", clean_paste("".join(self._paste))))
            self._paste, self._held = None, ""
            return keys
        held, self._held = self._held, ""
        if held == "\x1b":
            keys.append(Key("escape"))
        return keys  # (an unfinished sequence, `ESC [ 1` say, is dropped)

    def _paste_part(self, keys: list[Key]) -> bool:
        """Move held text into the open paste; True when the paste ended (and was added to
        `keys`), False when more input is needed."""
        assert self._paste is not None
        end = self._held.find(PASTE_END)
        if end >= 0:
            self._paste.append(self._held[:end])
            self._held = self._held[end + len(PASTE_END):]
            keys.append(Key("paste", clean_paste("".join(self._paste))))
            self._paste = None
            return True
        keep = 0  # a tail that may be the start of the end marker stays held
        for n in range(min(len(PASTE_END) - 1, len(self._held)), 0, -1):
            if PASTE_END.startswith(self._held[-n:]):
                keep = n
                break
        self._paste.append(self._held[:len(self._held) - keep])
        self._held = self._held[len(self._held) - keep:]
        return False

    def _one(self, s: str) -> tuple[Key, int]:
        """The first key of `s` and how many characters it used (0: `s` is unfinished)."""
        ch = s[0]
        if ch == "\x1b":
            return self._escape(s)
        if ch in _CONTROL:
            return Key(_CONTROL[ch]), 1
        if ord(ch) < 0x20:
            if 1 <= ord(ch) <= 26:
                return Key("ctrl-" + chr(ord(ch) + 96)), 1
            return Key("unknown"), 1
        if not _printable(ch):
            return Key("unknown"), 1
        end = 1
        while end < len(s) and s[end] != "\x1b" and _printable(s[end]):
            end += 1
        return Key("text", s[:end]), end

    def _escape(self, s: str) -> tuple[Key, int]:
        if len(s) < 2:
            return Key("escape"), 0
        second = s[1]
        if second == "[":
            for i in range(2, min(len(s), _MAX_SEQUENCE)):
                if 0x40 <= ord(s[i]) <= 0x7E:
                    params, final = s[2:i], s[i]
                    if params == "200" and final == "~":
                        return Key("paste-start"), i + 1
                    return _csi(params, final), i + 1
                if not 0x20 <= ord(s[i]) <= 0x3F:
                    return Key("unknown"), i  # not a CSI after all: drop what came so far
            if len(s) >= _MAX_SEQUENCE:
                return Key("unknown"), _MAX_SEQUENCE
            return Key("escape"), 0
        if second == "O":
            if len(s) < 3:
                return Key("escape"), 0
            return Key(_ARROWS.get(s[2], "unknown")), 3
        if second in "\r\n":
            return Key("alt-enter"), 2
        if second in "\x7f\x08":
            return Key("alt-backspace"), 2
        if second == "\x1b":
            return Key("escape"), 1
        if _printable(second) and ord(second) >= 0x20:
            return Key("alt-" + second.lower()), 2
        return Key("escape"), 1
