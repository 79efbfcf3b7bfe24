"""kward.tools.live.LiveOutput with an injected clock: the rate (a token budget of
INTERVAL per update), whole lines and the partial-line hold, incremental UTF-8, the order
of streams, the `content` tail, the byte budget with `omittedBytes` on the last update,
scrubbing, and the select wait `run_command` gets from it (`due_in`)."""

from __future__ import annotations

import pytest

from kward.tools import live
from kward.tools.live import (
    BUDGET_BYTES,
    CONTENT_BYTES,
    HOLD_CHARS,
    HOLD_SECONDS,
    INTERVAL,
    LiveOutput,
    Update,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return Clock()


def coalescer(clock, scrub=None):
    updates: list[Update] = []
    return LiveOutput(updates.append, clock=clock, scrub=scrub), updates


def joined(updates, stream="stdout"):
    return "".join(u.delta for u in updates if u.stream == stream)


def test_the_first_line_goes_at_once_then_at_most_one_update_per_interval(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"one\n")
    assert updates == [Update("stdout", "one\n", "one\n")]
    out.feed("stdout", b"two\n")
    out.feed("stdout", b"three\n")
    assert len(updates) == 1 and out.due_in() == pytest.approx(INTERVAL)
    clock.advance(INTERVAL / 2)
    assert out.poll() == pytest.approx(INTERVAL / 2)  # what run_command's select waits at most
    assert len(updates) == 1 and out.due_in() == pytest.approx(INTERVAL / 2)
    clock.advance(INTERVAL / 2)
    out.poll()
    assert updates[1] == Update("stdout", "two\nthree\n", "one\ntwo\nthree\n")
    assert out.due_in() is None  # nothing pending: no wake-up needed
    out.close()
    assert len(updates) == 2  # nothing left, nothing omitted: close adds no update


def test_a_chatty_writer_gets_about_twenty_updates_a_second(clock):
    out, updates = coalescer(clock)
    for i in range(10_000):  # a line every millisecond for 10 s
        out.feed("stdout", b"%d\n" % i)
        clock.advance(0.001)
    out.close()
    assert 10 / INTERVAL - 2 <= len(updates) <= 10 / INTERVAL + 2
    assert joined(updates) == "".join(f"{i}\n" for i in range(10_000))


def test_both_streams_in_one_flush_go_back_to_back_and_the_next_waits_longer(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"o1\n")
    out.feed("stderr", b"e1\n")  # held: the budget is spent
    out.feed("stdout", b"o2\n")
    clock.advance(INTERVAL)
    out.poll()
    assert [(u.stream, u.delta) for u in updates] == [("stdout", "o1\n"), ("stderr", "e1\n"), ("stdout", "o2\n")]
    out.feed("stdout", b"o3\n")
    clock.advance(INTERVAL)
    out.poll()
    assert len(updates) == 3 and out.due_in() == pytest.approx(INTERVAL)  # two updates cost two intervals
    clock.advance(INTERVAL)
    out.poll()
    assert updates[-1].delta == "o3\n"
    assert updates[-1].content == "o1\ne1\no2\no3\n"  # both streams, in the order sent


def test_within_a_flush_the_stream_whose_text_came_first_goes_first(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"x\n")
    out.feed("stderr", b"first\n")
    out.feed("stdout", b"second\n")
    clock.advance(INTERVAL)
    out.poll()
    assert [u.stream for u in updates[1:]] == ["stderr", "stdout"]


def test_a_partial_line_waits_for_its_newline(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"hello wor")
    assert updates == [] and out.due_in() == pytest.approx(HOLD_SECONDS)
    clock.advance(0.1)
    out.feed("stdout", b"ld\nnext: ")
    assert [u.delta for u in updates] == ["hello world\n"]  # the line, not the new partial
    clock.advance(INTERVAL)
    out.poll()
    assert len(updates) == 1 and out.due_in() == pytest.approx(HOLD_SECONDS - INTERVAL)
    clock.advance(HOLD_SECONDS)
    out.poll()
    assert updates[-1].delta == "next: "


def test_a_partial_line_older_than_the_hold_still_shows(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"progress 10%")
    clock.advance(HOLD_SECONDS)
    out.poll()
    assert [u.delta for u in updates] == ["progress 10%"]
    out.feed("stdout", b"\rprogress 20%")
    clock.advance(HOLD_SECONDS)
    out.poll()
    assert [u.delta for u in updates] == ["progress 10%", "\rprogress 20%"]


def test_a_long_partial_line_goes_without_waiting_but_keeps_a_token_run_whole(clock):
    out, updates = coalescer(clock)
    line = "word " * (HOLD_CHARS // 5 + 1) + "sk-abc123"
    out.feed("stdout", line.encode())
    assert updates[0].delta == line[:-len("sk-abc123")]  # cut before the token run
    out.feed("stdout", b"def456 and more\n")
    clock.advance(INTERVAL)
    out.poll()
    assert updates[1].delta == "sk-abc123def456 and more\n"  # the token arrives whole
    assert joined(updates) == line + "def456 and more\n"


def test_utf8_split_across_chunks_is_whole_and_invalid_bytes_are_replaced(clock):
    out, updates = coalescer(clock)
    snowman = "☃".encode()
    out.feed("stdout", b"a" + snowman[:1])
    out.feed("stdout", snowman[1:2])
    out.feed("stdout", snowman[2:] + b"\n\xff\n")
    assert joined(updates) == "a☃\n\ufffd\n"
    out.feed("stderr", "é".encode()[:1])  # cut off by the end of the output
    out.close()
    assert joined(updates, "stderr") == "\ufffd"


def test_close_sends_what_is_held_back_whatever_the_rate(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"1\n")
    out.feed("stdout", b"2\npartial")
    out.feed("stderr", b"err")
    out.close()
    assert [(u.stream, u.delta) for u in updates] == [("stdout", "1\n"), ("stdout", "2\npartial"), ("stderr", "err")]
    assert all(u.omitted_bytes == 0 for u in updates)
    out.feed("stdout", b"late\n")
    out.poll()
    out.close()
    assert len(updates) == 3  # nothing after close


def test_content_is_the_tail_from_a_line_start(clock):
    out, updates = coalescer(clock)
    lines = [f"line {i:05d} " + "x" * 50 + "\n" for i in range(200)]
    out.feed("stdout", "".join(lines).encode())
    content = updates[-1].content
    assert len(content.encode()) <= CONTENT_BYTES
    assert "".join(lines).endswith(content) and content.startswith("line ")
    assert len(content) > CONTENT_BYTES - 2 * len(lines[0])


def test_content_of_multibyte_text_is_at_most_the_tail_bytes(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", ("☃" * 3000).encode())
    out.close()
    content = updates[-1].content
    assert len(content.encode()) <= CONTENT_BYTES and set(content) == {"☃"}


def test_the_budget_cuts_the_output_and_the_last_update_counts_the_rest(clock):
    out, updates = coalescer(clock)
    line = b"y" * 99 + b"\n"
    total = 0
    for _ in range(30):  # 3 MB in 100 kB chunks, 0.1 s apart
        for _ in range(1000):
            out.feed("stdout", line)
            total += len(line)
        clock.advance(0.1)
        out.poll()
    out.feed("stderr", b"after the cut\n")
    out.close()
    sent = sum(len(u.delta.encode()) + len(u.content.encode()) for u in updates)
    assert sent <= BUDGET_BYTES
    assert [u.omitted_bytes > 0 for u in updates].count(True) == 1 and updates[-1].omitted_bytes > 0
    stdout = joined(updates)
    assert stdout.endswith("\n") and set(stdout) == {"y", "\n"}  # cut at a line end
    assert len(stdout.encode()) + updates[-1].omitted_bytes == total + len(b"after the cut\n")
    assert joined(updates, "stderr") == ""
    assert updates[-1].delta == "" and updates[-1].content.endswith("y\n")


def test_one_huge_chunk_is_not_kept_whole(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"z" * (5 * BUDGET_BYTES))  # one partial line, far over the budget
    out.close()
    assert len(joined(updates)) + updates[-1].omitted_bytes == 5 * BUDGET_BYTES
    assert sum(len(u.delta) + len(u.content) for u in updates) <= BUDGET_BYTES
    assert sum(len(c) for s in out._streams.values() for c in s.chunks) == 0


def test_scrub_applies_to_delta_and_content(clock):
    out, updates = coalescer(clock, scrub=lambda t: t.replace("hunter2secret", "[REDACTED]"))
    out.feed("stdout", b"pw=hunter2")
    clock.advance(0.1)
    out.feed("stdout", b"secret ok\n")
    out.close()
    assert [u.delta for u in updates] == ["pw=[REDACTED] ok\n"]
    assert "hunter2" not in updates[0].content


def test_a_call_without_output_sends_nothing(clock):
    out, updates = coalescer(clock)
    assert out.due_in() is None
    out.close()
    assert updates == []


def test_feed_after_the_budget_only_counts(clock, monkeypatch):
    monkeypatch.setattr(live, "BUDGET_BYTES", 2 * CONTENT_BYTES + 200)  # room for one small update
    out, updates = coalescer(clock)
    out.feed("stdout", b"0123456789abcdef\n" * 10)
    clock.advance(1)
    out.feed("stdout", b"more\n")
    clock.advance(1)
    out.poll()
    out.close()
    assert joined(updates) == "0123456789abcdef\n" * 10
    assert updates[-1] == Update("stdout", "", updates[-1].content, len(b"more\n"))


# --- credentials are never cut: the `content` window and the token-run hold ------------

from kward.redact import REDACTED, masks  # noqa: E402
from kward.tools.live import TOKEN_RUN  # noqa: E402

KNOWN = "kwknownsecret0123456789abcdefghijklmn"  # 37 token characters


def jwt(size):
    """A JWT-shaped token of about `size` characters (what `scrub_output` masks)."""
    body = ("abcdefghijklmnopqrstuvwxyz0123456789_-" * (size // 38 + 1))[:size - 20]
    return f"eyJhbGciOiJIUzI1NiJ9.{body}.c2lnbmF0dXJl"


def scrub(text):
    """Like `KnownSecrets.scrub_output`: the known value and JWT-shaped tokens."""
    return masks().jwt.sub(REDACTED, text.replace(KNOWN, REDACTED))


def fragments(secret, size=8):
    return {secret[i:i + size] for i in range(len(secret) - size + 1)}


def leaks(updates, secret):
    """The updates whose delta or content holds a piece (8 characters or more) of `secret`."""
    pieces = fragments(secret)
    return [u for u in updates if any(p in u.delta or p in u.content for p in pieces)]


@pytest.mark.parametrize("start", [1, 10, 36])
def test_the_content_window_never_starts_inside_a_credential(clock, start):
    # one line whose last CONTENT_BYTES begin `start` characters into the credential
    line = KNOWN + " " + "y" * (CONTENT_BYTES - len(KNOWN) - 2 + start) + "\n"
    out, updates = coalescer(clock, scrub=scrub)
    out.feed("stdout", line.encode())
    out.close()
    assert not leaks(updates, KNOWN)
    content = updates[-1].content
    assert scrub(line).endswith(content) and len(content.encode()) <= CONTENT_BYTES


def test_the_kept_tail_never_starts_inside_a_credential(clock):
    # three JWTs on one line: the tail kept for `content` begins inside the first, and once
    # the whole JWTs in it are masked the window reaches back to that start
    tokens = [jwt(1500) for _ in range(3)]
    out, updates = coalescer(clock, scrub=scrub)
    out.feed("stdout", (" ".join(tokens) + "\n").encode())
    out.close()
    assert not leaks(updates, tokens[0])
    assert updates[-1].content.endswith(f"{REDACTED} {REDACTED}\n")


def test_the_content_window_moving_over_a_credential_line_by_line(clock):
    out, updates = coalescer(clock, scrub=scrub)
    for i in range(300):
        text = f"{i:04d} {KNOWN if i % 7 == 0 else 'plain text here'} {'z' * (i % 13)}"
        out.feed("stdout", text.encode())  # partial, then its newline in the next chunk
        clock.advance(INTERVAL / 3)
        out.feed("stdout", b"\n")
        clock.advance(INTERVAL / 3)
    out.close()
    assert len(updates) > 50 and not leaks(updates, KNOWN)


def test_a_jwt_cut_by_the_long_line_rule_arrives_whole(clock):
    token = jwt(1800)
    assert len(token) < TOKEN_RUN
    out, updates = coalescer(clock, scrub=scrub)
    out.feed("stdout", ("word " * (HOLD_CHARS // 5 + 1) + token[:1200]).encode())
    assert updates and updates[0].delta.endswith("word ")  # the run is held back
    out.feed("stdout", (token[1200:] + " end\n").encode())
    clock.advance(INTERVAL)
    out.poll()
    out.close()
    assert not leaks(updates, token)
    assert joined(updates).endswith(f"word {REDACTED} end\n")


def test_the_age_rule_never_flushes_a_token_run_it_would_cut(clock):
    token = jwt(900)
    out, updates = coalescer(clock, scrub=scrub)
    out.feed("stdout", ("Authorization: " + token[:400]).encode())
    clock.advance(HOLD_SECONDS)
    out.poll()
    assert [u.delta for u in updates] == ["Authorization: "]  # the old part shows, the run waits
    assert out.due_in() is None  # nothing can go before more text comes: no busy wake-up
    clock.advance(10)
    out.poll()
    assert len(updates) == 1
    out.feed("stdout", (token[400:] + " ok").encode())  # the run ended
    clock.advance(HOLD_SECONDS)
    out.poll()
    out.close()
    assert not leaks(updates, token)
    assert joined(updates) == f"Authorization: {REDACTED} ok"


def test_a_token_run_over_the_cap_is_cut(clock):
    out, updates = coalescer(clock)
    out.feed("stdout", b"x" * (TOKEN_RUN + 10))  # no newline, no end to the run
    assert joined(updates) == "x" * (TOKEN_RUN + 10)  # sent: over the cap nothing is held
    out.feed("stdout", b"y" * 100)
    clock.advance(HOLD_SECONDS)
    out.poll()
    assert out.due_in() is None  # the new run is held: it is short
    out.close()
    assert joined(updates) == "x" * (TOKEN_RUN + 10) + "y" * 100


def test_the_budget_cut_never_leaves_a_piece_of_a_credential(clock, monkeypatch):
    monkeypatch.setattr(live, "BUDGET_BYTES", 3 * CONTENT_BYTES + 100)
    token = jwt(1500)
    out, updates = coalescer(clock, scrub=scrub)
    out.feed("stdout", ("a" * 1000 + " " + token + " " + "b" * 1200 + "\n").encode())  # cut inside the token
    out.close()
    assert not leaks(updates, token) and updates[-1].omitted_bytes > 0
