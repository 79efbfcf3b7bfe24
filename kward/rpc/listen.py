"""Where `kward rpc` listens, and the Unix socket it listens on.

Addresses: ``stdio://`` (the default: one client on stdin/stdout), ``unix://PATH`` and
``unix://`` (the default path, `default_socket(config_dir)`: ``<config dir>/run/kward.sock``,
its directory made ``0700`` when missing). `parse_address` reads one (`AddressError` with
the words to show otherwise).

`listen(path)` binds the socket safely: the directory must be a real directory owned by
this user and open to nobody else (``0700``; one missing is made so; the default one, under
the config directory, is narrowed to 0700 when it is open to others), the socket is made
``0600`` (under a umask of 077, then chmod), and a socket file already there is probed: a
live server answering on it is `AlreadyServed` (nothing is touched), a stale one (nothing
accepts) is replaced; anything else in its place (a regular file, a link) is refused.
`peer_uid(sock)` is the uid of the process at the other end (``SO_PEERCRED`` on Linux,
``LOCAL_PEERCRED`` on macOS, None when the platform tells nothing); `same_user(sock)`
accepts only this process's uid.

Plain functions; any thread.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import NamedTuple

__all__ = ["Address", "AddressError", "AlreadyServed", "ListenError", "default_socket", "listen", "parse_address",
           "peer_uid", "same_user"]

SOCKET_NAME = "kward.sock"
MAX_PATH = 100  # sun_path holds 104 to 108 bytes, NUL included
BACKLOG = 16
PROBE_SECONDS = 1.0


class AddressError(ValueError):
    """An address kward cannot listen on or connect to (the message says why)."""


class ListenError(OSError):
    """The socket cannot be made where it was asked for (the message says why)."""


class AlreadyServed(ListenError):
    """A live server already listens on that path."""


class Address(NamedTuple):
    scheme: str  # "stdio" or "unix"
    path: str | None = None  # the socket's path (unix)


def default_socket(config_dir: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(config_dir), "run", SOCKET_NAME)


def parse_address(text: str, config_dir: str | os.PathLike[str]) -> Address:
    """``stdio://``, ``unix://`` or ``unix://PATH`` (``~`` expanded; relative to the
    current directory)."""
    if text == "stdio://":
        return Address("stdio")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme != "unix":
        raise AddressError(f"{text!r} is not an address kward knows: use stdio://, unix:// or unix://PATH")
    path = os.path.abspath(os.path.expanduser(rest)) if rest else default_socket(config_dir)
    if len(os.fsencode(path)) > MAX_PATH:
        raise AddressError(f"the socket path {path} is longer than {MAX_PATH} bytes (the system's limit)")
    if "\0" in path:
        raise AddressError("a socket path must not hold NUL")
    return Address("unix", path)


def _private_dir(directory: Path, *, narrow: bool) -> None:
    """`directory` exists (made 0700 when missing), is a real directory of this user and is
    open to nobody else (one open to others is narrowed to 0700 with `narrow`: kward's own
    directory; else refused). Raises ListenError."""
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            info = os.lstat(directory)
        except OSError as exc:
            raise ListenError(exc.errno, f"cannot make {directory}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ListenError(errno.ENOTDIR, f"{directory} is not a directory (a link or a file is not used)")
    if info.st_uid != os.getuid():
        raise ListenError(errno.EPERM, f"{directory} belongs to another user")
    if info.st_mode & 0o077:
        if not narrow:
            raise ListenError(errno.EPERM, f"{directory} is open to others (mode {info.st_mode & 0o777:o}; "
                                           f"700 expected)")
        os.chmod(directory, 0o700)  # (kward's own, under its config directory: narrowed, as config.json is)


class Listening(NamedTuple):
    """A bound, listening socket and the identity of the file it made (`inode`: (dev, ino)),
    so that its server removes only its own socket file at the end."""

    sock: socket.socket
    inode: tuple[int, int]


def listen(path: str, *, narrow_dir: bool = False) -> Listening:
    """A listening Unix socket at `path` (see the module doc; `narrow_dir`: the directory is
    kward's own, narrowed to 0700 when open to others). Raises AlreadyServed, ListenError.
    Two servers starting at once on one path are serialized by a lock on ``PATH.lock``
    (held from the probe of a socket already there to the bind), so only one of them
    replaces a stale socket and the other finds it served."""
    import fcntl

    target = Path(path)
    _private_dir(target.parent, narrow=narrow_dir)
    try:
        lock = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ListenError(exc.errno, f"cannot make {path}.lock: {exc.strerror}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _bind(target, path)
    finally:
        os.close(lock)  # (the lock goes with it)


def _bind(target: Path, path: str) -> Listening:
    """Under the path's lock: replace a stale socket, bind, listen."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None:
        if not stat.S_ISSOCK(info.st_mode):
            raise ListenError(errno.EEXIST, f"{path} exists and is not a socket: not replaced")
        if _answers(path):
            raise AlreadyServed(errno.EADDRINUSE, f"a kward server already listens on {path}")
        try:
            os.unlink(target)  # stale: nobody accepts on it
        except FileNotFoundError:
            pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:  # another server bound it between the probe and now
            raise AlreadyServed(errno.EADDRINUSE, f"a kward server already listens on {path}") from None
        raise ListenError(exc.errno, f"cannot listen on {path}: {exc.strerror}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    info = os.lstat(path)
    sock.listen(BACKLOG)
    return Listening(sock, (info.st_dev, info.st_ino))


def _answers(path: str) -> bool:
    """Whether something accepts connections on the socket at `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(PROBE_SECONDS)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:  # (a timeout: a server too busy to accept is still a server)
        return True
    finally:
        probe.close()
    return True


def connect(path: str, timeout: float | None = None) -> socket.socket:
    """A connection to the server listening at `path`, which must run as this user (a
    socket someone else put there is refused: PermissionError). Raises OSError."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        if not same_user(sock):
            raise PermissionError(errno.EPERM, f"the server at {path} runs as another user: not used")
    except OSError:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the peer of a connected Unix socket, None when the platform cannot tell."""
    if hasattr(socket, "SO_PEERCRED"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    if sys.platform == "darwin":  # LOCAL_PEERCRED: struct xucred {u_int version; uid_t uid; ...}
        local_peercred, sol_local = 0x001, 0
        raw = sock.getsockopt(sol_local, local_peercred, 76)
        _version, uid = struct.unpack_from("Ii", raw)
        return int(uid)
    return None


def same_user(sock: socket.socket) -> bool:
    """True when the peer runs as this process's user (a platform that cannot tell: False)."""
    try:
        uid = peer_uid(sock)
    except OSError:
        return False
    return uid is not None and uid == os.getuid()
