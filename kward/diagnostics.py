"""Diagnostic logging: module loggers -> `<config>/logs/kward.log` (rotated, redacted, 0600).

Modules log through `logging.getLogger(__name__)`; `configure` installs the handlers on
the `kward` logger and on Python's warnings, once, at start-up. The log file is opened on
the first record only, so a quiet run creates nothing. Level: `KWARD_LOG_LEVEL` or config
`log_level`, default WARNING. In `rpc` mode stderr receives records only when the user
raised the level (INFO or DEBUG): UI clients show every stderr chunk as an error. Terminal
modes also print warnings to stderr. A record logged with `SHOWN_ELSEWHERE` never goes to
stderr. `StrayOutput` stands in for `sys.stdout` in rpc mode.

`configure` is called once from the main thread before anything logs; logging itself is
thread-safe (every handler holds its own lock while emitting).
"""

from __future__ import annotations

import errno
import io
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

from kward.fsutil import APPEND_OWN, FILE_MODE, ensure_private_dir, open_own
from kward.redact import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from kward.config.secrets import KnownSecrets

MAX_LOG_BYTES = 5 * 1024 * 1024
#: The errors of `open_own` that refuse what is in the log file's place (a link; not a
#: regular file; another user's): logging to the file stops.
REFUSED = (errno.ELOOP, errno.EINVAL, errno.EPERM)
BACKUPS = 3
_FORMAT = "%(asctime)s %(process)d %(threadName)s %(levelname)s %(name)s: %(message)s"


#: The `extra` of a record whose news a client is given otherwise (a hook's run: its
#: `hook/completed`, which the terminal shows as one line): it goes to the log file, never
#: to stderr (where it would repeat that, with the hook's raw output).
SHOWN_ELSEWHERE = {"kward_shown_elsewhere": True}


def _not_shown_elsewhere(record: logging.LogRecord) -> bool:
    return not getattr(record, "kward_shown_elsewhere", False)


class RedactingFormatter(logging.Formatter):
    """Formats the record (traceback included), then masks secrets in the whole text: the
    patterns of `redact_text`, and the exact values of `secrets`."""

    def __init__(self, fmt: str, secrets: KnownSecrets | None = None):
        super().__init__(fmt)
        self._secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        text = redact_text(super().format(record))
        return self._secrets.snapshot().scrub(text) if self._secrets is not None else text


class StderrFormatter(RedactingFormatter):
    """Records on stderr as kward words its own warnings in every mode: `kward: warning:
    <message>` (`error`, `critical` likewise); below WARNING, which only a raised
    `log_level` shows, the level and the logger's name as in the log (`kward: DEBUG
    kward.x: ...`)."""

    def __init__(self, secrets: KnownSecrets | None = None):
        super().__init__("%(message)s", secrets)

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            prefix = f"kward: {record.levelname.lower()}: "
        else:
            prefix = f"kward: {record.levelname} {record.name}: "
        return prefix + super().format(record)


class PrivateRotatingFileHandler(logging.FileHandler):
    """A FileHandler that opens lazily with mode 0600 and rotates at MAX_LOG_BYTES.

    Rotation renames kward.log -> kward.log.1 -> ... (BACKUPS kept). Several processes may
    share the file; appends use O_APPEND, so lines never interleave, and a rotation race
    at worst leaves one file a little over the limit. The file is opened with
    `kward.fsutil.open_own`: a symlink, a FIFO or a device in its place is never written
    through or waited on; logging to the file stops instead, with one warning on stderr
    (`stderr`, resolved at that moment), and the records are dropped.
    """

    def __init__(self, path: Path, stderr: Callable[[], TextIO] = lambda: sys.__stderr__ or sys.stderr):
        self._path = path
        self._stderr = stderr
        self._refused = False
        super().__init__(str(path), mode="a", encoding="utf-8", delay=True)

    def _open(self) -> io.TextIOWrapper:
        ensure_private_dir(self._path.parent)
        fd = open_own(self._path, APPEND_OWN, FILE_MODE)
        return open(fd, "a", encoding="utf-8")

    def emit(self, record: logging.LogRecord) -> None:
        """Never raises: when the log file cannot be opened (a read-only or full disk, a
        file where the logs directory should be) the record is dropped; when something
        else than a regular file of this user is in its place (a symlink, a FIFO, a
        device), so are all later ones, and one warning says why."""
        if self._refused:
            return
        try:
            if self.stream is None:
                self.stream = self._open()
            elif self.stream.tell() >= MAX_LOG_BYTES:
                self._rotate(self.stream)
                self.stream = self._open()
        except OSError as exc:
            if exc.errno in REFUSED:
                self._refuse(exc)
            return
        except ValueError:
            return
        logging.StreamHandler.emit(self, record)

    def _refuse(self, exc: BaseException) -> None:
        """Stop logging to the file; say so once. Caller holds the handler's lock."""
        self._refused = True
        self.stream = None  # (a rotation closed it)
        try:
            stream = self._stderr()
            stream.write(f"kward: not logging to {self._path}: {getattr(exc, 'strerror', None) or exc}\n")
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def _rotate(self, stream: io.TextIOWrapper) -> None:
        stream.close()
        for i in range(BACKUPS - 1, 0, -1):
            src = self._path.with_name(f"{self._path.name}.{i}")
            if os.path.lexists(src):
                os.replace(src, self._path.with_name(f"{self._path.name}.{i + 1}"))
        if os.path.lexists(self._path):
            os.replace(self._path, self._path.with_name(f"{self._path.name}.1"))


