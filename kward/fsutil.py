"""Small filesystem helpers shared by every store: private directories, atomic writes,
advisory locks, and the removal of temp files that crashed processes left behind.

Thread/process contract: `atomic_write_bytes` never leaves a half-written file at `path`
(temp file in the same directory, fsync, rename, fsync of the directory); concurrent
writers in other processes see the old or the new content, never a mix. `file_lock` is an
flock on a sidecar file and serializes read-modify-write cycles across processes.
`remove_stale_files` deletes only temp files whose writer process is gone (see there).
Errors are plain OSErrors; the boundaries convert them (`errors.as_kward_error`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterable, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 where missing; return it."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(d, DIR_MODE)  # umask may have narrowed or widened the mode
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    return path


def fsync_dir(path: Path) -> None:
    """Make a rename or create inside `path` durable (best effort on odd filesystems)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: The temp files of `atomic_write_bytes`: ``.<name>.<pid>.<8 hex>.tmp``.
ATOMIC_TEMP = re.compile(r"^\..+\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp$")


@contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """`with naming(path):` gives an OSError raised in the block without a file name (a
    `write` that finds the disk full, an fsync) `path` as its name, so the error says which
    file failed."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def atomic_write_bytes(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace `path` with `data` atomically; the file ends with permissions `mode`."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with naming(path), os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


class file_lock:
    """`with file_lock(lock_path, shared=False):` holds an exclusive (or shared) flock on
    `lock_path` for the duration of the block. One use at a time (not reentrant)."""

    __slots__ = ("lock_path", "shared", "_fd")

    def __init__(self, lock_path: Path, *, shared: bool = False):
        self.lock_path = lock_path
        self.shared = shared
        self._fd = -1

    def __enter__(self) -> None:
        ensure_private_dir(self.lock_path.parent)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, *exc_info: object) -> None:
        fd, self._fd = self._fd, -1
        os.close(fd)  # closing the descriptor releases the lock


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one another user owns counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False  # gone, or a number no process id can be
    except OSError:
        return True  # EPERM: another user's; anything else: keep what may be alive
    return True


STALE_GRACE = 60.0  # seconds: a younger temp file is never touched
STALE_MAX_AGE = 3600.0  # seconds: no write of ours keeps a temp file open this long


def remove_stale_files(directory: str | Path, pattern: "re.Pattern[str]", *, grace: float = STALE_GRACE,
                       max_age: float | None = STALE_MAX_AGE, names: Iterable[str] | None = None) -> int:
    """Delete the files in `directory` whose names match `pattern` (which has a `pid`
    group: the writer's process id) and that a crash left behind; return how many.

    A file is stale when it is older than `grace` seconds and either its writer is not
    alive, or it is older than `max_age` (None: never by age alone, e.g. for files a live
    process keeps for long; a pid reused by an unrelated process otherwise keeps a file
    forever). The grace keeps the files of processes this one cannot see (another pid
    namespace or machine sharing the directory) during their short write. This process's
    own files are never removed. One scandir (none when the caller already listed the
    directory and passes the candidate `names`), a stat per matching name; files that
    vanish or cannot be removed meanwhile are skipped. Any thread; no lock is needed (a writer's
    rename or unlink of its own file and ours race harmlessly).
    """
    if names is None:
        try:
            with os.scandir(directory) as entries:
                names = [entry.name for entry in entries]
        except OSError:
            return 0
    now, own, removed = time.time(), os.getpid(), 0
    for name in names:
        match = pattern.match(name)
        if match is None:
            continue
        pid = int(match.group("pid"))
        path = os.path.join(directory, name)
        try:
            age = now - os.stat(path, follow_symlinks=False).st_mtime
            if pid == own or age < grace or (pid_alive(pid) and (max_age is None or age < max_age)):
                continue
            os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def remove_stale_temps(directory: str | Path) -> int:
    """`remove_stale_files(directory, ATOMIC_TEMP)`: the temp files of `atomic_write_bytes`
    that a killed writer left ."""
    try:
        with os.scandir(directory) as entries:
            names = [entry.name for entry in entries if entry.name.endswith(".tmp")]
    except OSError:
        return 0
    if not names:
        return 0
    return remove_stale_files(directory, ATOMIC_TEMP, names=names)


def read_fd(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes from the current position of `fd` (fewer only at its end)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
