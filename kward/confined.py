"""Confined file access: open, create and replace files below a root directory without
ever leaving it, even when the tree changes during the call.

The one primitive is `open_below`: it walks a path from the root one component at a
time, each opened relative to the descriptor of the previous directory with
``O_NOFOLLOW`` (``O_DIRECTORY`` for directories), so a component that is (or becomes) a
symlink is never followed by the kernel. What it reached is checked with ``fstat``
against the ``lstat`` taken before opening, and all further work goes through the
descriptor (read it, list it with ``os.scandir(fd)``, stat or create children with
``dir_fd``). Paths never contain ``..`` by the time they are walked: callers normalise
them textually first (`split_below`).

Symlinks met on the way are handled by the caller's choice (`follow`):

- ``follow=False``: any symlink is refused (`Escape`). For paths already resolved.
- ``follow=True``: the link's text is read (``readlink`` relative to the directory
  descriptor), joined textually to the directory that holds it (or taken as is when
  absolute), normalised, and the result must again lie below the root; then the walk
  restarts from the root on the new path. At most `MAX_HOPS` (40, the kernel's limit)
  symlinks per walk. So links inside the workspace that point inside keep working, and
  a link that points out, or a directory swapped for one at any moment, is refused.

Only directories and regular files are opened (FIFOs, sockets and devices are reported
with their ``lstat`` and no descriptor, so a read never blocks on a FIFO nor touches a
device). Writes (`replace_file`) create a temp file with ``dir_fd`` and rename it with
``src_dir_fd``/``dst_dir_fd`` inside one confined directory descriptor.

Pure functions over the filesystem: safe from any thread, no locks, no shared state.
Descriptors returned are owned by the caller (`Node` is a context manager). Stdlib
only (and `kward.fsutil`, stdlib only too), so the search worker (a child interpreter
started with ``-I -S``) can import it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Sequence

from kward.fsutil import pid_alive, read_fd  # noqa: F401 (read_fd: here for the tools)

MAX_HOPS = 40
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Regular files only ever get here after an lstat said so; O_NONBLOCK keeps a FIFO
#: swapped in meanwhile from blocking the open, O_NOCTTY a terminal from adopting us.
FILE_FLAGS = (os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
              | getattr(os, "O_NOCTTY", 0))


class Escape(Exception):
    """The path leaves the root: lexically, through a symlink pointing out, or through
    any symlink when the walk does not follow them."""


@dataclass
class Node:
    """What a walk reached below `root`.

    - `parts`: its components below the root, symlinks resolved (``[]`` for the root).
    - `fd`: an open descriptor for a directory or a regular file; None for a missing
      entry (``missing_ok``) or an entry of another type.
    - `st`: ``fstat`` of `fd`, the ``lstat`` of an entry of another type, None when missing.
    """

    root: str
    parts: list[str]
    fd: int | None = None
    st: os.stat_result | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        return os.path.join(self.root, *self.parts)

    @property
    def exists(self) -> bool:
        return self.st is not None

    @property
    def is_dir(self) -> bool:
        return self.fd is not None and self.st is not None and stat.S_ISDIR(self.st.st_mode)

    @property
    def is_file(self) -> bool:
        return self.fd is not None and self.st is not None and stat.S_ISREG(self.st.st_mode)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "Node":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def split_below(root: str, path: str) -> list[str] | None:
    """The components of `path` below `root` (``[]`` for the root itself), after
    textual normalisation (``..`` and ``.`` collapsed, no symlinks looked at); None when
    it lies outside. `root` must be absolute and normalised; a relative `path` is taken
    relative to it."""
    full = os.path.normpath(os.path.join(root, path))
    if full == root:
        return []
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not full.startswith(prefix):
        return None
    return full[len(prefix):].split(os.sep)


def open_below(root: str, parts: Sequence[str], *, follow: bool = True, missing_ok: bool = False,
               create: bool = False) -> Node:
    """Open ``root/parts`` without leaving `root` (see the module doc); the caller closes
    the returned node.

    `parts` are normalised components (`split_below`). `missing_ok`: a missing entry (or
    a missing directory on the way) yields a node with no descriptor whose `parts` are
    the resolved existing prefix plus the rest as given. `create`: missing components,
    the last included, are created as directories (``0777 & ~umask``) on the way.

    Raises `Escape`; `FileNotFoundError` (nothing there, unless `missing_ok`);
    `NotADirectoryError` whose ``filename`` is the resolved prefix (``a/b``) that is not
    a directory; ``OSError(ELOOP)`` after `MAX_HOPS` symlinks; any other OSError of the
    walk (permissions, a name too long).
    """
    pending = list(parts)
    hops = 0
    while True:
        outcome = _walk_once(root, pending, follow=follow, missing_ok=missing_ok, create=create)
        if isinstance(outcome, Node):
            return outcome
        hops += 1
        if hops > MAX_HOPS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), "/".join(parts))
        pending = outcome


def _walk_once(root: str, parts: list[str], *, follow: bool, missing_ok: bool,
               create: bool) -> Node | list[str]:
    """One walk from the root: the node reached, or the component list to walk next
    after a symlink (or after an entry changed between its lstat and its open)."""
    fd = os.open(root, DIR_FLAGS)
    done: list[str] = []
    here: os.stat_result | None = None  # fstat of `fd` once known
    try:
        for index, name in enumerate(parts):
            last = index == len(parts) - 1
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    if missing_ok:
                        return Node(root, done + parts[index:])
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)  # never follows a symlink named `name`
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if not follow:
                    raise Escape("/".join(done + [name]))
                try:
                    target = os.readlink(name, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.EINVAL, errno.ENOENT):
                        return parts  # no longer a symlink: look again
                    raise
                new = split_below(root, os.path.join(root, *done, target))  # absolute: as is
                if new is None:
                    raise Escape("/".join(done + [name]))
                return new + parts[index + 1:]
            if stat.S_ISDIR(st.st_mode):
                flags = DIR_FLAGS
            elif last and stat.S_ISREG(st.st_mode):
                flags = FILE_FLAGS
            elif last:
                return Node(root, done + [name], None, st)  # a FIFO, socket or device: not opened
            else:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), "/".join(done + [name]))
            opened = _open_same(name, flags, fd, st)
            if opened is None:
                return parts  # changed since the lstat: look again
            os.close(fd)
            fd, here = opened
            done.append(name)
        node = Node(root, done, fd, here if here is not None else os.fstat(fd))
        fd = -1  # handed over
        return node
    finally:
        if fd >= 0:
            os.close(fd)


def _open_same(name: str, flags: int, dir_fd: int, st: os.stat_result) -> tuple[int, os.stat_result] | None:
    """A descriptor of `name` and its fstat if it is still the entry `st` describes, else None."""
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EMLINK):
            return None  # gone, or no longer a directory, or a symlink now
        raise
    try:
        now = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or stat.S_IFMT(now.st_mode) != stat.S_IFMT(st.st_mode):
        os.close(fd)
        return None
    return fd, now


def replace_file(dir_fd: int, name: str, data: bytes, mode: int, tmp_name: str) -> None:
    """Atomically replace `name` in the directory `dir_fd` with `data` (permission bits
    exactly `mode`): `tmp_name` is created exclusively there, written, fsynced and
    renamed over `name`, all relative to `dir_fd`; then the directory is fsynced. The
    temp file is removed when anything fails."""
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                 dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # exact bits, whatever the umask
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def remove_dead_temps(dir_fd: int, pattern: re.Pattern[str]) -> int:
    """Unlink the regular files of `dir_fd` whose whole name matches `pattern` (with a
    group named ``pid``) when that process no longer exists and is not this one; the
    number removed. Errors (a racing remover, permissions) are ignored."""
    removed = 0
    own = os.getpid()
    with contextlib.suppress(OSError), os.scandir(dir_fd) as entries:
        for entry in entries:
            match = pattern.fullmatch(entry.name)
            if match is None:
                continue
            pid = int(match.group("pid"))
            if pid == own or pid_alive(pid):
                continue
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    os.unlink(entry.name, dir_fd=dir_fd)
                    removed += 1
    return removed
