"""The in-memory view of soft.jsonl: parsed records, their search index, and what it takes
to keep both current without re-reading the file on every turn.

`SoftLog.refresh()` costs one stat (of the path itself, no link followed) when nothing
changed. The file is opened as kward's own (`kward.fsutil.open_own`: a symlink, a FIFO, a
device or another user's file is an OSError naming it, never followed, never waited on)
and read only while it is at most `limit` bytes (EFBIG beyond). When the file grew (another
process appended), only the new bytes are read, after checking that the last bytes read
before are still where they were; when it was replaced (a rewrite) or changed in place,
it is read again in full. A line that does not end in a newline yet (an append in
progress) is not read until it does; a line that is not a JSON object with a string `id`
is kept as it is (and written back as it is), never dropped. Each record line is read into
a `kward.memory.records.Memory`; a line is written again only once its memory changed.

Each entry carries the derived data retrieval needs: the memory's search terms, its
lower-case tags and when it expires; `index` maps each term and tag to the entries
holding it, so a turn looks at the memories that share a term with its input instead of
at every memory.

Thread contract: none of its own; `kward.memory.store.MemoryStore` calls it under its
lock. File errors are plain OSErrors.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from kward.fsutil import open_own, own_file_error
from kward.limits import MAX_MEMORY_FILE_BYTES
from kward.memory import records
from kward.memory.records import Memory

_TAIL = 64  # bytes remembered from the end of what was read, to tell an append from a rewrite


@dataclass(slots=True)
class Entry:
    """One line of the file. `line` is None once `memory` changed (written anew then);
    `memory` is None for a line that is not a record (kept verbatim)."""

    memory: Memory | None
    line: str | None
    terms: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    expires: float | None = None

    def encoded(self) -> str:
        line = self.line
        if line is None:
            memory = self.memory
            line = self.line = "" if memory is None else json.dumps(records.to_record(memory), ensure_ascii=False,
                                                                    separators=(",", ":"))
        return line


def make_entry(memory: Memory, line: str | None) -> Entry:
    return Entry(memory, line, frozenset(records.terms(memory.text)), frozenset(t.lower() for t in memory.tags),
                 records.expires_at(memory))


def parse_line(raw: bytes) -> Entry:
    text = raw.decode("utf-8", "replace")
    try:
        memory = records.from_record(json.loads(text), "soft")
    except (ValueError, RecursionError):  # (not JSON, or nested too deep)
        memory = None
    return Entry(None, text) if memory is None else make_entry(memory, text)


@dataclass
class SoftLog:
    path: Path
    entries: list[Entry] = field(default_factory=list)
    by_id: dict[str, int] = field(default_factory=dict)  # id -> index of its (last) entry
    index: dict[str, list[int]] = field(default_factory=dict)  # text term -> entry indices
    tag_index: dict[str, list[int]] = field(default_factory=dict)  # lower-case tag -> entry indices
    max_number: int = 0  # the highest soft_NNN number seen
    active: int = 0  # how many of the memories are active
    limit: int = MAX_MEMORY_FILE_BYTES  # the largest file read
    _ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read
    _size: int = 0  # its size at the last look
    _mtime: int = 0
    _offset: int = 0  # bytes consumed: complete lines only
    _tail: bytes = b""

    # --- reading ------------------------------------------------------------------------

    def refresh(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        if st is not None:
            if (stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == self._ident and st.st_size == self._size
                    and st.st_mtime_ns == self._mtime):
                return
            try:
                fd = open_own(self.path)
            except FileNotFoundError:
                st = None
        if st is None:
            if self._ident is not None or self.entries:
                self._reset()
            return
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if st.st_size > self.limit:
                raise own_file_error(self.path, f"is larger than {self.limit} bytes", errno.EFBIG)
            ident = (st.st_dev, st.st_ino)
            # an append only ever makes the file longer; anything else is a rewrite
            if ident == self._ident and st.st_size > self._size and self._unchanged(f):
                f.seek(self._offset)
                self._consume(f.read(self.limit + 1 - self._offset), ident, st)
                return
            self._reset()
            f.seek(0)
            self._consume(f.read(self.limit + 1), ident, st)

    def _unchanged(self, f: BinaryIO) -> bool:
        """The bytes before `_offset` still end with what was read there last."""
        start = self._offset - len(self._tail)
        f.seek(start)
        return f.read(len(self._tail)) == self._tail

    def _consume(self, data: bytes, ident: tuple[int, int], st: os.stat_result) -> None:
        end = data.rfind(b"\n") + 1  # only complete lines
        for raw in data[:end].split(b"\n")[:-1]:
            if raw.strip():
                self._add(parse_line(raw))
        self._offset += end
        if end:
            self._tail = (self._tail + data[:end])[-_TAIL:]
        self._ident, self._size, self._mtime = ident, st.st_size, st.st_mtime_ns

    def _reset(self) -> None:
        self.entries, self.by_id, self.index, self.tag_index, self.max_number = [], {}, {}, {}, 0
        self.active = 0
        self._ident, self._size, self._mtime, self._offset, self._tail = None, 0, 0, 0, b""

    def _add(self, entry: Entry) -> None:
        position = len(self.entries)
        self.entries.append(entry)
        if entry.memory is None:
            return
        memory_id = entry.memory.id
        previous = self.by_id.get(memory_id)
        self.by_id[memory_id] = position
        number = records.id_number("soft", memory_id)
        if number is not None and number > self.max_number:
            self.max_number = number
        if previous is not None:  # a duplicate id: the last line wins
            self._unindex(previous)
            self._count(self.entries[previous].memory, -1)
        self._count(entry.memory, 1)
        self._index(position)

    def _count(self, memory: Memory | None, change: int) -> None:
        if memory is not None and memory.active:
            self.active += change

    def _index(self, position: int) -> None:
        entry = self.entries[position]
        for index, keys in ((self.index, entry.terms), (self.tag_index, entry.tags)):
            get = index.get
            for key in keys:
                bucket = get(key)
                if bucket is None:
                    index[key] = [position]
                else:
                    bucket.append(position)

    def _unindex(self, position: int) -> None:
        entry = self.entries[position]
        for index, keys in ((self.index, entry.terms), (self.tag_index, entry.tags)):
            for key in keys:
                hits = index.get(key)
                if hits and position in hits:
                    hits.remove(position)

    @property
    def size(self) -> int:
        """The file's size at the last look."""
        return self._size

    @property
    def torn(self) -> bool:
        """The file ends in an incomplete line (a crashed writer's, or one being written)."""
        return self._size > self._offset

    def get(self, memory_id: str) -> Memory | None:
        position = self.by_id.get(memory_id)
        return None if position is None else self.entries[position].memory

    def memories(self) -> Iterator[Memory]:
        """Every memory, in file order (of a duplicated id: its last line, where that is)."""
        for position, entry in enumerate(self.entries):
            memory = entry.memory
            if memory is not None and self.by_id.get(memory.id) == position:
                yield memory

    # --- changing -------------------------------------------------------------------------

    def replace(self, memory: Memory) -> None:
        """Change a memory in memory (write the file with `encode` afterwards)."""
        position = self.by_id[memory.id]
        self._unindex(position)
        self._count(self.entries[position].memory, -1)
        self._count(memory, 1)
        self.entries[position] = make_entry(memory, None)
        self._index(position)

    def touch(self, memory_id: str, hits: int, stamp: str) -> None:
        """Count `hits` more retrievals of an active memory last seen at `stamp` (its
        terms and tags stay: the index needs no change)."""
        position = self.by_id.get(memory_id)
        if position is None:
            return
        entry = self.entries[position]
        memory = entry.memory
        if memory is None or not memory.active:
            return
        entry.memory = memory = records.touched(memory, hits, stamp)
        entry.line = None
        entry.expires = records.expires_at(memory)

    def encode(self) -> bytes:
        return "".join(e.encoded() + "\n" for e in self.entries).encode("utf-8")

    def appended(self, line: bytes, memory: Memory) -> None:
        """This process appended `line` (the record of `memory`, ending in a newline) at
        the end of the file as it had read it."""
        st = os.lstat(self.path)
        if self.torn or (st.st_dev, st.st_ino) != self._ident or st.st_size != self._size + len(line):
            self.refresh()  # more than our line is new: read what is there
            return
        self._add(make_entry(memory, line[:-1].decode("utf-8")))
        self._offset = self._size = st.st_size
        self._mtime = st.st_mtime_ns
        self._tail = (self._tail + line)[-_TAIL:]

    def invalidate(self) -> None:
        """Forget the view: the next `refresh` reads the file in full (after a change of
        the view that was not written)."""
        self._reset()

    def written(self, data: bytes) -> None:
        """This process replaced the file with `data` (the encoding of `entries`)."""
        st = os.lstat(self.path)
        self._ident, self._size, self._mtime = (st.st_dev, st.st_ino), st.st_size, st.st_mtime_ns
        self._offset, self._tail = len(data), data[-_TAIL:]
