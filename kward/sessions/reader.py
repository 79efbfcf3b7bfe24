"""Forgiving, honest, bounded reading of session files.

The first line must be a version-1 session header ending within `lines.HEADER_MAX`
bytes; anything else (a README, a binary, a gigabyte without a newline) is refused with
InvalidParams after reading at most that much. After the header, torn last lines (a crash
mid-write), blank lines, undecodable lines, over-long lines (`lines.MAX_LINE`), records
nested too deeply (`lines.MAX_DEPTH`), records of unknown type and records of a known type
with a broken shape are skipped; everything around them loads. What was skipped is counted
in a `SkipReport` and logged once per read through this module's logger (never stderr).

Files are streamed in bounded chunks (`kward.sessions.lines`); nothing here keeps the raw
lines. Safe from any thread (each call opens its own file object). A reader given the
process's descriptor pool (`kward.sessions.descriptors`) opens through
`kward.sessions.fdretry.retrying` with it; the module imports no pool.
"""

from __future__ import annotations

import json
import logging
import os
from io import BufferedReader
from pathlib import Path
from typing import Any, Iterator

from kward.errors import InvalidParams
from kward.sessions.fdretry import Reclaimer, retrying
from kward.sessions.format import BODY_TYPES, SessionHeader, header_problem
from kward.sessions.lines import HEADER_MAX, MAX_DEPTH, LineScanner, too_deep

log = logging.getLogger(__name__)

_MAX_WHERE = 10  # positions remembered per kind of problem (counts are exact)
_DECODER = json.JSONDecoder()


class SkipReport:
    """What a read skipped. `where` lists hold 'line N' (or 'byte N' for tail reads).
    Filled by one reader on one thread."""

    __slots__ = ("path", "torn_last_line", "undecodable", "blank", "invalid", "oversized", "unknown_types", "where")

    def __init__(self, path: str):
        self.path = path
        self.torn_last_line = False
        self.undecodable = 0
        self.blank = 0
        self.invalid = 0
        self.oversized = 0
        self.unknown_types: dict[str, int] = {}
        self.where: list[str] = []

    @property
    def skipped(self) -> int:
        """Skipped lines that carried something (blank lines excluded)."""
        return (self.undecodable + self.invalid + self.oversized + sum(self.unknown_types.values())
                + int(self.torn_last_line))

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

    def count_scan(self, scanner: LineScanner) -> None:
        """Add the blank and over-long lines `scanner` passed over."""
        self.blank += scanner.blank
        self.oversized += scanner.oversized

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
            if self.oversized:
                parts.append(f"{self.oversized} longer than the line limit")
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
    An object nested deeper than `lines.MAX_DEPTH` is noted as invalid.
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
    if too_deep(record, line):
        report.note("invalid", where)
        return None
    return record


def check_body_record(record: dict[str, Any], where: str, report: SkipReport) -> bool:
    """True when `record` is a body record this version understands."""
    record_type = record.get("type")
    if record_type not in BODY_TYPES:
        report.note("unknown", where, record_type if isinstance(record_type, str) else repr(record_type))
        return False
    return True


def body_records(scanner: LineScanner, report: SkipReport, skip_types: tuple[bytes, ...] = (),
                 first_line: int | None = None) -> Iterator[dict[str, Any]]:
    """The body records of the complete lines `scanner` yields, in order.

    Lines starting with a prefix in `skip_types` (for example
    ``b'{"type":"tool_execution_end"'``) are passed over without decoding. Problems are
    noted as 'line N' (`first_line` is the number of the line before the first scanned
    one) or, without it, 'byte N'. Hot loop of every resume: a well-formed line costs one
    UTF-8 decode and one ``raw_decode``; anything unusual takes `decode_line`."""
    deep_min = 2 * MAX_DEPTH  # a shorter line cannot nest that deep

    def where(start: int) -> str:
        return f"line {first_line + scanner.lines}" if first_line is not None else f"byte {start}"

    for line, start in scanner:
        if skip_types and line.startswith(skip_types):
            continue
        try:
            text = line.decode("utf-8")
            record, end = _DECODER.raw_decode(text)
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            record = None
        if not isinstance(record, dict) or (end < len(text) and not text[end:].isspace()):
            record = decode_line(line, where(start), report)
            if record is None:
                continue
        elif len(line) > deep_min and too_deep(record, line):
            report.note("invalid", where(start))
            continue
        kind = record.get("type")
        if isinstance(kind, str) and kind in BODY_TYPES:
            yield record
        else:
            check_body_record(record, where(start), report)


