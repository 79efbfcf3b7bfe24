"""A child process that keeps exchanging a workspace directory with a symlink to an
outside directory, for the symlink-race tests of the confined file tools and exports.

On Linux the two names are swapped atomically with ``renameat2(RENAME_EXCHANGE)``
(glibc's wrapper, or the raw syscall where the wrapper is missing), so the directory
name always exists and is, at any instant, either the real directory or the symlink.
Elsewhere the swap is four plain renames (with short windows where the name is
missing). The child runs on its own core; the tests call the tools meanwhile and assert
that outside content never shows.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

SWAPPER = r"""
import ctypes, os, platform, sys
a, b = sys.argv[1], sys.argv[2]
parent = os.getppid()
exchange, mode = None, "atomic"
try:
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        exchange = lambda: fn(-100, a.encode(), -100, b.encode(), 2)
    else:
        number = {"x86_64": 316, "aarch64": 276}.get(platform.machine())
        if number is not None and sys.platform.startswith("linux"):
            libc.syscall.restype = ctypes.c_long
            exchange = lambda: libc.syscall(number, -100, a.encode(), -100, b.encode(), 2)
    if exchange is not None and exchange() != 0:
        exchange = None
except (OSError, AttributeError):
    exchange = None
if exchange is None:
    mode = "renames"
    def exchange():
        os.rename(a, a + ".held")
        os.rename(b, a)
        os.rename(a + ".held", b)
    exchange()
sys.stdout.write(mode + "\n")
sys.stdout.flush()
while os.getppid() == parent:  # an orphan (the test run died) stops by itself
    for _ in range(1000):
        exchange()
"""


@contextlib.contextmanager
def swapping(directory: Path, outside: Path) -> Iterator[str]:
    """While the block runs, `directory` keeps being exchanged with a symlink to `outside`
    (the symlink's other name is ``<directory>.swap``, beside it). Yields ``"atomic"`` or
    ``"renames"``; at exit the child is killed and `directory` is the real one again."""
    link = directory.with_name(directory.name + ".swap")
    os.symlink(outside, link)
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(directory), str(link)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        mode = proc.stdout.readline().decode().strip()  # written after the first swap
        assert mode in ("atomic", "renames"), proc.stderr.read().decode()
        yield mode
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
        _restore(directory, link)


def _restore(directory: Path, link: Path) -> None:
    """Put the real directory back under its name and remove the symlink, whatever state
    the killed child left (exchanged, or between two of its renames)."""
    names = [directory, link, Path(str(directory) + ".held")]
    real = [p for p in names if p.is_dir() and not p.is_symlink()]
    assert len(real) == 1, names
    for p in names:
        if p.is_symlink():
            p.unlink()
    if real[0] != directory:
        os.rename(real[0], directory)
