"""The telemetry writer: one JSON line per record, appended to the day's file.

`TelemetryLog.write(category, event, payload)` redacts the payload (the key and pattern
rules of `kward.redact`, then `scrub`: the exact credential values kward holds), adds
`timestamp`, `category` and `event`, and appends the line with one `write()` to the
current file, opened with O_APPEND, so lines of several processes never interleave. No
fsync per record: these are statistics, and a turn must not wait for the disk.

The current file is `<directory>/<UTC date>.jsonl` or, once that holds `max_bytes`,
`<date>-1.jsonl`, `<date>-2.jsonl`, ... (the first of them under the limit); it is looked
at again (one stat) before each write, so a new day, a file another process filled, or a
file someone deleted is noticed at once. A name that holds anything but a regular file of
this user (a symlink, a FIFO, a device) is passed over like a full file, never written
through (`kward.fsutil.open_own`). A write that fails is logged once to the
diagnostic log and otherwise ignored: telemetry never fails a turn.

Thread contract: any thread; `_lock` guards the open file.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kward.fsutil import APPEND_OWN, FILE_MODE, ensure_private_dir, open_own
from kward.limits import LOG_ROTATION_BYTES as MAX_BYTES
from kward.redact import redact
from kward.timefmt import iso_from_epoch

log = logging.getLogger(__name__)

#: At most this many files a day (`<date>.jsonl`, `-1`, ... `-999`); then writes fail.
MAX_FILES_A_DAY = 1000


class TelemetryLog:
    """`scrub` gives a copy of a record with the known secrets masked
    (`kward.config.secrets.Snapshot.scrub_value`)."""

    def __init__(self, directory: Path, *, max_bytes: int = MAX_BYTES, clock: Callable[[], float] = time.time,
                 scrub: Callable[[dict[str, object]], dict[str, object]] | None = None):
        self.directory = Path(directory)
        self.max_bytes = max_bytes if max_bytes > 0 else MAX_BYTES
        self._clock = clock
        self._scrub = scrub
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._path: Path | None = None
        self._ident: tuple[int, int] | None = None
        self._warned = False

    def write(self, category: str, event: str, payload: dict[str, object]) -> bool:
        try:
            record: dict[str, object] = redact(payload)  # a copy
            if self._scrub is not None:
                record = self._scrub(record)
            now = self._clock()
            record.update(timestamp=iso_from_epoch(now), category=category, event=event)
            data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode("utf-8")
            with self._lock:
                os.write(self._current(now), data)
            return True
        except (OSError, ValueError, TypeError) as exc:
            if not self._warned:
                self._warned = True
                log.warning("telemetry logging failed: %s", exc)
            return False

    def _current(self, now: float) -> int:
        """The descriptor of the file to append to. Caller holds `_lock`."""
        date = time.strftime("%Y-%m-%d", time.gmtime(now))
        if self._fd is not None and self._path is not None and self._path.name.startswith(date):
            try:
                st = os.lstat(self._path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_dev, st.st_ino) == self._ident and st.st_size < self.max_bytes:
                return self._fd
        self.close_locked()
        ensure_private_dir(self.directory)
        for index in range(MAX_FILES_A_DAY):
            path = self.directory / (f"{date}.jsonl" if index == 0 else f"{date}-{index}.jsonl")
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                break
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_size < self.max_bytes:
                break
        else:
            raise OSError(errno.EFBIG, f"{MAX_FILES_A_DAY} telemetry files today", str(self.directory))
        fd = open_own(path, APPEND_OWN, FILE_MODE)  # (a link or FIFO put there meanwhile: refused)
        os.fchmod(fd, FILE_MODE)
        st = os.fstat(fd)
        self._fd, self._path, self._ident = fd, path, (st.st_dev, st.st_ino)
        return fd

    def close_locked(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd, self._path, self._ident = None, None, None

    def close(self) -> None:
        with self._lock:
            self.close_locked()
