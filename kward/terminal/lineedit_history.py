"""The input history of interactive mode, in `<config dir>/history` (mode 0600).

On disk. A file kward writes starts with the line `HEADER` exactly; every line after it is
one entry as a JSON string (`json.dumps(entry, ensure_ascii=False)`), so an entry keeps its
newlines, backslashes and quotes whole and the format is unambiguous. A file without that
first line is an older one: the GNU readline format (one entry per line, plain text; blank
lines skipped), or libedit's (`_HiStOrY_V2_` first, `\\ooo` octal escapes); it is read as
such and written anew in kward's format on the first save. A line of a kward file that is
not a JSON string (added by hand, say) is taken as plain text, except `HEADER` again: an
entry is never written so (it would be quoted), so it is a second header (skipped).
Undecodable bytes are read as U+FFFD.

Limits. At most `HISTORY_LIMIT` entries are kept (the oldest go first), a file larger than
`HISTORY_BYTES` is not read (and is written anew on the next save), an entry larger than
`MAX_ENTRY_BYTES` is kept for this run only, and consecutive duplicates are not added.

Writes never leave a half-written file: an entry is appended with one `write` of its
encoded line (the header with it, in the same write, when the file was empty when opened:
two processes that both found it empty each write a header, and the second is skipped
when read, so that race costs nothing); when the file must be trimmed or converted it is
replaced whole (`fsutil.atomic_write_bytes`: a temp file and a rename). The file is only ever opened through `fsutil.open_own` (a link, a FIFO, a device
or another user's file is an OSError, `UnusableFile`), so nothing is followed or blocked
on. Other kward processes may append to the same file; a replacement keeps this process's
view of it (entries they appended since this one read it may go).

Main thread only (the shell's); `load` and `add` raise OSError for the caller to report.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from kward.fsutil import APPEND_OWN, atomic_write_bytes, naming, open_own, read_fd

HEADER = "#kward-history v2: one JSON string per line"
HISTORY_LIMIT = 1000
HISTORY_BYTES = 4 << 20  # a larger history file is not read (nor written)
MAX_ENTRY_BYTES = HISTORY_BYTES // 8
_LIBEDIT = b"_HiStOrY_V2_"
_LIBEDIT_ESCAPE = re.compile(rb"\\([0-7]{3}|\\)")


def encode(entry: str) -> bytes:
    """One entry as its line in kward's format (with the line break)."""
    return (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "replace")


def decode(data: bytes) -> tuple[list[str], bool]:
    """The entries of a history file's content, oldest first, and whether it was in kward's
    format (see the module docstring)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    header = HEADER.encode()
    if lines and lines[0].rstrip(b"\r") == header:  # (a header again: two processes began the file at once)
        return [_entry(line.decode("utf-8", "replace")) for line in lines[1:]
                if line.strip() and line.rstrip(b"\r") != header], True
    if lines and lines[0].rstrip(b"\r") == _LIBEDIT:
        return [_unvis(line).decode("utf-8", "replace") for line in lines[1:] if line.strip()], False
    return [line.decode("utf-8", "replace") for line in lines if line.strip()], False


def _entry(line: str) -> str:
    if line.startswith('"'):
        try:
            value = json.loads(line)
        except ValueError:
            return line
        if isinstance(value, str):
            return value
    return line


def _unvis(line: bytes) -> bytes:
    return _LIBEDIT_ESCAPE.sub(lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 8) & 0xFF]), line)


class History:
    """The entries (oldest first) and the file they are kept in (None: this run only)."""

    def __init__(self, path: Path | None, *, limit: int = HISTORY_LIMIT, max_bytes: int = HISTORY_BYTES):
        self.path = path
        self.limit = limit
        self.max_bytes = max_bytes
        self.entries: list[str] = []
        self._replace = False  # the next save writes the file anew (too big, or an older format)
        self._on_disk = 0  # entries the file holds (as far as this process knows)

    def load(self) -> None:
        """Read the file; a missing one is an empty history. OSError for an unusable file."""
        if self.path is None:
            return
        try:
            fd = open_own(self.path)
        except FileNotFoundError:
            return
        try:
            with naming(self.path):
                size = os.fstat(fd).st_size
                if size > self.max_bytes:
                    self._replace = True
                    return
                data = read_fd(fd, self.max_bytes + 1)
        finally:
            os.close(fd)
        entries, current = decode(data)
        self.entries = entries[-self.limit:]
        self._on_disk = len(entries)
        self._replace = not current and bool(data)

    def add(self, entry: str) -> None:
        """Add `entry` (not when it repeats the last one) and save it; OSError when the file
        cannot be written (the entry is kept for this run)."""
        if not entry or (self.entries and self.entries[-1] == entry):
            return
        self.entries.append(entry)
        del self.entries[:-self.limit]
        if self.path is None:
            return
        line = encode(entry)
        if len(line) > MAX_ENTRY_BYTES:
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = open_own(self.path, APPEND_OWN)  # (refuses a link, a FIFO, another user's file)
        try:
            with naming(self.path):
                os.fchmod(fd, 0o600)
                size = os.fstat(fd).st_size
                full = self._on_disk + 1 > self.limit + self.limit // 4 or size + len(line) > self.max_bytes
                if not (self._replace or full):
                    data = line if size else HEADER.encode() + b"\n" + line
                    _write_all(fd, data)
                    self._on_disk = self._on_disk + 1 if size else 1
                    return
        finally:
            os.close(fd)
        self._rewrite()

    def _rewrite(self) -> None:
        """Replace the file with the entries kept, newest first until half the byte limit."""
        assert self.path is not None
        lines: list[bytes] = []
        total = len(HEADER) + 1
        for entry in reversed(self.entries):
            line = encode(entry)
            if len(line) > MAX_ENTRY_BYTES:
                continue
            if total + len(line) > self.max_bytes // 2:
                break
            lines.append(line)
            total += len(line)
        data = HEADER.encode() + b"\n" + b"".join(reversed(lines))
        atomic_write_bytes(self.path, data)
        self._replace, self._on_disk = False, len(lines)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
