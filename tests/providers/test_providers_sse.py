"""The byte-level SSE parser: line endings, chunk boundaries, UTF-8, comments, fields."""

import json

import pytest

from kward.providers.sse import SSEEvent, SSEParser


def parse(chunks):
    p = SSEParser()
    out = []
    for c in chunks:
        out += p.feed(c)
    out += p.close()
    return out, p


def every_split(data: bytes):
    """All ways to cut `data` in two, plus one byte at a time."""
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]
    yield [data[i:i + 1] for i in range(len(data))]


STREAM = ("event: a\ndata: {\"x\":\"h\u00e9llo \u2028 \U0001F600\"}\n\n"
          ": OPENROUTER PROCESSING\n\n"
          "id: 7\nevent: b\ndata: line1\ndata: line2\n\n"
          "data:nospace\n\n").encode("utf-8")
EXPECTED = [SSEEvent('{"x":"h\u00e9llo \u2028 \U0001F600"}', "a", None),
            SSEEvent("line1\nline2", "b", "7"), SSEEvent("nospace", "", "7")]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings_and_every_split_point(eol):
    data = STREAM.replace(b"\n", eol)
    for chunks in every_split(data):
        events, parser = parse(chunks)
        assert events == EXPECTED, chunks
        assert parser.comments == 1


def test_crlf_split_between_cr_and_lf_does_not_dispatch_early():
    p = SSEParser()
    assert p.feed(b"event: a\r") == []
    assert p.feed(b"\ndata: 1\r") == []
    assert p.feed(b"\n\r") == [SSEEvent("1", "a")]
    assert p.feed(b"\n") == []  # second half of the CRLF blank line: nothing new
    assert p.feed(b"data: 2\r\n\r\n") == [SSEEvent("2")]


def test_utf8_split_inside_a_character_is_decoded_per_line():
    data = "data: \u00e9\U0001F600\u2028x\n\n".encode("utf-8")
    events, _ = parse([data[i:i + 1] for i in range(len(data))])
    assert events == [SSEEvent("\u00e9\U0001F600\u2028x")]


def test_bom_is_ignored_even_when_split():
    data = b"\xef\xbb\xbfdata: 1\n\n"
    for chunks in every_split(data):
        assert parse(chunks)[0] == [SSEEvent("1")]


def test_missing_final_blank_line_is_dispatched_on_close():
    assert parse([b"data: tail"])[0] == [SSEEvent("tail")]
    assert parse([b"data: tail\n"])[0] == [SSEEvent("tail")]


def test_comment_only_and_empty_data_do_not_dispatch():
    events, parser = parse([b": ping\n\n: ping\n\nretry: 5\n\nevent: x\n\n"])
    assert events == []
    assert parser.comments == 2


def test_empty_data_line_is_kept():
    assert parse([b"data:\ndata: a\n\n"])[0] == [SSEEvent("\na")]


def test_large_stream_in_odd_chunks():
    events = [{"type": "response.output_text.delta", "delta": f"d{i}\u00e9"} for i in range(2000)]
    data = b"".join(f"event: {e['type']}\r\ndata: {json.dumps(e, ensure_ascii=False)}\r\n\r\n".encode()
                    for e in events)
    chunks = [data[i:i + 7] for i in range(0, len(data), 7)]
    out, _ = parse(chunks)
    assert [json.loads(e.data) for e in out] == events


def test_a_long_line_in_small_chunks_is_one_event_with_every_line_ending():
    payload = "x" * (1 << 20) + "\u00e9"
    for eol in (b"\n", b"\r\n", b"\r"):
        data = b"data: " + payload.encode() + eol + eol + b"data: next" + eol + eol
        chunks = [data[i:i + 4096] for i in range(0, len(data), 4096)]
        events, _ = parse(chunks)
        assert events == [SSEEvent(payload), SSEEvent("next")], eol


def test_pending_line_ends_split_across_chunks():
    p = SSEParser()
    assert p.feed(b"data: ab") == [] and p.feed(b"cd\r") == []
    assert p.feed(b"\n\r\ndata: 2\n") == [SSEEvent("abcd")]
    assert p.feed(b"\n") == [SSEEvent("2")]


def test_lines_and_events_over_the_limit_raise():
    from kward.providers.sse import MAX_LINE_BYTES, SSEError

    assert MAX_LINE_BYTES == 16 * 1024 * 1024
    p = SSEParser(max_line=100)
    p.feed(b"data: " + b"y" * 90)
    with pytest.raises(SSEError, match="line longer than 100 bytes"):
        p.feed(b"y" * 20)
    p = SSEParser(max_line=100)
    with pytest.raises(SSEError, match="event longer than 100 bytes"):
        for _ in range(10):
            p.feed(b"data: " + b"z" * 20 + b"\n")
    assert SSEParser(max_line=100).feed(b"data: " + b"z" * 80 + b"\n\n") == [SSEEvent("z" * 80)]
