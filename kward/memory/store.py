"""MemoryStore: the three memory files, and every read and change of them.

Its API speaks `kward.memory.records.Memory` values (frozen: a change makes a new one, so
the values handed out are never touched afterwards); records are read from and written to
the files by `records.from_record` and `records.to_record`.

Cross-process safety (several kward processes share one config directory): every change
holds an flock on `memory/.lock` for its read-modify-write. Inside it the files are read
fresh, ids are allocated (the highest `core_NNN` / `soft_NNN` in the file plus one), and
then written: core.json and rewrites of soft.jsonl by atomic replace
(`kward.fsutil.atomic_write_bytes`), a new soft memory and every event as one `write()`
of one line to the file opened for appending. Readers (listings, retrieval) take no flock:
they see a whole old or a whole new file, and an appended line only once it is complete.

Retrieval counts hits: the retrieved soft memories get `hits + 1` and a new
`last_seen_at` at once in this process, and on disk at the next `flush()` (which
`flush_if_due` does at most every FLUSH_INTERVAL seconds, and `kward.runtime.memory` at
shutdown), so a turn never waits for a rewrite of a large soft.jsonl. Pending counts
survive other processes' rewrites (they are applied again to what is read); a crash loses
at most the counts of the last interval.

The files are input (another process, the user or an attacker with write access to the
directory may have put anything there): each is opened as kward's own
(`kward.fsutil.open_own` / `read_own` / `APPEND_OWN`: no final symlink followed, no wait
on a FIFO, a regular file of this user only) and core.json and soft.jsonl are read only up
to `MAX_MEMORY_FILE_BYTES`. A file that is not what it must be, and a core.json that is not
an array of records (JSON objects with a string `id`), is `MemoryStoreError` naming its
path, and the operation changes nothing: every change opens events.jsonl (and the lock)
before it writes anything, and core.json is never rewritten from a reading that failed.

Bounds (`kward.limits`): at most `MAX_CORE_MEMORIES` core memories (core.json is
rewritten whole by every change of it: that cap keeps a rewrite cheap) and
`MAX_SOFT_MEMORIES` active soft memories (an add is one appended line, whatever the count);
an add (and a promotion) may make neither file larger than `MAX_ADD_BYTES`, which leaves
`MAX_MEMORY_FILE_BYTES - MAX_ADD_BYTES` for the rewrites that do not add (a forget, a
relaxation, the hit counts), so that forgetting always makes room; a rewrite is refused
only when it would pass `MAX_MEMORY_FILE_BYTES` (the file could not be read again). What
is refused is `MemoryFull`; hit counts refused are dropped (logged), not tried again on
every turn. events.jsonl is only ever appended to, never read.

Thread contract: any thread. `_lock` (reentrant) guards the cached views, the pending
counts and the open events.jsonl of the operation in progress, and is taken before the
flock; the flock is taken once per outermost operation. Other file errors are OSErrors
(the RPC boundary turns them into filesystem errors).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Iterator

from kward.errors import InvalidParams, MemoryFull, MemoryNotFound, MemoryStoreError
from kward.fsutil import APPEND_OWN, FILE_MODE, atomic_write_bytes, ensure_private_dir, file_lock, open_own, read_own
from kward.limits import MAX_CORE_MEMORIES, MAX_MEMORY_FILE_BYTES, MAX_SOFT_MEMORIES
from kward.memory import records
from kward.memory.records import Clock, Memory
from kward.memory.retrieval import Retrieval, select
from kward.memory.softlog import SoftLog

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 60.0  # seconds between writes of pending hit counts
#: The largest core.json or soft.jsonl an add makes (see the module docstring).
MAX_ADD_BYTES = MAX_MEMORY_FILE_BYTES - (1 << 20)

#: The errors of `open_own` / `read_own` for a file that is not what it must be (EISDIR:
#: a directory opened for writing: events.jsonl, the lock).
_UNUSABLE = frozenset((errno.ELOOP, errno.EINVAL, errno.EFBIG, errno.EPERM, errno.EISDIR))


def _open_append(path: Path) -> int:
    fd = open_own(path, APPEND_OWN)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _parse_core(raw: bytes, path: Path) -> list[Memory]:
    """The memories of core.json's bytes; MemoryStoreError unless they are a JSON array (or
    an object whose `memories` is one) of records (objects with a string `id`)."""
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else []
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise MemoryStoreError(f"Invalid Kward core memory JSON: {path}", data={"path": str(path)}) from None
    if isinstance(data, dict) and "memories" in data:
        data = data["memories"]
    if not isinstance(data, list):
        raise MemoryStoreError(f"Invalid Kward core memory JSON: {path} (not an array of memories)",
                               data={"path": str(path)})
    memories = []
    for position, record in enumerate(data):
        memory = records.from_record(record, "core")
        if memory is None:
            raise MemoryStoreError(f"Invalid Kward core memory JSON: {path} (entry {position} is not an object "
                                   "with a string id)", data={"path": str(path), "entry": position})
        memories.append(memory)
    return memories


class MemoryStore:
    def __init__(self, directory: Path, *, clock: Clock = records.utc_now):
        self.directory = Path(directory)
        self.core_path = self.directory / "core.json"
        self.soft_path = self.directory / "soft.jsonl"
        self.events_path = self.directory / "events.jsonl"
        self._clock = clock
        self._lock = threading.RLock()
        self._held = False  # this store holds the flock (only ever read by the _lock holder)
        self._events_fd = -1  # events.jsonl, open while the flock is held
        self._paths = frozenset(str(p) for p in (self.core_path, self.soft_path, self.events_path,
                                                 self.directory / ".lock"))
        self._soft = SoftLog(self.soft_path)
        self._core_key: tuple[int, int, int, int, int] | None = None
        self._core: list[Memory] = []
        self._pending: dict[str, tuple[int, str]] = {}  # soft id -> (hits not yet on disk, last seen)
        self._flushed = time.monotonic()

    @contextlib.contextmanager
    def _checked(self) -> Iterator[None]:
        """An OSError of one of the memory files that is not a regular file of this user
        within the cap becomes MemoryStoreError naming it."""
        try:
            yield
        except OSError as exc:
            if exc.errno not in _UNUSABLE or exc.filename not in self._paths:
                raise
            words = exc.strerror or os.strerror(exc.errno or 0)
            raise MemoryStoreError(f"Unusable memory file {exc.filename}: {words}",
                                   data={"path": exc.filename, "osMessage": words,
                                         "errno": errno.errorcode.get(exc.errno or 0, str(exc.errno))}) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The flock, and events.jsonl open for appending, for the outermost operation: an
        unusable lock or events file fails it before anything is written."""
        with self._lock:
            if self._held:
                yield
                return
            with self._checked(), file_lock(self.directory / ".lock"):
                self._events_fd = _open_append(self.events_path)
                self._held = True
                try:
                    yield
                finally:
                    self._held = False
                    fd, self._events_fd = self._events_fd, -1
                    os.close(fd)

    def _now(self) -> datetime:
        return self._clock()

    # --- reading (no flock) -------------------------------------------------------------

    def _read_core(self) -> list[Memory]:
        """core.json's memories (cached by stat; entries that are not records are left out).
        Caller holds `_lock`."""
        try:
            st = os.lstat(self.core_path)
        except FileNotFoundError:
            self._core_key, self._core = None, []
            return self._core
        key = (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key != self._core_key:
            self._core_key = None
            with self._checked():
                raw = read_own(self.core_path, MAX_MEMORY_FILE_BYTES)
            self._core = _parse_core(raw, self.core_path)
            self._core_key = key
        return self._core

    def _read_soft(self) -> SoftLog:
        """soft.jsonl, current, with this process's pending counts applied. Caller holds `_lock`."""
        before = self._soft.entries
        with self._checked():
            self._soft.refresh()
        if self._pending and self._soft.entries is not before:  # read anew: count our hits again
            for memory_id, (hits, stamp) in self._pending.items():
                self._soft.touch(memory_id, hits, stamp)
        return self._soft

    def core(self) -> list[Memory]:
        with self._lock:
            return list(self._read_core())

    def soft(self, include_inactive: bool = False) -> list[Memory]:
        with self._lock:
            return [m for m in self._read_soft().memories() if include_inactive or m.active]

    def find(self, memory_id: str) -> Memory | None:
        """The memory with that id (core or soft, forgotten ones too)."""
        with self._lock:
            for m in self._read_core():
                if m.id == memory_id:
                    return m
            return self._read_soft().get(memory_id)

    # --- writing (under the flock) ------------------------------------------------------

    def ensure(self) -> None:
        """Create the directory and any missing file (core.json as `[]`), each 0600."""
        with self._locked():
            try:
                fd = open_own(self.core_path)
            except FileNotFoundError:
                atomic_write_bytes(self.core_path, b"[]\n")
            else:
                try:
                    os.fchmod(fd, FILE_MODE)
                finally:
                    os.close(fd)
            os.close(_open_append(self.soft_path))

    def event(self, event_type: str, **fields: object) -> None:
        line = json.dumps({"type": event_type, "timestamp": records.iso(self._now()), **fields},
                          ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._locked():
            _write_all(self._events_fd, line.encode("utf-8"))

    def _write_core(self, memories: list[Memory], limit: int = MAX_MEMORY_FILE_BYTES) -> None:
        """Rewrite core.json; MemoryFull (nothing written) past `limit` bytes (MAX_ADD_BYTES
        for a change that adds)."""
        data = (json.dumps([records.to_record(m) for m in memories], indent=2, ensure_ascii=False)
                + "\n").encode("utf-8")
        if len(data) > limit:
            raise _full("core", limit, "bytes")
        atomic_write_bytes(self.core_path, data)
        self._core_key = None

    def _write_soft(self) -> None:
        """Rewrite soft.jsonl from the view (changed by the caller); MemoryFull (nothing
        written, the view read again from the file) when that would not be readable again."""
        data = self._soft.encode()
        if len(data) > MAX_MEMORY_FILE_BYTES:
            self._soft.invalidate()
            raise _full("soft", MAX_MEMORY_FILE_BYTES, "bytes")
        atomic_write_bytes(self.soft_path, data)
        self._soft.written(data)
        self._pending.clear()  # every count is in the file now
        self._flushed = time.monotonic()

    def add_core(self, text: str, scope: str, tags: list[str] | None = None,
                 source: str = records.EXPLICIT) -> Memory:
        text = records.memory_text(text)
        with self._locked():
            memories = list(self._fresh_core())
            if len(memories) >= MAX_CORE_MEMORIES:
                raise _full("core", MAX_CORE_MEMORIES)
            numbers = [n for n in (records.id_number("core", m.id) for m in memories) if n is not None]
            memory = records.new_core(records.format_id("core", max(numbers, default=0) + 1), text, scope,
                                      records.clean_tags(tags), self._now(), source)
            self._write_core(memories + [memory], MAX_ADD_BYTES)
            self.event("add", **records.event_ref(memory))
            return memory

    def add_soft(self, text: str, scope: str, tags: list[str] | None = None, *,
                 confidence: float = records.MANUAL_CONFIDENCE, source: str = "manual",
                 ttl_days: int = records.SOFT_TTL_DAYS) -> Memory:
        """Append a soft memory."""
        text = records.memory_text(text)
        with self._locked():
            return self._append_soft(self._read_soft(), text, scope, tags, confidence, source, ttl_days)

    def add_soft_if_new(self, text: str, scope: str, tags: list[str] | None = None, *,
                        confidence: float = records.MANUAL_CONFIDENCE, source: str = "manual",
                        ttl_days: int = records.SOFT_TTL_DAYS) -> Memory | None:
        """`add_soft`, or None (nothing added) when an active soft memory of that scope
        already has the same text."""
        text = records.memory_text(text)
        with self._locked():
            soft = self._read_soft()
            if any(m.active and m.scope == scope and records.same_text(m.text, text) for m in soft.memories()):
                return None
            return self._append_soft(soft, text, scope, tags, confidence, source, ttl_days)

    def _append_soft(self, soft: SoftLog, text: str, scope: str, tags: list[str] | None, confidence: float,
                     source: str, ttl_days: int) -> Memory:
        """Caller holds the flock and has just read `soft`; `text` is checked."""
        if soft.active >= MAX_SOFT_MEMORIES:
            raise _full("soft", MAX_SOFT_MEMORIES)
        memory = records.new_soft(records.format_id("soft", soft.max_number + 1), text, scope,
                                  records.clean_tags(tags), self._now(), confidence=confidence, source=source,
                                  ttl_days=ttl_days)
        line = (json.dumps(records.to_record(memory), ensure_ascii=False, separators=(",", ":"))
                + "\n").encode("utf-8")
        if soft.torn:  # a crashed writer's incomplete line: ours starts on a line of its own
            line = b"\n" + line
        if soft.size + len(line) > MAX_ADD_BYTES:
            raise _full("soft", MAX_ADD_BYTES, "bytes")
        fd = _open_append(self.soft_path)
        try:
            _write_all(fd, line)
        finally:
            os.close(fd)
        soft.appended(line, memory)
        self.event("add", **records.event_ref(memory))
        return memory

    def _fresh_core(self) -> list[Memory]:
        self._core_key = None  # under the flock: never trust a stat-equal cache for a write
        return self._read_core()

    def forget(self, memory_id: str) -> bool:
        """Remove a core memory, or mark an active soft one forgotten (its text, tags,
        confidence and hits redacted in the file). False when no such memory is there."""
        with self._locked():
            memories = self._fresh_core()
            if any(m.id == memory_id for m in memories):
                self._write_core([m for m in memories if m.id != memory_id])
                self.event("forget", id=memory_id, layer="core")
                return True
            soft = self._read_soft()
            memory = soft.get(memory_id)
            if memory is None or memory.status == "forgotten":
                return False
            soft.replace(records.forgotten(memory, self._now()))
            self._write_soft()
            self.event("forget", id=memory_id, layer="soft")
            return True

    def promote(self, memory_id: str) -> Memory:
        """An active soft memory becomes a new core memory (and is forgotten); a workspace
        core memory becomes global. Returns the core memory."""
        with self._locked():
            memories = self._fresh_core()
            core = next((m for m in memories if m.id == memory_id), None)
            if core is not None:
                if core.scope == "global":
                    raise InvalidParams(f"Only workspace core memories can be promoted: {memory_id} is global",
                                        data={"param": "id"})
                return self._rescope(memories, core, "global", "promote")
            soft = self._read_soft().get(memory_id)
            if soft is None or not soft.active:
                raise MemoryNotFound(f"Unknown active soft memory or workspace core memory: {memory_id}",
                                     data={"id": memory_id})
            promoted = self.add_core(soft.text, soft.scope or "global", list(soft.tags), source=records.PROMOTED)
            self.forget(memory_id)
            self.event("promote", from_id=memory_id, to_id=promoted.id)
            return promoted

    def relax(self, memory_id: str, scope: str) -> Memory:
        """A global core memory becomes one of `scope` (a workspace)."""
        with self._locked():
            memories = self._fresh_core()
            core = next((m for m in memories if m.id == memory_id), None)
            if core is None:
                raise MemoryNotFound(f"Unknown core memory: {memory_id}", data={"id": memory_id})
            if core.scope != "global":
                raise InvalidParams(f"Only global core memories can be relaxed: {memory_id} is not global",
                                    data={"param": "id"})
            return self._rescope(memories, core, scope, "relax")

    def _rescope(self, memories: list[Memory], core: Memory, scope: str, event_type: str) -> Memory:
        changed = records.rescoped(core, scope, self._now())
        self._write_core([changed if m is core else m for m in memories])
        self.event(event_type, **records.event_ref(changed))
        return changed

    # --- retrieval --------------------------------------------------------------------

    def retrieve(self, query: str, scopes: list[str]) -> Retrieval:
        """The memories for one turn (see `kward.memory.retrieval`); counts the soft ones'
        hits and logs a `retrieve` event."""
        now = self._now()
        with self._lock:
            result = select(self._read_core(), self._read_soft(), query, scopes, now.timestamp())
            stamp = records.iso(now)
            for memory in result.soft:
                hits = self._pending.get(memory.id, (0, stamp))[0] + 1
                self._pending[memory.id] = (hits, stamp)
                self._soft.touch(memory.id, 1, stamp)
            result.timestamp = stamp
        self.event("retrieve", core_ids=[m.id for m in result.core], soft_ids=[m.id for m in result.soft],
                   scopes=list(scopes))
        return result

    def flush(self) -> None:
        """Write the pending hit counts to soft.jsonl (nothing when there are none). Counts
        that would make the file too large to read are dropped (logged)."""
        with self._lock:
            if not self._pending:
                return
            with self._locked():
                self._read_soft()
                try:
                    self._write_soft()
                except MemoryFull:
                    log.warning("memory hit counts not written: %s would be larger than %d bytes",
                                self.soft_path, MAX_MEMORY_FILE_BYTES)
                    self._pending.clear()
                    self._flushed = time.monotonic()

    def flush_if_due(self, interval: float = FLUSH_INTERVAL) -> None:
        with self._lock:
            if self._pending and time.monotonic() - self._flushed >= interval:
                self.flush()


def _full(layer: str, limit: int, unit: str = "memories") -> MemoryFull:
    what = f"{limit:,} {layer} memories" if unit == "memories" else f"{layer} memory file of {limit:,} bytes"
    return MemoryFull(f"Memory is full: at most {what}; forget some first", data={"layer": layer, "limit": limit})
