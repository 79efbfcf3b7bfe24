"""Small filesystem helpers shared by every store: private directories, atomic writes,
advisory locks, and the removal of temp files that crashed processes left behind.

Thread/process contract: `atomic_write_bytes` never leaves a half-written file at `path`
(temp file in the same directory, fsync, rename, fsync of the directory); concurrent
writers in other processes see the old or the new content, never a mix. `file_lock` is an
flock on a sidecar file and serializes read-modify-write cycles across processes.
`remove_stale_files` deletes only temp files whose writer process is gone (see there).
Errors are plain OSErrors; the boundaries convert them (`errors.as_kward_error`).

kward's own files under the config directory are input like any other: `open_own` and
`read_own` open them without following a final symlink and without blocking on a FIFO,
accept only a regular file that this user owns, and read at most a stated size, so a
symlink, a FIFO, a device or a huge file in their place is a clear OSError, never a hang,
a read of /dev/zero or a write through a link.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterable, Iterator, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600

#: Flags of every open of kward's own files: no final symlink followed, no wait on a FIFO
#: (the open of a FIFO without a writer returns at once; for writing, ENXIO), no terminal
#: adopted, not inherited by children.
OWN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
READ_OWN = os.O_RDONLY | OWN_FLAGS
APPEND_OWN = os.O_WRONLY | os.O_CREAT | os.O_APPEND | OWN_FLAGS


class UnusableFile(OSError):
    """One of kward's own files is not what it must be (a link, not a regular file,
    another user's, too big): `errors.FilesystemError` answers it `unusable_file`."""


def own_file_error(path: Path | str, problem: str, code: int = errno.EINVAL) -> UnusableFile:
    """The OSError for one of kward's own files that is not what it must be."""
    return UnusableFile(code, problem, str(path))


def open_own(path: Path | str, flags: int = READ_OWN, mode: int = FILE_MODE) -> int:
    """A descriptor of `path`, which must be a regular file owned by this user (flags
    should include `OWN_FLAGS`; with O_CREAT a missing file is created with `mode`).

    A symlink in its place: ELOOP, "is a symbolic link (kward does not follow links for
    its own files)"; a FIFO, socket, device or directory: EINVAL, "is not a regular file";
    another user's file: EPERM. FileNotFoundError as usual when it is missing. The
    descriptor is in blocking mode again when returned (so writes to it behave as on
    any file). Any thread."""
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise own_file_error(path, "is a symbolic link (kward does not follow links for its own files)",
                                 errno.ELOOP) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, opened for writing
            raise own_file_error(path, "is not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise own_file_error(path, "is not a regular file")
        if st.st_uid != os.geteuid():
            raise own_file_error(path, f"is owned by another user (uid {st.st_uid})", errno.EPERM)
        if flags & os.O_NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_own(path: Path | str, limit: int) -> bytes:
    """The whole content of kward's own file `path` (see `open_own`), at most `limit`
    bytes: a larger file is EFBIG, "is larger than N bytes", and is not read. Any thread."""
    fd = open_own(path)
    try:
        if os.fstat(fd).st_size > limit:
            raise own_file_error(path, f"is larger than {limit} bytes", errno.EFBIG)
        data = read_fd(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while it was read
        raise own_file_error(path, f"is larger than {limit} bytes", errno.EFBIG)
    return data


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
        fd = open_own(self.lock_path, os.O_RDWR | os.O_CREAT | OWN_FLAGS)
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


class PrivateContent(NamedTuple):
    """What `read_private` read: the content, and the file's permission bits after any
    narrowing (taken from the descriptor that was read)."""

    data: bytes
    mode: int


def read_private(path: Path | str, limit: int) -> PrivateContent:
    """`read_own` for a file that holds credentials (auth.json): a mode with any bit
    beyond 0600 is first narrowed to 0600 on the open descriptor, with a warning in the
    log. One open, one fstat: the mode reported is the one of the file that was read.
    FileNotFoundError when it is missing, UnusableFile or another OSError for the rest.
    Any thread."""
    fd = open_own(path)
    try:
        st = os.fstat(fd)
        if st.st_size > limit:
            raise own_file_error(path, f"is larger than {limit} bytes", errno.EFBIG)
        mode = stat.S_IMODE(st.st_mode)
        if mode & ~FILE_MODE:
            os.fchmod(fd, FILE_MODE)
            import logging  # (only when a mode is narrowed)

            logging.getLogger(__name__).warning("%s had mode %04o (wider than %04o); kward set it to %04o",
                                                path, mode, FILE_MODE, FILE_MODE)
            mode = FILE_MODE
        data = read_fd(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while it was read
        raise own_file_error(path, f"is larger than {limit} bytes", errno.EFBIG)
    return PrivateContent(data, mode)


def file_problem(exc: OSError) -> str:
    """One line for an OSError of `read_own` or `read_private`: the file and what is wrong."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or type(exc).__name__}"
