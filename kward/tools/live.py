"""Live output of a running tool call: `LiveOutput` turns the chunks a command writes into
`Update`s (the payload of ``toolUpdate`` turn events), coalesced and bounded.

Rules (docs/protocol.md "Live tool output"):

- Rate: every update costs `INTERVAL` seconds of a token budget, and a flush happens only
  once the budget is back (`due_in`), so a call yields at most ~20 updates a second. A
  flush sends one update per stream with news; when both have some, the two go back to
  back and the next flush waits twice as long.
- Text: each stream is decoded incrementally as UTF-8 (a character split between chunks is
  whole in one update; invalid bytes become U+FFFD). A `delta` holds whole lines: the
  partial line at the end is held back until its newline comes, unless it is older than
  `HOLD_SECONDS` or longer than `HOLD_CHARS` (so a progress bar still shows).
- Credentials are never cut: what a flush sends of a partial line (by age or by length)
  stops before a trailing run of token characters (`TOKEN_CHARS`, the characters of keys,
  JWTs and OAuth tokens) of up to `TOKEN_RUN`, which waits for the character that ends it
  (or the call's end), so that a credential reaches `scrub` whole. A run longer than
  `TOKEN_RUN` is not held: it is cut where the flush falls. The budget's cut (below) stops
  before such a run too, and so does the text kept for `content`.
- Order: a stream's text goes out in order; within one flush the stream whose pending text
  came first goes first.
- `content`: the tail of the text of every delta sent so far, both streams in the order
  sent (what a client appending the deltas shows), at most `CONTENT_BYTES` of UTF-8 and
  starting at a line start when a newline allows it; for clients that redraw the body.
  The text kept for it starts after any token run its start would cut into, and is
  scrubbed whole before its tail is taken, so the window never begins inside a credential.
- Budget: the UTF-8 bytes of `delta` and `content` of all updates of a call are at most
  `BUDGET_BYTES`. Once a delta had to be cut, nothing more is sent; the bytes left out are
  counted (as UTF-8 of the decoded text up to the cut, so an invalid byte there counts as
  U+FFFD's three; as read after it), and the last update (`close()`: an update with an empty delta when nothing is
  pending) carries that count as `omitted_bytes`. So per stream, the deltas joined are the
  output, or its beginning when `omitted_bytes` > 0.
- `scrub` (kward's known credential values out: `KnownSecrets.scrub_output`) is applied
  to every delta and content before it is sent.

Thread contract: `feed`, `feed_text`, `progress`, `poll`, `due_in` and `close` may be called from any
thread; `_lock` serialises them and `publish` is called under it (so updates keep their
order), on the thread that fed (unless it passed ``flush=False``), polled or closed.
`run_command` calls them on the turn's worker thread. A plugin command's `progress` feeds
with ``flush=False`` on the plugin's thread, and the turn's thread, waiting for the
plugin, polls (`kward.resources.bounded.run_bounded`): so only the turn's thread publishes,
and the plugin's thread never waits for the client (only for `_lock`, while a publish that
waits, bounded by the command's timeout and cancel: `kward.pacing`, holds it). An MCP
tool's progress comes the same way: from the MCP client's reader thread with
``flush=False``, polled by the turn's thread (`kward.tools.mcptools`).
After `close()` every call is a no-op. The clock is injectable (tests).
"""

from __future__ import annotations

import codecs
import itertools
import string
import threading
import time
from typing import Callable, NamedTuple

INTERVAL = 0.05  # seconds of the rate budget one update costs (~20 a second)
HOLD_SECONDS = 0.25  # a partial line is held back at most this long
HOLD_CHARS = 4096  # ... and up to this length
CONTENT_BYTES = 2048  # the tail `content` holds
BUDGET_BYTES = 1024 * 1024  # delta + content of all updates of one call
TOKEN_RUN = 8192  # a trailing token run up to this long is held back (a JWT is 1-2k); longer ones are cut
TOKEN_CHARS = string.ascii_letters + string.digits + "._~+/=-_"  # what keys, JWTs and OAuth tokens are made of
PROGRESS_CHARS = 1000  # of a progress report's message
STREAMS = ("stdout", "stderr")
_TAIL_CHARS = 2 * CONTENT_BYTES  # characters of sent text kept for `content` (> CONTENT_BYTES)
_TOKEN_SET = frozenset(TOKEN_CHARS)


