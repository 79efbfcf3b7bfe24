"""Diagnostic logging: module loggers -> `<config>/logs/kward.log` (rotated, redacted, 0600).

The log file is opened on the first record only, so a quiet run creates nothing. Level:
`KWARD_LOG_LEVEL` or config `log_level`, default WARNING. In `rpc` mode stderr receives
records only when the user raised the level (INFO or DEBUG): UI clients show every stderr
chunk as an error. Terminal modes also print warnings to stderr.

`configure` is called once from the main thread at start-up; logging itself is
thread-safe (every handler holds its own lock while emitting).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from kward.fsutil import FILE_MODE, ensure_private_dir
from kward.redact import redact_text

MAX_LOG_BYTES = 5 * 1024 * 1024
BACKUPS = 3
_FORMAT = "%(asctime)s %(process)d %(threadName)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Formats the record (traceback included), then masks secrets in the whole text."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


class PrivateRotatingFileHandler(logging.FileHandler):
    """A FileHandler that opens lazily with mode 0600 and rotates at MAX_LOG_BYTES.

    Rotation renames kward.log -> kward.log.1 -> ... (BACKUPS kept). Several processes may
    share the file; appends use O_APPEND, so lines never interleave, and a rotation race
    at worst leaves one file a little over the limit.
    """

    def __init__(self, path: Path):
        self._path = path
        super().__init__(str(path), mode="a", encoding="utf-8", delay=True)

    def _open(self):  # noqa: D401 - logging API
        ensure_private_dir(self._path.parent)
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        return open(fd, "a", encoding="utf-8")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.stream is not None and self.stream.tell() >= MAX_LOG_BYTES:
                self._rotate()
        except (OSError, ValueError):
            pass
        super().emit(record)

    def _rotate(self) -> None:
        self.stream.close()
        self.stream = None  # type: ignore[assignment]
        for i in range(BACKUPS - 1, 0, -1):
            src = self._path.with_name(f"{self._path.name}.{i}")
            if src.exists():
                os.replace(src, self._path.with_name(f"{self._path.name}.{i + 1}"))
        if self._path.exists():
            os.replace(self._path, self._path.with_name(f"{self._path.name}.1"))


class StrayOutput:
    """Stands in for sys.stdout in rpc mode: stray prints become log lines, never frames."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self) -> None:
        self._log = logging.getLogger("kward.stdout")
        self._buf = ""

    def write(self, text: str) -> int:
        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self._log.warning("stray output on stdout: %s", line)
        return len(text)

    def flush(self) -> None:
        if self._buf:
            self._log.warning("stray output on stdout: %s", self._buf)
            self._buf = ""

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("stdout is reserved for protocol frames")


def configure(logs_dir: Path, level: str | None, *, rpc_mode: bool) -> None:
    """Install the file handler (and a stderr handler where allowed) on the `kward` logger."""
    root = logging.getLogger("kward")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    effective = getattr(logging, level) if level else logging.WARNING
    root.setLevel(effective)
    root.propagate = False
    formatter = RedactingFormatter(_FORMAT)
    file_handler = PrivateRotatingFileHandler(logs_dir / "kward.log")
    file_handler.setFormatter(formatter)
    root.addHandler(file_handler)
    if not rpc_mode or (level is not None and effective < logging.WARNING):
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(RedactingFormatter("kward: %(levelname)s %(name)s: %(message)s"))
        root.addHandler(stderr)