def parse_header(data: bytes, path: str) -> tuple[SessionHeader, int]:
    """The header from the first bytes of a file (at most `HEADER_MAX`; fewer only when
    that is the whole file) and the length of its line (with the newline);
    InvalidParams when the first line is not a usable v1 header."""
    nl = data.find(b"\n", 0, HEADER_MAX)
    problem: str | None
    if nl < 0 and len(data) >= HEADER_MAX:
        problem = f"no line break in its first {HEADER_MAX // 1024} KiB"
    else:
        line = data if nl < 0 else data[:nl]
        record = decode_line(line, "line 1", SkipReport(path))
        problem = "no session header" if record is None else header_problem(record)
        if record is not None and problem is None:
            return SessionHeader.from_record(record), len(line) if nl < 0 else nl + 1
    raise InvalidParams(f"Not a Kward session file: {path}: {problem}", data={"path": path})


def header_ok(data: bytes) -> bool:
    """Whether `data` (the first `HEADER_MAX` bytes of a file, or all of it) starts with a
    usable header line (the rule `SessionReader` applies)."""
    try:
        parse_header(data, "")
    except InvalidParams:
        return False
    return True


class SessionReader:
    """Iterate the records of one file: the header first, then body records. `pool`: where
    idle descriptors may be taken back when the process has none left (see `retrying`).

    Usage::

        with SessionReader(path) as reader:
            header = reader.header          # InvalidParams if not a kward session
            for record in reader.records(): # body records only
                ...
            reader.end_offset               # bytes consumed by complete lines
            reader.skipping                 # the file ends inside an over-long line
            reader.report.emit()
    """

    def __init__(self, path: str | Path, pool: Reclaimer | None = None):
        self.path = str(path)
        self.report = SkipReport(self.path)
        self.end_offset = 0
        self.skipping = False
        self._pool = pool
        self._file: BufferedReader | None = None
        self._lineno = 1
        self.header: SessionHeader | None = None

    def __enter__(self) -> "SessionReader":
        self._file = file = retrying(lambda: open(self.path, "rb"), pool=self._pool)
        try:
            self.header, self.end_offset = parse_header(file.read(HEADER_MAX), self.path)
            file.seek(self.end_offset)
        except BaseException:
            file.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
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

    def records(self, skip_types: tuple[bytes, ...] = ()) -> Iterator[dict[str, Any]]:
        """Body records in file order (see `body_records`); then `end_offset` is the end of
        the last complete line, or of a complete last record without its newline."""
        assert self._file is not None
        scanner = LineScanner(self._file.read, self.end_offset)
        for record in body_records(scanner, self.report, skip_types, first_line=1):
            self._lineno = 1 + scanner.lines
            yield record
        self.report.count_scan(scanner)
        self.end_offset, self.skipping = scanner.consumed, scanner.skipping
        if not scanner.tail:
            return
        self._lineno = 2 + scanner.lines
        if skip_types and scanner.tail.startswith(skip_types):
            return  # not decoded: complete or not, it changes nothing for this reader
        last = decode_line(scanner.tail, self.where, self.report, final=True)
        if last is None:
            return
        self.end_offset += len(scanner.tail)  # a whole record without its newline: it is complete
        if check_body_record(last, self.where, self.report):
            yield last