class Update(NamedTuple):
    """One live update: `delta` is the stream's text since its previous update, `content`
    the tail of everything sent so far, `omitted_bytes` > 0 only on the last update."""

    stream: str
    delta: str
    content: str
    omitted_bytes: int = 0
    progress: float | None = None  # a progress report's figures (`LiveOutput.progress`)
    total: float | None = None


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _prefix(text: str, limit: int) -> str:
    """The longest prefix of `text` of at most `limit` UTF-8 bytes."""
    if limit <= 0:
        return ""
    if len(text) * 4 <= limit:
        return text
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


class _Stream:
    """The pending (decoded, not yet sent) text of one stream."""

    __slots__ = ("name", "decoder", "chunks", "bytes", "has_line", "partial_len", "partial_since", "order",
                 "overflowed", "run")

    def __init__(self, name: str):
        self.name = name
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.chunks: list[str] = []
        self.bytes = 0  # UTF-8 bytes pending
        self.has_line = False  # a newline is pending
        self.partial_len = 0  # characters after the last pending newline
        self.partial_since = 0.0  # when the first of those arrived
        self.order = 0  # when the pending text began (a counter, for the order within a flush)
        self.overflowed = False  # text after the pending was left out: send nothing more of it
        self.run = 0  # token characters the pending text ends with (counted up to TOKEN_RUN + 1)

    def add(self, text: str, size: int, now: float, order: int) -> None:
        if not self.chunks:
            self.order = order
        self.chunks.append(text)
        self.bytes += size
        run = _trailing_run(text)
        self.run = min(self.run + run, TOKEN_RUN + 1) if run == len(text) else run
        newline = text.rfind("\n")
        if newline >= 0:
            self.has_line = True
            self.partial_len = len(text) - newline - 1
            self.partial_since = now
        else:
            if self.partial_len == 0:
                self.partial_since = now
            self.partial_len += len(text)

    def held(self) -> int:
        """The characters at the end a flush keeps back: a token run up to TOKEN_RUN."""
        return self.run if self.run <= TOKEN_RUN else 0

    def ready_at(self) -> float:
        """When some of the pending text may go (by the line rule; pending text assumed):
        never (inf) while all there is is a held token run, which waits for more text."""
        if self.has_line:
            return float("-inf")
        if self.partial_len <= self.held():
            return float("inf")
        if self.partial_len > HOLD_CHARS:
            return float("-inf")
        return self.partial_since + HOLD_SECONDS

    def take(self, now: float, everything: bool) -> str:
        """Remove and return the text the line rule lets go now (all of it: `everything`)."""
        text = "".join(self.chunks)
        cut = len(text)
        if not everything and self.partial_len:
            if self.partial_len > HOLD_CHARS or self.partial_since + HOLD_SECONDS <= now:
                cut -= self.held()
            else:
                cut = text.rfind("\n") + 1
        sent, rest = text[:cut], text[cut:]
        self._keep(rest)
        if rest and len(rest) != self.partial_len:
            self.partial_since = now  # the kept-back token run of a cut line starts again
        self.partial_len = len(rest)
        return sent

    def drop_run(self) -> str:
        """Remove and return the held token run at the end (the budget cut into it)."""
        n = self.held()
        if not n:
            return ""
        text = "".join(self.chunks)
        self._keep(text[:-n])
        self.partial_len -= n
        self.run = 0
        return text[-n:]

    def _keep(self, rest: str) -> None:
        self.chunks = [rest] if rest else []
        self.bytes = _size(rest) if rest else 0
        self.has_line = "\n" in rest
        if not rest:
            self.run = 0


