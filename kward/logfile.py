"""The diagnostic log's handlers: `<config>/logs/kward.log` (rotated, redacted, 0600).

This module imports `logging`; `kward.diagnostics` imports it only once logging itself has
been imported by something (see there), so a process that logs nothing never pays for
either. The file is opened on the first record only, so a quiet run creates nothing.
Every handler holds its own lock while emitting: any thread.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from kward.fsutil import FILE_MODE, ensure_private_dir
from kward.redact import redact_text

MAX_LOG_BYTES = 5 * 1024 * 1024
BACKUPS = 3
_FORMAT = "%(asctime)s %(process)d %(threadName)s %(levelname)s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Formats the record (traceback included), then masks secrets in the whole text: the
    patterns of `redact_text`, and the exact values of `secrets` (a `kward.secrets.KnownSecrets`)."""

    def __init__(self, fmt: str, secrets: Any = None):
        super().__init__(fmt)
        self._secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        text = redact_text(super().format(record))
        return self._secrets.snapshot().scrub(text) if self._secrets is not None else text


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
        """Never raises: when the log file cannot be opened (a read-only or full disk, a
        file where the logs directory should be) the record is dropped."""
        try:
            if self.stream is None:
                self.stream = self._open()
            elif self.stream.tell() >= MAX_LOG_BYTES:
                self._rotate()
                self.stream = self._open()
        except (OSError, ValueError):
            return
        logging.StreamHandler.emit(self, record)

    def _rotate(self) -> None:
        self.stream.close()
        self.stream = None  # type: ignore[assignment]
        for i in range(BACKUPS - 1, 0, -1):
            src = self._path.with_name(f"{self._path.name}.{i}")
            if src.exists():
                os.replace(src, self._path.with_name(f"{self._path.name}.{i + 1}"))
        if self._path.exists():
            os.replace(self._path, self._path.with_name(f"{self._path.name}.1"))


def install(logs_dir: str | os.PathLike, level: str | None, *, rpc_mode: bool, secrets: Any = None) -> None:
    """Install the file handler (and a stderr handler where allowed) on the `kward` logger
    and on Python's warnings (`kward.diagnostics.configure` says when). In rpc mode a
    failing handler never prints to stderr."""
    effective = getattr(logging, level) if level else logging.WARNING
    formatter = RedactingFormatter(_FORMAT, secrets)
    file_handler = PrivateRotatingFileHandler(Path(logs_dir) / "kward.log")
    file_handler.setFormatter(formatter)
    handlers: list[logging.Handler] = [file_handler]
    if not rpc_mode or (level is not None and effective < logging.WARNING):
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(RedactingFormatter("kward: %(levelname)s %(name)s: %(message)s", secrets))
        handlers.append(stderr)
    if rpc_mode:
        logging.raiseExceptions = False
    logging.captureWarnings(True)
    for name in ("kward", "py.warnings"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(effective)
        logger.propagate = False
        for handler in handlers:
            logger.addHandler(handler)
