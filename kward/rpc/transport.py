"""The stdio transport: the bounded inbox, the byte-bounded outbox, the reader and the
writer threads.

    stdin -> [reader thread] -> Inbox -> dispatcher (RpcServer.serve)
    producers (any thread) -> Outbox -> [writer thread] -> stdout

Ownership: `Transport` owns both threads; `start()` launches them, `close_output()` asks
the writer to flush what is queued and stop, `join_writer(timeout)` waits for it. The reader
is a daemon thread: a blocking read of stdin cannot be interrupted, so at shutdown it is
joined only when it already reached end of input.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from queue import SimpleQueue
from typing import TYPE_CHECKING, BinaryIO, Callable

from kward.rpc.framing import FrameFault, FrameReader

if TYPE_CHECKING:  # pragma: no cover
    from kward.cancel import CancelToken

log = logging.getLogger(__name__)

BATCH_BYTES = 64 * 1024  # notifications written per writer batch
EOF = "eof"  # control items on the inbox
SIGNAL = "signal"
WRITER_FAILED = "writer_failed"
STOP_REFUSING = "stop_refusing"  # the stop tells its refuser thread to finish
#: What the inbox holds: a frame's body, a frame the reader refused, or a control item
#: (EOF, SIGNAL, WRITER_FAILED, STOP_REFUSING).
InboxItem = bytes | FrameFault | str


class Inbox:
    """Frames from the reader (bounded: the reader blocks when `limit` are waiting) plus
    control items from anywhere. `put_control` is safe inside a signal handler
    (SimpleQueue.put is reentrant). `get` is called by one thread at a time: the
    dispatcher while it serves, then the stop's refuser thread (the dispatcher reads no
    more once it started it). It waits with a timeout because a signal delivered to another
    thread does not wake a blocked main thread, so Python runs the handler only when the
    main thread next runs bytecode."""

    def __init__(self, limit: int = 1024):
        self._q: SimpleQueue[tuple[bool, InboxItem]] = SimpleQueue()
        self._slots = threading.Semaphore(limit)

    def put_frame(self, item: bytes | FrameFault) -> None:
        self._slots.acquire()
        self._q.put((True, item))

    def put_control(self, item: str) -> None:
        self._q.put((False, item))

    def get(self, block: bool = True, timeout: float | None = None) -> InboxItem:
        """Next item; raises Empty (queue.Empty) when nothing arrives (non-blocking or timeout)."""
        counted, item = self._q.get(block, timeout)
        if counted:
            self._slots.release()
        return item


class Outbox:
    """Two FIFOs of encoded frames (responses, notifications), bounded in bytes together.

    Responses (`urgent` puts) are written before queued notifications, so a quick request
    is answered promptly even behind a backlog of streaming events; within each lane the
    order is kept, so a turn's events stay in sequence. `put` blocks the producer while
    more than `limit` bytes wait (a client that stops reading slows the turns that stream to
    it instead of growing memory); urgent puts may use twice the limit. `overloaded` is
    true past the high-water mark: new turns are then refused. After `close()` nothing more
    is accepted and the writer drains what is queued; after `kill()` (stdout is gone)
    everything is dropped and blocked producers are released. Thread-safe.
    """

    def __init__(self, high_water: int = 4 << 20, limit: int = 16 << 20):
        self._cond = threading.Condition(threading.Lock())
        self._urgent: deque[bytes] = deque()
        self._items: deque[bytes] = deque()
        self._bytes = 0
        self._high = high_water
        self._limit = limit
        self._closed = False
        self._dead = False
        self._unpaced = False  # stopping: producers no longer wait for room
        self._writer_waiting = False

    @property
    def overloaded(self) -> bool:
        return self._bytes > self._high

    @property
    def pending_bytes(self) -> int:
        """Bytes queued and not yet written (an int read whole: no lock)."""
        return self._bytes

    def wait_for_room(self, until: float | None = None, cancel: CancelToken | None = None) -> bool:
        """Block while more than `limit` bytes wait (a producer's pacing point); True once
        there is room (or pacing ended). With `until` (a `time.monotonic()` time) or `cancel`
        (`kward.pacing`): False when that time passed or the token fired first. Any thread
        but the dispatcher, which must never wait for the client. A cancel's callback only
        takes `_cond` to wake the waiters."""
        with self._cond:
            if self._has_room():
                return True
        if cancel is not None and cancel.cancelled:
            return False
        forget = cancel.on_cancel(self._wake) if cancel is not None else None  # (outside `_cond`)
        try:
            with self._cond:
                while not self._has_room():
                    if cancel is not None and cancel.cancelled:
                        return False
                    if until is None:
                        self._cond.wait()
                        continue
                    left = until - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                return True
        finally:
            if forget is not None:
                forget()

    def _has_room(self) -> bool:
        """Under `_cond`: a paced producer may go on."""
        return self._bytes <= self._limit or self._closed or self._dead or self._unpaced

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def stop_pacing(self) -> None:
        """The server is stopping: let paced producers finish their turns at once (what they
        queue is flushed if the client still reads, or dropped at exit)."""
        with self._cond:
            self._unpaced = True
            self._cond.notify_all()

    def put(self, data: bytes, *, urgent: bool = False, wait: bool = True) -> bool:
        """Queue one frame; False when it was dropped (closed or writer gone). With
        `wait=False` it never blocks (the frame may go past the limit: callers that use it
        produce a bounded number of frames, e.g. one per request)."""
        limit = self._limit * 2 if urgent else self._limit
        with self._cond:
            while wait and self._bytes > limit and not (self._closed or self._dead or self._unpaced):
                self._cond.wait()
            if self._closed or self._dead:
                return False
            (self._urgent if urgent else self._items).append(data)
            self._bytes += len(data)
            if self._writer_waiting:
                self._cond.notify_all()
            return True

    def take(self) -> list[bytes] | None:
        """Writer only: the queued responses and up to BATCH_BYTES of notifications
        (waits for something), or None when finished."""
        with self._cond:
            while not self._urgent and not self._items and not self._closed and not self._dead:
                self._writer_waiting = True
                self._cond.wait()
            self._writer_waiting = False
            if self._dead or not (self._urgent or self._items):
                return None
            batch = list(self._urgent)
            size = sum(map(len, batch))
            self._urgent.clear()
            items = self._items
            while items and size < BATCH_BYTES:  # bounded, so a response never waits long
                data = items.popleft()
                batch.append(data)
                size += len(data)
            self._bytes -= size
            self._cond.notify_all()  # release producers blocked on the limit
            return batch

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def kill(self) -> None:
        with self._cond:
            self._dead = True
            self._urgent.clear()
            self._items.clear()
            self._bytes = 0
            self._cond.notify_all()


class Transport:
    """Owns the reader and writer threads over a binary input and a raw binary output."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, *, max_frame_bytes: int,
                 on_writer_failed: Callable[[], None]):
        self.inbox = Inbox()
        self.outbox = Outbox()
        self._frames = FrameReader(stdin, max_frame_bytes)
        self._out = stdout
        self._on_writer_failed = on_writer_failed
        self._reader = threading.Thread(target=self._read_loop, name="kward-reader", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name="kward-writer", daemon=True)

    def start(self) -> None:
        self._reader.start()
        self._writer.start()

    def _read_loop(self) -> None:
        try:
            while True:
                item = self._frames.read()
                if item is None:
                    break
                self.inbox.put_frame(item)
        except Exception:  # a broken stdin ends the session like EOF does
            log.exception("reading stdin failed")
        self.inbox.put_control(EOF)

    def _write_loop(self) -> None:
        while True:
            batch = self.outbox.take()
            if batch is None:
                break
            data = memoryview(b"".join(batch) if len(batch) > 1 else batch[0])
            try:
                while data:
                    n = self._out.write(data)
                    data = data[n:] if n is not None else data[len(data):]
            except (OSError, ValueError):
                log.warning("the client's end of the output is closed; dropping further output")
                self.outbox.kill()
                self._on_writer_failed()
                break
        try:
            self._out.flush()
        except (OSError, ValueError):
            pass

    def close_output(self) -> None:
        self.outbox.close()

    def join_writer(self, timeout: float) -> bool:
        self._writer.join(max(0.0, timeout))
        return not self._writer.is_alive()

    def join_reader(self, timeout: float) -> bool:
        self._reader.join(max(0.0, timeout))
        return not self._reader.is_alive()