class EarlyRecords(logging.Handler):
    """Holds what the `kward` logger records before `configure` runs (reading the config
    that names the log level may itself warn), so that it goes to the log file, not to
    Python's last-resort handler on stderr. At most MAX records; any thread."""

    MAX = 100

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < self.MAX:
            self.records.append(record)


def hold_early_records() -> None:
    """Until `configure`, keep the `kward` logger's records (see EarlyRecords)."""
    logger = logging.getLogger("kward")
    logger.addHandler(EarlyRecords())
    logger.propagate = False


def log_to_stderr_only() -> None:
    """For a command that must create nothing (`kward doctor`): the `kward` logger's
    warnings go to stderr, worded as kward's own (StderrFormatter), and to no file."""
    logger = logging.getLogger("kward")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(StderrFormatter())
    stderr.addFilter(_not_shown_elsewhere)  # (what a check's own line shows: an MCP server's failure)
    logger.addHandler(stderr)
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def configure(logs_dir: str | os.PathLike[str], level: str | None, *, rpc_mode: bool,
              secrets: KnownSecrets | None = None) -> None:
    """Install the file handler (and a stderr handler where allowed) on the `kward` logger
    and on Python's warnings, replacing what an earlier call installed, and hand them what
    was held before (`hold_early_records`). In rpc mode a failing handler never prints to
    stderr. `secrets` are scrubbed from every record."""
    effective = logging.getLevelName(level) if level else logging.WARNING
    formatter = RedactingFormatter(_FORMAT, secrets)
    file_handler = PrivateRotatingFileHandler(Path(logs_dir) / "kward.log")
    file_handler.setFormatter(formatter)
    handlers: list[logging.Handler] = [file_handler]
    if not rpc_mode or (level is not None and effective < logging.WARNING):
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(StderrFormatter(secrets))
        stderr.addFilter(_not_shown_elsewhere)
        handlers.append(stderr)
    if rpc_mode:
        logging.raiseExceptions = False
    logging.captureWarnings(True)
    early: list[logging.LogRecord] = []
    for name in ("kward", "py.warnings"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if isinstance(handler, EarlyRecords):
                early.extend(handler.records)
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(effective)
        logger.propagate = False
        for handler in handlers:
            logger.addHandler(handler)
    for record in early:
        if record.levelno >= effective:
            for handler in handlers:
                handler.handle(record)


class StrayOutput:
    """Stands in for sys.stdout in rpc mode: stray prints become log lines, never frames.
    Any thread; a line longer than MAX_STRAY is logged in pieces."""

    encoding = "utf-8"
    errors = "replace"
    MAX_STRAY = 8192

    def __init__(self) -> None:
        self._log = logging.getLogger("kward.stdout")
        self._buf = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._buf += text
            lines = self._buf.split("\n")
            self._buf = lines.pop()
            while len(self._buf) > self.MAX_STRAY:
                lines.append(self._buf[: self.MAX_STRAY])
                self._buf = self._buf[self.MAX_STRAY:]
        for line in lines:
            self._log.warning("stray output on stdout: %s", line)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            rest, self._buf = self._buf, ""
        if rest:
            self._log.warning("stray output on stdout: %s", rest)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("stdout is reserved for protocol frames")
