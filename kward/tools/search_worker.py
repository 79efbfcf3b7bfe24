"""The walk-and-match half of search_files, run in a child interpreter (see search.py).

Python's `re` holds the GIL for as long as one `search` call runs, and a backtracking
pattern can run for hours on one line; in the kward process that would freeze every
thread. So search.py starts this module as its own process group through
`kward.tools.process.run_command`, where its timeout and the turn's cancellation kill it.

Protocol: ``main(argv)`` takes one JSON object (``root``, ``start``, ``pattern``,
``ignore_case``, ``glob``, ``max_results``) and writes one JSON array per line to stdout,
flushed at once so that a killed search still leaves what it found:
``["hit", "<rel path>:<line>: <text>"]`` per matching line, then ``["stop", "results"]`` or
``["stop", "bytes"]`` when a cap ended the search. Exit status 0 when it ran to the end or
to a cap; anything else is a failure (the traceback goes to stderr).

When `start` cannot be walked to, one ``["error", "outside"]`` or ``["error", "missing"]``
line is written instead (exit status 0).

Rules (the search_files contract): walk `start` in sorted order (a directory's files,
then its subdirectories) without following symlinked directories; skip VCS directories,
symlinked files that do not resolve to a file inside `root`, files over 1 MiB and binary
files (a NUL byte in the first 8 KiB); show each matching line as ``path:line: text``
(path relative to `root`, text cut at 300 characters); stop at `max_results` lines or
50 KiB of output.

Confinement (`kward.confined`): `start`, already resolved by the parent, is opened from
`root` following no symlink; every directory below is opened relative to its parent's
descriptor with ``O_NOFOLLOW``, every file likewise and checked with ``fstat`` to be a
regular file, and a symlinked file is resolved by the confined walk from `root`. A
directory swapped for a symlink during the walk is therefore skipped, never followed.

Single-threaded; it shares nothing with the parent but its arguments and its stdout.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
import sys
from typing import Callable, Generator, Iterator, TypedDict

from kward.confined import DIR_FLAGS, FILE_FLAGS, Escape, Node, open_below, split_below
from kward.fsutil import read_fd

MAX_FILE_BYTES = 1024 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINE_CHARS = 300
MAX_OUTPUT_BYTES = 50 * 1024
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj"})


class SearchConfig(TypedDict):
    """The JSON object `main` takes (built by search.py)."""

    root: str  # the workspace realpath
    start: str  # the resolved path to search, inside `root`
    pattern: str
    ignore_case: bool
    glob: str | None
    max_results: int


class Hits:
    """Counts what was emitted and says why collection stopped ("results" or "bytes")."""

    def __init__(self, limit: int, emit: Callable[[list[str]], None]):
        self.limit = limit
        self.emit = emit
        self.count = 0
        self.size = 0
        self.stop: str | None = None

    def add(self, line: str) -> bool:
        """Emit a line; False once a cap is reached (the line is then not emitted)."""
        if self.count >= self.limit:
            self.stop = "results"
            return False
        cost = len(line.encode("utf-8", "surrogateescape")) + 1
        if self.size + cost > MAX_OUTPUT_BYTES:
            self.stop = "bytes"
            return False
        self.emit(["hit", line])
        self.count += 1
        self.size += cost
        return True


def glob_matches(glob: str, rel: str) -> bool:
    """fnmatch `glob` against the workspace-relative path or the basename; a leading
    ``**/`` also matches at the top level."""
    base = rel.rsplit("/", 1)[-1]
    candidates = [glob]
    if glob.startswith("**/"):
        candidates.append(glob[3:])
    return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(base, g) for g in candidates)


def open_start(root: str, start: str) -> Node:
    """`start` (resolved by the parent) opened from `root` following no symlink; raises
    `Escape` or OSError."""
    parts = split_below(root, start)
    if parts is None:
        raise Escape(start)
    return open_below(root, parts, follow=False)


def files(root: str, start: Node, wanted: Callable[[str], bool]) -> Iterator[tuple[str, int]]:
    """(path relative to `root`, open descriptor) of each regular file under the opened
    `start` (or `start` itself) whose relative path is `wanted`, sorted, confined to
    `root`; the consumer closes each descriptor, this closes `start`."""
    with start:
        fd = start.fd
        if fd is None:  # neither a file nor a directory
            return
        if start.is_file:
            if wanted("/".join(start.parts)):
                yield "/".join(start.parts), fd
                start.fd = None  # handed over
        elif start.is_dir:
            yield from _walk(root, fd, start.parts, wanted)


def _walk(root: str, top_fd: int, top_parts: list[str], wanted: Callable[[str], bool]) -> Iterator[tuple[str, int]]:
    """Depth first without recursion (a deep tree costs one descriptor per level, never
    Python's recursion limit); every descriptor it opens is closed, early exit included."""
    frames: list[tuple[int, list[str], Iterator[str]]] = []  # (dir fd, parts, subdirs left)
    subdirs = yield from _files_in(root, top_fd, top_parts, wanted)
    frames.append((top_fd, top_parts, iter(subdirs)))
    try:
        while frames:
            fd, parts, names = frames[-1]
            name = next(names, None)
            if name is None:
                frames.pop()
                if fd != top_fd:
                    os.close(fd)
                continue
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)  # a symlink swapped in: refused
            except OSError:
                continue
            frames.append((child, parts + [name], iter(())))
            subdirs = yield from _files_in(root, child, parts + [name], wanted)
            frames[-1] = (child, parts + [name], iter(subdirs))
    finally:
        for fd, _, _ in frames:
            if fd != top_fd:
                os.close(fd)


