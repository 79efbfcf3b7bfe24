"""The bounded line scanner (`kward.sessions.lines`) and the reader rules built on it."""

from __future__ import annotations

import io
import json
import logging
import random

import pytest

from kward.errors import InvalidParams
from kward.sessions.lines import HEADER_MAX, LineScanner, too_deep
from kward.sessions.opening import load_session
from kward.sessions.reader import parse_header
from lib.session_records import header, message_record, recorded, typed, user, write_lines


def naive(data: bytes, max_line: int) -> tuple[list[tuple[bytes, int]], bytes, int]:
    """(non-blank complete lines not over `max_line` with offsets, tail, complete lines)."""
    out, offset = [], 0
    *complete, tail = data.split(b"\n")
    for segment in complete:
        if segment.strip() and len(segment) <= max_line:
            out.append((segment, offset))
        offset += len(segment) + 1
    return out, tail, len(complete)


def scan(data: bytes, **kw) -> tuple[LineScanner, list[tuple[bytes, int]]]:
    scanner = LineScanner(io.BytesIO(data).read, 0, **kw)
    return scanner, list(scanner)


@pytest.mark.slow
def test_the_scanner_agrees_with_a_plain_split_whatever_the_chunking():
    rng = random.Random(9)
    pieces = [b"\n", b"\n" * 300, b"  ", b"\t", b"\r\n", b" \r\n ", b"{}", b"abc", b"x" * 70, b"{\"a\": 1}"]
    for _ in range(1500):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(40)))
        max_line, chunk = rng.choice([5, 50, 1 << 20]), rng.choice([1, 3, 7, 64, 4096])
        scanner, got = scan(data, max_line=max_line, chunk=chunk)
        want, tail, lines = naive(data, max_line)
        assert got == want, (data, max_line, chunk)
        assert scanner.lines == lines
        if len(tail) > max_line:
            assert scanner.skipping and scanner.consumed == len(data) and scanner.tail == b""
        else:
            assert not scanner.skipping and scanner.tail == tail and scanner.consumed == len(data) - len(tail)


def test_blank_runs_are_counted_not_stepped_through():
    scanner, got = scan(b"\n" * 5_000_000 + b"{}\n" + b" \r\n" * 1000 + b"\n", chunk=1 << 16)
    assert got == [(b"{}", 5_000_000)] and scanner.blank == 5_001_001 and scanner.lines == 5_001_002


def test_an_over_long_line_is_dropped_as_it_streams_past():
    reads = []
    data = b"{}\n" + b"y" * 10_000 + b"\n{\"b\":2}\n" + b"z" * 500

    def read(n):
        reads.append(n)
        return stream.read(n)

    stream = io.BytesIO(data)
    scanner = LineScanner(read, 0, max_line=1000, chunk=256)
    assert list(scanner) == [(b"{}", 0), (b'{"b":2}', 10_004)]
    assert scanner.oversized == 1 and scanner.tail == b"z" * 500 and not scanner.skipping
    # a scan that starts inside an over-long line (left by an earlier scan) skips to its end
    rest = LineScanner(io.BytesIO(b"zzz\n{}\n").read, 50, skipping=True)
    assert list(rest) == [(b"{}", 54)] and rest.consumed == 57 and not rest.skipping


def test_too_deep_walks_only_suspicious_records():
    assert not too_deep({"a": [1, [2]]}, b'{"a": [1, [2]]}')
    nested: list = []
    value = nested
    for _ in range(250):
        value.append([])
        value = value[0]
    raw = json.dumps(nested).encode()
    assert too_deep(nested, raw) and not too_deep(nested, raw, max_depth=300)
    assert not too_deep({"text": "[" * 500}, b'{"text": "' + b"[" * 500 + b'"}')  # brackets in a string


def test_the_header_must_end_within_64_kib(tmp_path):
    good = json.dumps(header()).encode()
    assert parse_header(good + b"\n" + b"x" * HEADER_MAX, "p")[1] == len(good) + 1
    assert parse_header(good, "p")[1] == len(good)  # the whole file: a header without its newline
    padded = json.dumps(header(cwd="/" + "d" * HEADER_MAX)).encode()  # a valid header, but too long
    with pytest.raises(InvalidParams, match="no line break in its first 64 KiB"):
        parse_header((padded + b"\n")[:HEADER_MAX], "p")
    with pytest.raises(InvalidParams, match="no session header"):
        parse_header(b"\n" + good + b"\n", "p")


def test_deep_and_oversized_records_are_skipped_and_reported(tmp_path, caplog, monkeypatch):
    import kward.sessions.lines as lines_module

    monkeypatch.setattr(lines_module, "MAX_LINE", 4096)
    deep = "[" * 300 + "]" * 300
    path = write_lines(tmp_path / "s.jsonl", [
        header(),
        message_record(user("one")),
        f'{{"type":"message","timestamp":"t","message":{{"role":"user","content":{deep}}}}}',
        message_record(user("x" * 5000)),
        "", "", "",
        message_record(user("two")),
    ])
    with caplog.at_level(logging.WARNING, logger="kward.sessions"):
        session = load_session(str(path), str(tmp_path))
    assert [m["content"] for m in recorded(session.conversation)] == ["one", "two"]
    [warning] = [r.getMessage() for r in caplog.records if r.name == "kward.sessions.reader"]
    assert "1 malformed" in warning and "1 longer than the line limit" in warning and "3 blank" in warning
    session.close(delete_if_unused=False)


def test_records_appended_after_an_unterminated_huge_line_are_caught_up(tmp_path, monkeypatch):
    """Another process's append terminates the over-long last line; our live view skips
    it (never buffering it whole) and applies what follows."""
    import kward.sessions.lines as lines_module
    from kward.sessions.opening import load_session as load

    monkeypatch.setattr(lines_module, "MAX_LINE", 4096)
    path = write_lines(tmp_path / "s.jsonl", [header(), message_record(user("one"))])
    with open(path, "ab") as f:
        f.write(b"q" * 10_000)  # a writer crashed mid-line, or a hostile file
    mine = load(str(path), str(tmp_path))
    other = load(str(path), str(tmp_path))
    other.append_message(typed(user("two")))  # terminates the torn line first
    assert [m["content"] for m in recorded(other.conversation)] == ["one", "two"]
    mine.refresh()
    assert [m["content"] for m in recorded(mine.conversation)] == ["one", "two"]
    mine.append_message(typed(user("three")))
    other.refresh()
    assert [m["content"] for m in recorded(other.conversation)] == ["one", "two", "three"]
    for s in (mine, other):
        s.close(delete_if_unused=False)
