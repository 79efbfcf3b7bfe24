"""Reading the user's resource files: capped reads, front matter, command names.

`read_capped` reads at most `MAX_PROMPT_FILE` bytes of a text file (the system prompt's
files: AGENTS.md); a larger file is cut there and ends with a note saying so.
`FileCache` keeps such reads keyed by the file's stat, so a file is read again only when
it changed (a new size, mtime, ctime or inode) and a turn costs one stat per file.
`split_front_matter` parses the small YAML subset prompt templates and skills use: a
leading ``---`` block of ``key: value`` lines (values optionally quoted); anything else in
the block (lists, nesting, comments) is ignored.

Pure functions and a lock-guarded cache: any thread.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path

from kward.fsutil import read_fd

MAX_PROMPT_FILE = 32 * 1024
#: A command name: what follows the slash of `/name args` (prompt templates, plugin commands).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_KEY_RE = re.compile(r"([A-Za-z0-9_-]+)\s*:\s*(.*)")


def truncation_note(limit: int = MAX_PROMPT_FILE) -> str:
    return f"[... truncated: the file is larger than {limit // 1024} KiB; only the first {limit // 1024} KiB are shown]"


def decode(data: bytes) -> str:
    """UTF-8 text (a BOM dropped, bad bytes replaced), line ends made ``\\n``."""
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_regular(path: Path, limit: int) -> bytes | None:
    """Up to `limit` bytes of `path` when it is a regular file (opened without blocking,
    so a FIFO never hangs the reader), else None. OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_capped(path: Path, limit: int = MAX_PROMPT_FILE) -> str | None:
    """The stripped text of the regular file `path` (at most `limit` bytes, then a
    truncation note); None when it is missing, unreadable, not a regular file or empty."""
    try:
        data = read_regular(path, limit + 1)
    except OSError:
        return None
    if data is None:
        return None
    text = decode(data[:limit]).strip()
    if len(data) > limit:
        text = (text + "\n" if text else "") + truncation_note(limit)
    return text or None


def stat_key(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is edited or replaced; None when it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


class FileCache:
    """`read_capped` results keyed by each file's stat: a file is read again only after
    it changed. Any thread (`_lock` guards the table; reads happen outside it)."""

    def __init__(self, limit: int = MAX_PROMPT_FILE, max_entries: int = 256):
        self._limit = limit
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[tuple[int, int, int, int], str | None]] = {}

    def read(self, path: Path) -> str | None:
        key = stat_key(path)
        name = str(path)
        if key is None:
            with self._lock:
                self._entries.pop(name, None)
            return None
        with self._lock:
            cached = self._entries.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        text = read_capped(path, self._limit)
        with self._lock:
            if len(self._entries) >= self._max and name not in self._entries:
                self._entries.pop(next(iter(self._entries)))
            self._entries[name] = (key, text)
        return text

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace("\\\"", "\"").replace("\\\\", "\\") if value[0] == "\"" else inner.replace("''", "'")
    if " #" in value:  # a trailing YAML comment
        value = value.split(" #", 1)[0].rstrip()
    return value


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """(fields, body) of a document that may open with a ``---`` front matter block.
    Without a closed block the whole text is the body and there are no fields."""
    if not text.startswith("---\n") and text.strip() != "---":
        return {}, text
    lines = text.split("\n")
    for end in range(1, len(lines)):
        if lines[end].rstrip() == "---":
            break
    else:
        return {}, text
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#") or line[:1].isspace():
            continue
        match = _KEY_RE.fullmatch(line.rstrip())
        if match:
            fields.setdefault(match.group(1), _unquote(match.group(2)))
    return fields, "\n".join(lines[end + 1:])


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace collapsed; at most `limit` characters (for descriptions in lists)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
