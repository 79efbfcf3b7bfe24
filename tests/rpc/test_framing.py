"""FrameReader: every framing fault is reported and the next valid frame is served."""

import io
import json

import pytest

from kward.rpc.framing import MAX_HEADER_LINE, FrameFault, FrameReader, encode_frame


def body(i):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "workspace/info"}).encode()


def frame(b, crlf=b"\r\n"):
    return b"Content-Length: %d" % len(b) + crlf + crlf + b


def read_all(data, max_bytes=1 << 20):
    r = FrameReader(io.BufferedReader(io.BytesIO(data)), max_bytes)
    out = []
    while True:
        item = r.read()
        if item is None:
            return out
        out.append(item.reason if isinstance(item, FrameFault) else item)


def test_valid_frames_and_header_case_and_extra_headers():
    data = frame(body(1)) + b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body(2)) + body(2)
    assert read_all(data) == [body(1), body(2)]


def test_lf_only_line_endings_and_blank_lines_between_frames():
    assert read_all(frame(body(1), b"\n") + b"\r\n\r\n" + frame(body(2))) == [body(1), body(2)]


def test_length_counts_utf8_bytes():
    b = json.dumps({"text": "héllo ✓ 🙂"}, ensure_ascii=False).encode()
    assert read_all(frame(b)) == [b]


@pytest.mark.parametrize("bad, reason", [
    (b"Content-Type: x\r\n\r\n", "missing_content_length"),
    (b"Content-Length: abc\r\n\r\n", "invalid_content_length"),
    (b"Content-Length: -5\r\n\r\n", "invalid_content_length"),
    (b"this is not a header\r\nneither is this\r\n\r\n", "invalid_header"),
    (b"X-Long: " + b"a" * (MAX_HEADER_LINE + 100) + b"\r\nContent-Length: 2\r\n\r\n{}", "header_too_long"),
])
def test_each_fault_then_valid_frame(bad, reason):
    assert read_all(bad + frame(body(7))) == [reason, body(7)]


def test_junk_block_with_length_skips_its_body():
    assert read_all(b"Content-Length: 5\r\njunk line\r\n\r\nhello" + frame(body(1))) == ["invalid_header", body(1)]


def test_body_without_length_runs_into_next_frame_header():
    # missing Content-Length: the body is then junk that runs straight into the next header
    data = b"Content-Type: x\r\n\r\n" + body(1) + frame(body(2))
    assert read_all(data) == ["missing_content_length", "invalid_header", body(2)]


def test_junk_line_directly_followed_by_a_frame():
    assert read_all(b"garbage\r\n" + frame(body(3))) == ["invalid_header", body(3)]


def test_oversized_body_is_skipped_not_buffered():
    big = b"x" * 5000

    class Counting(io.RawIOBase):
        def __init__(self, data):
            self.src = io.BytesIO(data)
            self.max_read = 0

        def readable(self):
            return True

        def readinto(self, b):
            chunk = self.src.read(len(b))
            self.max_read = max(self.max_read, len(chunk))
            b[: len(chunk)] = chunk
            return len(chunk)

    raw = Counting(frame(big) + frame(body(1)))
    r = FrameReader(io.BufferedReader(raw, buffer_size=1024), 1024)
    first = r.read()
    assert isinstance(first, FrameFault) and first.reason == "frame_too_large"
    assert r.read() == body(1)
    assert r.read() is None


def test_eof_mid_body_and_mid_header():
    assert read_all(b"Content-Length: 10\r\n\r\nabc") == []
    assert read_all(frame(body(1)) + b"Content-Len") == [body(1)]


def test_zero_length_body_is_a_frame():
    assert read_all(b"Content-Length: 0\r\n\r\n") == [b""]


def test_encode_frame():
    assert encode_frame("é".encode()) == b"Content-Length: 2\r\n\r\n\xc3\xa9"
