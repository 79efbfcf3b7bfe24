"""Forgiving, honest reading of session files.

Torn last lines (a crash mid-write), blank lines, undecodable lines, records of unknown
type and records of a known type with a broken shape are skipped; everything around them
loads. What was skipped is counted in a `SkipReport` and logged once per read through this
module's logger (never stderr). A file whose first valid record is not a version-1 session
header is refused with InvalidParams.

Files are streamed line by line; nothing here keeps the raw lines. Safe from any thread
(each call opens its own file object).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from kward.errors import InvalidParams
from kward.sessions.records import BODY_TYPES, SessionHeader, header_problem

log = logging.getLogger(__name__)

_MAX_WHERE = 10  # positions remembered per kind of problem (counts are exact)
_SCAN = json.JSONDecoder().scan_once  # (text, index) -> (object, end); the C scanner


@dataclass
class SkipReport:
    """What a read skipped. `where` lists hold 'line N' (or 'byte N' for tail reads)."""

    path: str
    torn_last_line: bool = False
    undecodable: int = 0
    blank: int = 0
    invalid: int = 0
    unknown_types: dict[str, int] = field(default_factory=dict)
    where: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """Skipped lines that carried something (blank lines excluded)."""
        return self.undecodable + self.invalid + sum(self.unknown_types.values()) + int(self.torn_last_line)

    def note(self, kind: str, where: str, record_type: str | None = None) -> None:
        if kind == "blank":
            self.blank += 1
            return
        if kind == "torn":
            self.torn_last_line = True
        elif kind == "unknown":
            key = record_type if record_type is not None else "?"
            self.unknown_types[key] = self.unknown_types.get(key, 0) + 1
        elif kind == "invalid":
            self.invalid += 1
        else:
            self.undecodable += 1
        if len(self.where) < _MAX_WHERE:
            self.where.append(f"{kind} at {where}")

    def emit(self) -> None:
        """Log one summary line: WARNING when content was skipped, DEBUG for blank lines only."""
        if self.skipped:
            parts = []
            if self.torn_last_line:
                parts.append("torn last line (a crash, or a write still in progress)")
            if self.undecodable:
                parts.append(f"{self.undecodable} undecodable")
            if self.invalid:
                parts.append(f"{self.invalid} malformed")
            if self.unknown_types:
                parts.append("unknown types " + ", ".join(f"{k}x{v}" for k, v in sorted(self.unknown_types.items())))
            if self.blank:
                parts.append(f"{self.blank} blank")
            log.warning("Skipped %d line(s) of session %s: %s (%s)", self.skipped, self.path,
                        "; ".join(parts), ", ".join(self.where))
        elif self.blank:
            log.debug("Skipped %d blank line(s) of session %s", self.blank, self.path)


def decode_line(line: bytes, where: str, report: SkipReport, *, final: bool = False) -> dict[str, Any] | None:
    """One line (with or without its ``\\n``) -> a JSON object, or None (noted in `report`).

    `final` marks a last line with no newline: when it does not decode it is a torn line.
    """
    if not line.strip():
        report.note("blank", where)
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        report.note("torn" if final else "undecodable", where)
        return None
    if not isinstance(record, dict):
        report.note("undecodable", where)
        return None
    return record


def check_body_record(record: dict[str, Any], where: str, report: SkipReport) -> bool:
    """True when `record` is a body record this version understands."""
    record_type = record.get("type")
    if record_type not in BODY_TYPES:
        report.note("unknown", where, record_type if isinstance(record_type, str) else repr(record_type))
        return False
    return True


def split_chunk(data: bytes, base: int, report: SkipReport) -> tuple[list[dict[str, Any]], int]:
    """Decode the complete lines of `data` (bytes read from file offset `base`).

    Returns the records and how many bytes were consumed (up to the last newline); a
    trailing partial line is left for a later read (it may still be being written).
    """
    end = data.rfind(b"\n") + 1
    records = []
    pos = 0
    while pos < end:
        nl = data.index(b"\n", pos)
        record = decode_line(data[pos:nl], f"byte {base + pos}", report)
        if record is not None and check_body_record(record, f"byte {base + pos}", report):
            records.append(record)
        pos = nl + 1
    return records, end


class SessionReader:
    """Iterate the records of one file: the header first, then body records.

    Usage::

        with SessionReader(path) as reader:
            header = reader.header          # InvalidParams if not a kward session
            for record in reader.records(): # body records only
                ...
            reader.end_offset               # bytes consumed by complete lines
            reader.report.emit()
    """

    def __init__(self, path: str | Path):
        self.path = str(path)
        self.report = SkipReport(self.path)
        self.end_offset = 0
        self._file: BinaryIO | None = None
        self._lineno = 0
        self.header: SessionHeader | None = None

    def __enter__(self) -> "SessionReader":
        self._file = open(self.path, "rb")
        try:
            self.header = self._read_header()
        except BaseException:
            self._file.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._file is not None:
            self._file.close()

    @property
    def identity(self) -> tuple[int, int]:
        """``(st_dev, st_ino)`` of the file being read (inside the ``with`` block)."""
        assert self._file is not None
        st = os.fstat(self._file.fileno())
        return st.st_dev, st.st_ino

    @property
    def where(self) -> str:
        """The position of the line read last, for reports."""
        return f"line {self._lineno}"

    def _lines(self) -> Iterator[tuple[bytes, bool]]:
        assert self._file is not None
        for line in self._file:
            self._lineno += 1
            complete = line.endswith(b"\n")
            if complete:
                self.end_offset += len(line)
            yield line, complete

    def _read_header(self) -> SessionHeader:
        for line, complete in self._lines():
            record = decode_line(line, f"line {self._lineno}", self.report, final=not complete)
            if record is None:
                continue
            problem = header_problem(record)
            if problem:
                raise InvalidParams(f"Not a Kward session file: {self.path}: {problem}",
                                    data={"path": self.path})
            if not complete:
                self.end_offset += len(line)
            return SessionHeader.from_record(record)
        raise InvalidParams(f"Not a Kward session file: {self.path}: no session header",
                            data={"path": self.path})

    def records(self, skip_types: tuple[bytes, ...] = ()) -> Iterator[dict[str, Any]]:
        """Body records in file order. Lines starting with a prefix in `skip_types` (for
        example ``b'{"type":"tool_execution_end"'``) are passed over without decoding.

        Hot loop of every resume: a well-formed line costs one UTF-8 decode and one call
        of the C scanner; anything unusual takes `decode_line`, which classifies it."""
        assert self._file is not None
        scan = _SCAN
        body = BODY_TYPES
        for line in self._file:
            self._lineno += 1
            complete = line[-1:] == b"\n"
            if complete:
                self.end_offset += len(line)
            if skip_types and line.startswith(skip_types):
                if not complete:
                    self.end_offset += len(line)
                continue
            try:
                text = line.decode("utf-8")
                record, end = scan(text, 0)
            except (ValueError, StopIteration, RecursionError):  # UnicodeDecodeError is a ValueError
                record = None
            if record.__class__ is not dict or (end < len(text) and not text[end:].isspace()):
                record = decode_line(line, self.where, self.report, final=not complete)
                if record is None:
                    continue
            if not complete:  # a whole record without its newline: keep it, it is complete
                self.end_offset += len(line)
            kind = record.get("type")
            if kind.__class__ is str and kind in body:
                yield record
            else:
                check_body_record(record, self.where, self.report)


def is_session_file(path: str | Path, limit: int = 1 << 20) -> bool:
    """True when the first valid record within the first `limit` bytes of `path` is a
    usable session header (the rule `SessionReader` applies). False when unreadable."""
    report = SkipReport(str(path))
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError:
        return False
    for line in data.splitlines():
        record = decode_line(line, "", report)
        if record is not None:
            return header_problem(record) is None
    return False