def _files_in(root: str, dir_fd: int, parts: list[str],
              wanted: Callable[[str], bool]) -> Generator[tuple[str, int], None, list[str]]:
    """Yield the wanted files of one directory (sorted); return its subdirectory names
    to walk (sorted, VCS directories left out)."""
    try:
        with os.scandir(dir_fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    subdirs: list[str] = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    subdirs.append(entry.name)
                continue
            linked = entry.is_symlink()
            if not linked and not entry.is_file(follow_symlinks=False):
                continue  # sockets, fifos, devices
        except OSError:
            continue
        rel = "/".join(parts + [entry.name])
        if not wanted(rel):
            continue
        fd = _open_linked(root, parts + [entry.name]) if linked else _open_file(dir_fd, entry.name)
        if fd is not None:
            yield rel, fd
    return subdirs


def _open_file(dir_fd: int, name: str) -> int | None:
    """A descriptor of the regular file `name` in `dir_fd`, never through a symlink."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _open_linked(root: str, parts: list[str]) -> int | None:
    """A descriptor of the regular file the symlink `parts` resolves to inside `root`."""
    try:
        node = open_below(root, parts)
    except (Escape, OSError):
        return None
    if not node.is_file:
        node.close()
        return None
    return node.fd


def read_text(fd: int) -> str | None:
    """The decoded content of a searchable file (its descriptor is closed), or None to skip it."""
    try:
        if os.fstat(fd).st_size > MAX_FILE_BYTES:
            return None
        data = read_fd(fd, MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", "replace")


def shorten(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return text[:MAX_LINE_CHARS] + f"... [{len(text) - MAX_LINE_CHARS} more chars]"


def search(config: SearchConfig, emit: Callable[[list[str]], None]) -> None:
    """Walk and match as the module doc says, emitting protocol lines through `emit`."""
    root, start, glob = config["root"], config["start"], config.get("glob")
    regex = re.compile(config["pattern"], re.IGNORECASE if config.get("ignore_case") else 0)
    hits = Hits(int(config["max_results"]), emit)
    try:
        node = open_start(root, start)
    except Escape:
        emit(["error", "outside"])
        return
    except OSError:
        emit(["error", "missing"])
        return
    for rel, fd in files(root, node, lambda rel: not glob or glob_matches(glob, rel)):
        text = read_text(fd)
        if text is None:
            continue
        for number, line in enumerate(text.split("\n"), 1):
            line = line.rstrip("\r")
            if regex.search(line) is not None and not hits.add(f"{rel}:{number}: {shorten(line)}"):
                break
        if hits.stop:
            emit(["stop", hits.stop])
            return


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = sys.stdout.buffer

    def emit(item: list[str]) -> None:
        out.write(json.dumps(item).encode("ascii") + b"\n")
        out.flush()

    config: SearchConfig = json.loads(args[0])
    search(config, emit)
    return 0
