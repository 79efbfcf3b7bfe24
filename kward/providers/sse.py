"""Incremental Server-Sent Events parser that works on bytes.

Feed it network chunks exactly as they arrive; it returns the events completed so far.
Rules (wire notes section 4): lines end in CRLF, LF or CR, and a CRLF pair split across
two chunks counts once; a line is decoded as UTF-8 only once it is complete, so a
multibyte character split across chunks is never mangled (and U+2028 inside JSON never
splits a line, unlike `str.splitlines`); consecutive `data:` lines join with "\\n";
comment lines (`: OPENROUTER PROCESSING`) are counted and skipped; one space after the
colon is dropped; `event:` and `id:` are kept; a leading UTF-8 BOM is ignored. At end of
stream, `close()` dispatches a pending event that lacks its final blank line (lenient).

Thread contract: a parser belongs to one stream and is used by one thread (the thread
reading that HTTP response). No locks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEEvent", "SSEParser"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: `data` is the joined data lines; `event` is "" when absent."""

    data: str
    event: str = ""
    id: str | None = None


class SSEParser:
    """Byte-level SSE parser. `feed(chunk)` -> completed events; `close()` -> the rest."""

    __slots__ = ("_buf", "_skip_lf", "_first", "_data", "_event", "_id", "comments")

    def __init__(self) -> None:
        self._buf = b""  # an incomplete line (no terminator seen yet)
        self._skip_lf = False  # the previous chunk ended in a bare CR: drop a leading LF
        self._first = True  # BOM check still pending
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self.comments = 0  # comment lines seen (keep-alives)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one chunk of bytes; return the events it completed (maybe none)."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if self._buf:
            chunk = self._buf + chunk
            self._buf = b""
        if self._first:
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._buf = chunk  # too short to know whether it is a BOM
                return []
            self._first = False
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        lines = chunk.splitlines(True)  # splits on \n, \r, \r\n only (bytes semantics)
        last = lines[-1] if lines else b""
        if last and last[-1:] not in b"\r\n":
            self._buf = lines.pop()  # incomplete line: wait for more bytes
        elif last.endswith(b"\r"):
            self._skip_lf = True  # may be the first half of a CRLF split across chunks
        out: list[SSEEvent] = []
        for raw in lines:
            self._line(raw.rstrip(b"\r\n"), out)
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream: flush an unterminated last line and a pending event."""
        out: list[SSEEvent] = []
        if self._buf:
            buf, self._buf = self._buf, b""
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
            self._event = ""
            return
        if line[:6] == b"data: ":  # the hot path: most lines are data lines
            self._data.append(line[6:].decode("utf-8", "replace"))
            return
        if line[:1] == b":":
            self.comments += 1
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        # `retry:` and unknown fields are ignored, as the SSE spec says