class LiveOutput:
    """See the module docstring. `publish(update)` receives every update."""

    def __init__(self, publish: Callable[[Update], None], *, scrub: Callable[[str], str] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._publish = publish
        self._scrub = scrub
        self._clock = clock
        self._lock = threading.Lock()
        self._streams = {name: _Stream(name) for name in STREAMS}
        self._arrivals = itertools.count(1)
        self._next_flush = float("-inf")  # the rate budget is back at this time
        self._spent = 0  # bytes of delta and content sent
        self._omitted = 0  # bytes of text left out
        self._exhausted = False  # a delta was cut: nothing more is sent
        self._tail = ""  # the last `_TAIL_CHARS` characters of the deltas sent
        self._tail_whole = True  # `_tail` holds everything sent
        self._last_stream = STREAMS[0]
        self._closed = False
        self._progress: Update | None = None  # a progress report waiting for the rate budget
        self.updates = 0  # updates published

    # --- input ------------------------------------------------------------------------------

    def feed(self, stream: str, data: bytes, *, flush: bool = True) -> None:
        """Output `data` of `stream` (``stdout``/``stderr``); publishes when a flush is due,
        unless `flush` is False (then only `poll` or `close` publish it)."""
        with self._lock:
            if self._closed or not data:
                return
            s = self._streams[stream]
            if self._exhausted or s.overflowed:  # nothing more of it is sent: only counted
                self._omitted += len(data)
            else:
                self._add(s, s.decoder.decode(data), self._clock())
            if flush:
                self._poll()

    def feed_text(self, stream: str, text: str, *, flush: bool = True) -> None:
        """`text` as output of `stream` (lone surrogates become ``?``)."""
        self.feed(stream, text.encode("utf-8", "replace"), flush=flush)

    def _add(self, s: _Stream, text: str, now: float) -> None:
        if not text:
            return
        size = _size(text)
        if self._exhausted or s.overflowed:
            self._omitted += size
            return
        room = BUDGET_BYTES - self._spent - s.bytes  # more than this can never be sent
        if size > room:
            kept = _prefix(text, room)
            self._omitted += size - _size(kept)
            s.overflowed = True
            if kept:
                s.add(kept, _size(kept), now, next(self._arrivals))
            if text[len(kept)] in _TOKEN_SET:  # the cut fell inside a token run: none of it goes
                self._omitted += _size(s.drop_run())
            return
        s.add(text, size, now, next(self._arrivals))

    def progress(self, message: str | None, progress: float | None, total: float | None, *,
                 flush: bool = True) -> None:
        """A progress report of the call (an MCP server's ``notifications/progress``): one
        update whose `delta` and `content` are `message` (scrubbed, at most
        `PROGRESS_CHARS`; empty when there is none) with the figures. Sent at once when the
        rate budget allows, else kept (a later report replaces it) and sent by the next
        report, `poll` or `close` (only those when `flush` is False); counted against the
        byte budget like text."""
        with self._lock:
            if self._closed:
                return
            # scrubbed before it is cut (a credential is seen whole), cut before (bounded work)
            text = self._scrubbed((message or "")[:PROGRESS_CHARS + TOKEN_RUN])[:PROGRESS_CHARS]
            size = 2 * _size(text)
            if self._exhausted or self._spent + size > BUDGET_BYTES - CONTENT_BYTES:
                self._omitted += size // 2
                return
            self._progress = Update(self._last_stream, text, text, 0, progress, total)
            if flush and self._clock() >= self._next_flush:
                self._send_progress()

    def _send_progress(self) -> None:
        update, self._progress = self._progress, None
        if update is None:
            return
        self._spent += 2 * _size(update.delta)
        self._next_flush = max(self._next_flush, self._clock()) + INTERVAL
        self.updates += 1
        self._publish(update)

    # --- flushing -----------------------------------------------------------------------

    def due_in(self) -> float | None:
        """Seconds until the next flush is due (0: now), None while nothing is pending."""
        with self._lock:
            due = self._due()
            return None if due is None else max(0.0, due - self._clock())

    def poll(self) -> float | None:
        """Publish what is due; then `due_in()` (what `run_command` bounds its wait by)."""
        with self._lock:
            if self._closed:
                return None
            if self._progress is not None and self._clock() >= self._next_flush:
                self._send_progress()
            self._poll()
            due = self._due()
            return None if due is None else max(0.0, due - self._clock())

    def _due(self) -> float | None:
        if self._closed:
            return None
        ready = None
        for s in self._streams.values():
            if s.chunks:
                at = s.ready_at()
                ready = at if ready is None else min(ready, at)
        if self._progress is not None:
            ready = self._next_flush if ready is None else min(ready, self._next_flush)
        if ready is None or ready == float("inf"):  # nothing, or only held token runs
            return None
        return max(ready, self._next_flush)

    def _poll(self) -> None:
        due = self._due()
        if due is None:
            return
        now = self._clock()
        if due > now:
            return
        pending = sorted((s for s in self._streams.values() if s.chunks), key=lambda s: s.order)
        texts = [(s, s.take(now, everything=False)) for s in pending]
        sent = sum(self._send(s, text, final=False) for s, text in texts if text)
        self._next_flush = max(self._next_flush, now) + sent * INTERVAL

    def close(self) -> None:
        """Publish everything still pending (whatever the rate), the last update with
        `omitted_bytes` when some text was left out (an empty delta when nothing is
        pending); then stop. Called right before the call's result is reported."""
        with self._lock:
            if self._closed:
                return
            self._send_progress()
            now = self._clock()
            for s in self._streams.values():
                self._add(s, s.decoder.decode(b"", final=True), now)
            pending = sorted((s for s in self._streams.values() if s.chunks), key=lambda s: s.order)
            texts = [(s, s.take(now, everything=True)) for s in pending]
            for i, (s, text) in enumerate(texts):
                self._send(s, text, final=i == len(texts) - 1)
            if not texts and self._omitted:  # nothing pending carries the count
                self._send(self._streams[self._last_stream], "", final=True)
            self._closed = True

    def _send(self, s: _Stream, text: str, *, final: bool) -> bool:
        """Publish `text` of `s` as one update, cut to the budget (keeping room for the
        last update's content unless this is it); True when an update was published.
        `final`: this is the call's last update (it is published even with nothing to say)."""
        if self._exhausted:
            self._omitted += _size(text)
            text = ""
        limit = BUDGET_BYTES - self._spent - CONTENT_BYTES - (0 if final else CONTENT_BYTES)
        delta = self._scrubbed(text)
        size = _size(delta)
        if size > limit:
            raw = _cut(text, limit)
            self._omitted += _size(text) - _size(raw)
            self._exhausted = True
            text = raw
            delta = _prefix(self._scrubbed(raw), limit)
            size = _size(delta)
        elif s.overflowed:  # what followed this text was left out
            self._exhausted = True
        if not delta and not final:
            return False
        self._remember(text)
        content = self._content()
        if _size(content) > BUDGET_BYTES - self._spent - size:
            content = ""
        self._spent += size + _size(content)
        self._last_stream = s.name
        self.updates += 1
        self._publish(Update(s.name, delta, content, self._omitted if final else 0))
        return True

    def _scrubbed(self, text: str) -> str:
        return self._scrub(text) if self._scrub is not None and text else text

    def _remember(self, text: str) -> None:
        """Keep the last `_TAIL_CHARS` of the sent text, starting after any token run its
        start would cut into (no piece of a credential is kept)."""
        tail = self._tail + text
        if len(tail) > _TAIL_CHARS:
            start = len(tail) - _TAIL_CHARS
            if tail[start - 1] in _TOKEN_SET:
                rest = tail[start:]
                start += len(rest) - len(rest.lstrip(TOKEN_CHARS))
            tail = tail[start:]
            self._tail_whole = False
        self._tail = tail

    def _content(self) -> str:
        """The tail of what was sent, scrubbed whole, then at most CONTENT_BYTES of it, from
        a line start if it can (so its start never falls inside a credential: `scrub` saw
        each one whole)."""
        tail = self._scrubbed(self._tail)
        window = _suffix(tail, CONTENT_BYTES)
        if len(window) < len(tail) or not self._tail_whole:
            before = tail[len(tail) - len(window) - 1] if len(window) < len(tail) else ""
            newline = window.find("\n")
            if before != "\n" and 0 <= newline < len(window) - 1:
                window = window[newline + 1:]
        return window


def _suffix(text: str, limit: int) -> str:
    """The longest suffix of `text` of at most `limit` UTF-8 bytes."""
    if len(text) * 4 <= limit:
        return text
    return text.encode("utf-8", "surrogatepass")[-limit:].decode("utf-8", "ignore")


def _trailing_run(text: str) -> int:
    """How many token characters `text` ends with, counted up to TOKEN_RUN + 1 (so a
    longer run costs no more to look at)."""
    piece = text[-(TOKEN_RUN + 1):]
    return len(piece) - len(piece.rstrip(TOKEN_CHARS))


def _cut(text: str, limit: int) -> str:
    """The beginning of `text` that fits in `limit` bytes: up to its last newline when there
    is one, else before a trailing token run of up to TOKEN_RUN (so no credential is cut in two)."""
    part = _prefix(text, limit)
    if len(part) == len(text):
        return part
    newline = part.rfind("\n")
    if newline >= 0:
        return part[:newline + 1]
    run = _trailing_run(part)
    return part[:len(part) - run] if run <= TOKEN_RUN else part
