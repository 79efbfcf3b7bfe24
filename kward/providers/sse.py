"""Incremental Server-Sent Events parser that works on bytes.

Feed it network chunks exactly as they arrive; it returns the events completed so far.
Rules (the HTML standard's server-sent events, plus what real servers send): lines end
in CRLF, LF or CR, and a CRLF pair split across two chunks counts once; a line is decoded
as UTF-8 only once it is complete, so a multibyte character split across chunks is never
mangled (and U+2028 inside JSON never splits a line, unlike `str.splitlines`);
consecutive `data:` lines join with "\\n";
comment lines (`: OPENROUTER PROCESSING`) are counted and skipped; one space after the
colon is dropped; `event:` and `id:` are kept; a leading UTF-8 BOM is ignored. At end of
stream, `close()` dispatches a pending event that lacks its final blank line (lenient).

Limits: a partial line is kept as a list of pieces (joined once, when its end arrives)
and only each new chunk is searched for line ends, so a long line costs linear time. A
line or an event's data over `MAX_LINE_BYTES` (16 MiB) raises `SSEError`: a stream that
never ends its line cannot take all memory.

Thread contract: a parser belongs to one stream and is used by one thread (the thread
reading that HTTP response). No locks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_LINE_BYTES", "SSEError", "SSEEvent", "SSEParser"]

_BOM = b"\xef\xbb\xbf"
MAX_LINE_BYTES = 16 * 1024 * 1024


class SSEError(ValueError):
    """The stream broke a limit of the parser (a line or an event too long)."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: `data` is the joined data lines; `event` is "" when absent."""

    data: str
    event: str = ""
    id: str | None = None


def _line_end(chunk: bytes) -> int:
    """Index of the first CR or LF in `chunk`, or -1."""
    lf = chunk.find(b"\n")
    cr = chunk.find(b"\r", 0, lf if lf >= 0 else len(chunk))
    return cr if cr >= 0 else lf


class SSEParser:
    """Byte-level SSE parser. `feed(chunk)` -> completed events; `close()` -> the rest."""

    __slots__ = ("_pieces", "_pending", "_skip_lf", "_first", "_data", "_data_size", "_event", "_id",
                 "max_line", "comments")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._pieces: list[bytes] = []  # an incomplete line (no terminator seen yet), in pieces
        self._pending = 0  # bytes in `_pieces`
        self._skip_lf = False  # the previous chunk ended in a bare CR: drop a leading LF
        self._first = True  # BOM check still pending
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._id: str | None = None
        self.max_line = max_line
        self.comments = 0  # comment lines seen (keep-alives)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one chunk of bytes; return the events it completed (maybe none).
        Raises `SSEError` when a line or an event grows past `max_line` bytes."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if self._first:
            if self._pieces:  # at most two bytes that may start a BOM
                chunk = b"".join(self._pieces) + chunk
                self._pieces, self._pending = [], 0
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._keep(chunk)  # too short to know whether it is a BOM
                return []
            self._first = False
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
                if not chunk:
                    return []
        out: list[SSEEvent] = []
        if self._pieces:  # finish the pending line first, looking only at the new bytes
            end = _line_end(chunk)
            if end < 0:
                self._keep(chunk)
                return out
            line = b"".join(self._pieces) + chunk[:end]
            self._pieces, self._pending = [], 0
            self._line(line, out)
            rest = end + 1
            if chunk[end:end + 1] == b"\r":
                if rest == len(chunk):
                    self._skip_lf = True
                elif chunk[rest:rest + 1] == b"\n":
                    rest += 1
            chunk = chunk[rest:]
            if not chunk:
                return out
        lines = chunk.splitlines(True)  # splits on \n, \r, \r\n only (bytes semantics)
        last = lines[-1]
        if last[-1:] not in b"\r\n":
            self._keep(lines.pop())  # incomplete line: wait for more bytes
        elif last.endswith(b"\r"):
            self._skip_lf = True  # may be the first half of a CRLF split across chunks
        for raw in lines:
            self._line(raw.rstrip(b"\r\n"), out)
        return out

    def _keep(self, piece: bytes) -> None:
        self._pieces.append(piece)
        self._pending += len(piece)
        if self._pending > self.max_line:
            raise SSEError(f"a line longer than {self.max_line} bytes")

    def close(self) -> list[SSEEvent]:
        """End of stream: flush an unterminated last line and a pending event."""
        out: list[SSEEvent] = []
        if self._pieces:
            buf = b"".join(self._pieces)
            self._pieces, self._pending = [], 0
            if self._first and buf.startswith(_BOM):
                buf = buf[3:]
            self._line(buf, out)
        self._first = False
        if self._data:
            self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent("\n".join(self._data), self._event, self._id))
                self._data = []
                self._data_size = 0
            self._event = ""
            return
        if line[:6] == b"data: ":  # the hot path: most lines are data lines
            self._data_size += len(line)
            if self._data_size > self.max_line:
                raise SSEError(f"an event longer than {self.max_line} bytes")
            self._data.append(line[6:].decode("utf-8", "replace"))
            return
        if line[:1] == b":":
            self.comments += 1
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data_size += len(line)
            if self._data_size > self.max_line:
                raise SSEError(f"an event longer than {self.max_line} bytes")
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        # `retry:` and unknown fields are ignored, as the SSE spec says
