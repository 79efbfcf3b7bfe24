"""Splitting session files into lines in bounded memory and bounded time.

A session file is JSONL, but a hostile or damaged file may hold a gigabyte without a
newline or hundreds of megabytes of nothing but newlines. `LineScanner` reads through a
``read(n) -> bytes`` callable in `CHUNK`-sized pieces and yields each non-blank line with
the file offset it starts at:

- runs of blank lines are passed over with C-speed searches (a regex for the next
  non-blank byte, ``bytes.count`` for the newlines): never a Python step per blank line;
- a line longer than `MAX_LINE` bytes is skipped as it streams past: at most `MAX_LINE`
  bytes of it are ever held, and nothing once it is known to be too long;
- an unterminated last line (at most `MAX_LINE` bytes) is kept in `tail` for the caller
  to judge (a complete record without its newline, or a line torn by a crash).

Memory is bounded by ``CHUNK + MAX_LINE`` whatever the file holds. `MAX_DEPTH` bounds the
nesting of records read from session files (`too_deep`), so recursive code further up
(redaction, encoding, normalizing) never meets a value nested deeper than the recursion
limit allows. Pure code over the callable it is given: safe from any thread.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

CHUNK = 1 << 20
MAX_LINE = 64 << 20  # a record longer than this is skipped (the RPC frame limit is 64 MiB too)
HEADER_MAX = 64 << 10  # the header line must end within this many bytes
MAX_DEPTH = 200  # levels of arrays/objects in one record (requests are bounded at 64)

_BLANK = b" \t\r\n\x0b\x0c"
_BLANK_BYTES = frozenset(_BLANK)


def _blank_run_end(chunk: bytes, pos: int) -> int:
    """The index of the first non-blank byte of `chunk` at or after `pos` (``len(chunk)``
    when none), at C speed: windows growing from 64 bytes are tested whole with
    ``bytes.translate`` (fast), and only the 4 KiB piece holding the end of the run is
    stripped byte by byte. A short run costs a short window, a long one about its length."""
    n = len(chunk)
    window = 64
    while pos < n:
        end = min(n, pos + window)
        if chunk[pos:end].translate(None, _BLANK):  # the run ends in this window
            while True:
                piece_end = min(end, pos + 4096)
                rest = chunk[pos:piece_end].lstrip(_BLANK)
                if rest:
                    return piece_end - len(rest)
                pos = piece_end
        pos = end
        window = min(window * 16, 1 << 20)
    return n


_BLANK_PREFIXES = frozenset([b""] + [bytes([c]) for c in _BLANK])  # first bytes of a blank line


class LineScanner:
    """Iterate ``(line, start_offset)`` over the non-blank complete lines of a byte stream.

    `read(n)` returns the next at most `n` bytes (``b""`` at the end); the stream starts at
    file offset `offset`. `skipping` says the stream starts inside an over-long line (left
    over from an earlier scan of the same file). After iteration:

    - `consumed`: the offset just past the last complete line, or past the skipped bytes
      of an over-long line still unterminated at the end (`skipping` is then True);
    - `tail`: an unterminated last line of at most `max_line` bytes (``b""`` when none),
      starting at `consumed` (its bytes are not counted in it);
    - `lines`, `blank`, `oversized`: complete lines seen, blank ones and over-long ones
      (an over-long line still unterminated counts as oversized too).
    """

    def __init__(self, read: Callable[[int], bytes], offset: int = 0, *, skipping: bool = False,
                 max_line: int | None = None, chunk: int = CHUNK):
        self._read = read
        self._chunk = chunk
        self.max_line = MAX_LINE if max_line is None else max_line
        self.consumed = offset
        self.skipping = skipping
        self.lines = 0
        self.blank = 0
        self.oversized = 0
        self.tail = b""

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        parts: list[bytes] = []  # pieces of the current unterminated line
        size = 0  # their total length
        base = self.consumed  # file offset of chunk[0]
        max_line = self.max_line
        while True:
            chunk = self._read(self._chunk)
            if not chunk:
                break
            n = len(chunk)
            pos = 0
            sparse = n <= max_line and chunk.count(b"\n") * 32 < n  # lines of 32 bytes on average, or longer
            while pos < n:
                if sparse and not parts and not self.skipping:
                    # the common case: split the whole lines from here at C speed (newline-dense
                    # chunks, such as runs of blank lines, take the run-skipping path below)
                    sparse = False  # (once per chunk: no newline is left after this)
                    last = chunk.rfind(b"\n")
                    if last >= pos:
                        start = base + pos
                        for line in chunk[pos:last].split(b"\n"):
                            self.lines += 1
                            self.consumed = start + len(line) + 1
                            if line[:1] in _BLANK_PREFIXES and not line.strip():
                                self.blank += 1
                            else:
                                yield line, start
                            start = self.consumed
                        pos = last + 1
                        continue
                if self.skipping:
                    nl = chunk.find(b"\n", pos)
                    if nl < 0:
                        pos = n
                        self.consumed = base + n  # junk either way: never read again
                        break
                    self.skipping = False
                    self.lines += 1
                    pos = nl + 1
                    self.consumed = base + pos
                    continue
                if not parts and chunk[pos] in _BLANK_BYTES:  # a run of blank lines?
                    stop = _blank_run_end(chunk, pos)
                    last = chunk.rfind(b"\n", pos, stop)
                    if last >= 0:
                        count = chunk.count(b"\n", pos, last + 1)
                        self.blank += count
                        self.lines += count
                        pos = last + 1
                        self.consumed = base + pos
                        continue
                    # leading white space of a line: take it with the line
                nl = chunk.find(b"\n", pos)
                if nl < 0:
                    if size + n - pos > max_line:
                        parts, size = [], 0
                        self.skipping = True
                        self.oversized += 1
                        self.consumed = base + n
                    else:
                        parts.append(chunk[pos:])
                        size += n - pos
                    pos = n
                    break
                start = self.consumed
                self.lines += 1
                too_long = size + nl - pos > max_line
                if too_long:
                    self.oversized += 1
                    line = b""
                elif parts:
                    parts.append(chunk[pos:nl])
                    line = b"".join(parts)
                else:
                    line = chunk[pos:nl]
                parts, size = [], 0
                pos = nl + 1
                self.consumed = base + pos
                if too_long:
                    continue
                if not line.strip():
                    self.blank += 1
                    continue
                yield line, start
            base += n
        self.tail = b"".join(parts)


def range_reader(pread: Callable[[int, int], bytes], start: int, end: int) -> Callable[[int], bytes]:
    """``read(n)`` over bytes [start, end) of a file read with ``pread(n, offset)``."""
    position = start

    def read(n: int) -> bytes:
        nonlocal position
        if position >= end:
            return b""
        data = pread(min(n, end - position), position)
        position += len(data)
        return data

    return read


def too_deep(value: object, raw: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """True when the decoded JSON `value` (from the bytes `raw`) nests more than
    `max_depth` levels of arrays and objects. Free for nearly every record: only a line
    with more brackets than `max_depth` is walked (iteratively, containers only)."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth or not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[dict[Any, Any] | list[Any], int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        for sub in children:
            if isinstance(sub, (dict, list)):
                stack.append((sub, depth + 1))
    return False
