"""Reading the files a shell command may change, for `kward.tools.changes`: signatures
(`lstat`), contents and symlink targets below a workspace root, the bounds on what is
kept, and `BaselineCache`.

Paths are workspace-relative and ``/``-separated; a file is reached without following any
symlink (`kward.confined.open_below`), so nothing outside the workspace is read.

Bounds: a content is kept when at most `MAX_FILE_BYTES`, and at most `MAX_CALL_BYTES` of
each kind per command (`Budget`). `RECENT_NS`: a file changed less than this before a look
may be written again within the filesystem's timestamp granularity without its signature
changing, so it is compared by content.

Threads: the functions are pure over the filesystem (any thread). `BaselineCache` is shared
by every watch of the process and guarded by its lock.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict

from kward.confined import Escape, open_below
from kward.fsutil import read_fd
from kward.tools.snapshot import Sig, signature

MAX_FILE_BYTES = 1024 * 1024
MAX_CALL_BYTES = 8 * 1024 * 1024
CACHE_BYTES = 16 * 1024 * 1024
RECENT_NS = 1_000_000_000


def read_file(root: str, rel: str, sig: Sig) -> bytes | None:
    """The bytes of regular file `rel` below `root` if it still has signature `sig`
    (reached without following any symlink); else None."""
    try:
        node = open_below(root, rel.split("/"), follow=False)
    except (Escape, OSError):
        return None
    with node:
        if not node.is_file or node.st is None or signature(node.st) != sig:
            return None
        data = read_fd(node.fd, sig[1] + 1) if node.fd is not None else b""
    return data if len(data) == sig[1] else None


def read_link(root: str, rel: str) -> bytes | None:
    """The target of symlink `rel` below `root`; None when it is none (or unreachable)."""
    try:
        return os.fsencode(os.readlink(os.path.join(root, rel)))
    except OSError:
        return None


def lstat_sig(root: str, rel: str) -> Sig | None:
    """The signature of the file (not directory) at `rel`; None when there is none."""
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:  # missing (or unreachable: the same for before and after)
        return None
    return None if stat.S_ISDIR(st.st_mode) else signature(st)


def is_regular(sig: Sig | None) -> bool:
    return sig is not None and stat.S_ISREG(sig[3])


def is_link(sig: Sig | None) -> bool:
    return sig is not None and stat.S_ISLNK(sig[3])


def git_mode(sig: Sig) -> str:
    """The mode git would record for a file of signature `sig` ("" for none it records)."""
    mode = sig[3]
    if stat.S_ISLNK(mode):
        return "120000"
    if stat.S_ISREG(mode):
        return "100755" if mode & stat.S_IXUSR else "100644"
    return ""


def same_bytes(root: str, rel: str, sig: Sig, data: bytes | None) -> bool:
    """Whether regular file `rel` (signature `sig` now) holds exactly `data`."""
    if data is None or not is_regular(sig) or sig[1] != len(data):
        return False
    return read_file(root, rel, sig) == data


class Budget:
    """Bytes still allowed for one kind of content in one command (`left`)."""

    def __init__(self, left: int | None = None) -> None:
        self.left = MAX_CALL_BYTES if left is None else left

    def take(self, size: int) -> bool:
        if size > MAX_FILE_BYTES or size > self.left:
            return False
        self.left -= size
        return True


class BaselineCache:
    """File contents read before commands, by absolute path and signature, least recently
    used dropped first past `capacity` bytes. Any thread; `_lock` guards the table."""

    def __init__(self, capacity: int = CACHE_BYTES):
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[Sig, bytes]] = OrderedDict()
        self._size = 0

    def read(self, root: str, rel: str, sig: Sig, *, cache: bool = True) -> bytes | None:
        """`read_file`, served from the cache while `sig` is unchanged. `cache=False` (a
        file changed moments ago, whose signature may not show a second change) reads
        it and keeps nothing."""
        key = os.path.join(root, rel)
        if cache:
            with self._lock:
                hit = self._items.get(key)
                if hit is not None and hit[0] == sig:
                    self._items.move_to_end(key)
                    return hit[1]
        data = read_file(root, rel, sig)
        if data is not None and cache and len(data) <= self.capacity:
            with self._lock:
                old = self._items.pop(key, None)
                if old is not None:
                    self._size -= len(old[1])
                self._items[key] = (sig, data)
                self._size += len(data)
                while self._size > self.capacity:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self._size -= len(dropped)
        return data


CACHE = BaselineCache()
