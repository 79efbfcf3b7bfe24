"""LSP-style framing: bytes <-> frames, and nothing else.

Input: header lines `Name: value` ending in CRLF (LF accepted), a blank line, then exactly
`Content-Length` bytes of body. `Content-Length` is matched case-insensitively; other
headers are ignored. Output: `Content-Length: N\\r\\n\\r\\n<body>` with N the byte length.

Faults never end the stream: the reader reports a `FrameFault` and resynchronizes:

- a line that is not a header marks its block bad; the block is skipped through its blank
  line (and its body, if it declared a usable Content-Length). A `Content-Length:` line
  after such junk, or embedded in the junk (a body that ran into the next frame's header),
  starts a new block, so a valid frame right behind junk is still served;
- a header line over 8 KiB is consumed without buffering it;
- a body over the maximum frame size is skipped in chunks, never buffered.

`FrameReader` is used by one thread only (the reader thread). `encode_frame` is pure.
"""

from __future__ import annotations

from typing import BinaryIO, NamedTuple

MAX_HEADER_LINE = 8 * 1024
_SKIP_CHUNK = 64 * 1024
_CL = b"content-length:"


class FrameFault(NamedTuple):
    """A framing problem; the stream is still usable. `reason` is an errors.REASONS slug."""

    reason: str
    message: str


def encode_frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _is_token(name: bytes) -> bool:
    # RFC 7230 token characters; enough to tell a header name from a JSON fragment.
    return bool(name) and all(33 <= c <= 126 and c not in b'"(),/:;<=>?@[\\]{}' for c in name)


class FrameReader:
    """Reads frames from a buffered binary stream (e.g. io.BufferedReader over stdin)."""

    def __init__(self, stream: BinaryIO, max_frame_bytes: int):
        self._stream = stream
        self._max = max_frame_bytes
        self._pending: bytes | None = None  # a line pushed back to start the next block

    def read(self) -> bytes | FrameFault | None:
        """The next body, a FrameFault, or None at end of input (also mid-frame)."""
        length: int | None = None
        fault: FrameFault | None = None
        junk = False  # saw a non-header line in this block
        started = False
        while True:
            line = self._next_line()
            if line is None:
                return None
            if isinstance(line, _TooLong):
                started = True
                fault = fault or FrameFault("header_too_long", f"Header line longer than {MAX_HEADER_LINE} bytes")
                continue
            text = line.rstrip(b"\r\n")
            if not text:
                if not started:
                    continue  # blank lines between frames are harmless
                break
            started = True
            name, sep, value = text.partition(b":")
            if sep and _is_token(name):
                if name.lower() == b"content-length":
                    if junk:  # a fresh frame right behind junk: serve it
                        self._pending = line
                        return fault
                    length, problem = self._parse_length(value)
                    fault = fault or problem
                continue
            # Not a header. A body that ran straight into the next frame's header?
            at = text.lower().find(_CL)
            if at > 0:
                self._pending = text[at:] + b"\r\n"
                return fault or FrameFault("invalid_header", "Frame header block holds a line that is not a header")
            junk = True
            fault = fault or FrameFault("invalid_header", "Frame header block holds a line that is not a header")
        if length is not None and (fault is not None or length > self._max):
            if not self._skip(length):
                return None
            if fault is None:
                return FrameFault("frame_too_large",
                                  f"Frame body of {length} bytes exceeds the maximum of {self._max} bytes")
        if fault is not None:
            return fault
        if length is None:
            return FrameFault("missing_content_length", "Frame header block has no Content-Length header")
        body = self._stream.read(length) if length else b""
        if len(body) < length:
            return None  # EOF mid-body
        return body

    @staticmethod
    def _parse_length(value: bytes) -> tuple[int | None, FrameFault | None]:
        v = value.strip()
        if v.isdigit() and len(v) <= 18:
            return int(v), None
        return None, FrameFault("invalid_content_length",
                                "Content-Length must be a non-negative integer, got %r" % v[:40].decode("latin-1"))

    def _next_line(self) -> bytes | _TooLong | None:
        if self._pending is not None:
            line, self._pending = self._pending, None
            return line
        line = self._stream.readline(MAX_HEADER_LINE + 2)
        if not line:
            return None
        if line.endswith(b"\n"):
            return line
        if len(line) < MAX_HEADER_LINE + 2:
            return None  # EOF in the middle of a header line
        while True:  # discard the rest of the over-long line
            rest = self._stream.readline(_SKIP_CHUNK)
            if not rest:
                return None
            if rest.endswith(b"\n"):
                return _TOO_LONG

    def _skip(self, n: int) -> bool:
        while n > 0:
            chunk = self._stream.read(min(n, _SKIP_CHUNK))
            if not chunk:
                return False
            n -= len(chunk)
        return True


class _TooLong:
    """What `_next_line` gives for a header line longer than MAX_HEADER_LINE (skipped)."""


_TOO_LONG = _TooLong()
