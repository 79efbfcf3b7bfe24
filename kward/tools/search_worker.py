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

Rules (the search_files contract): walk `start` in sorted order without following
symlinked directories; skip VCS directories, symlinked files that resolve outside
`root`, files over 1 MiB and binary files (a NUL byte in the first 8 KiB); show each
matching line as ``path:line: text`` (path relative to `root`, text cut at 300
characters); stop at `max_results` lines or 50 KiB of output.

Single-threaded; it shares nothing with the parent but its arguments and its stdout.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
from typing import Callable, Iterator

from kward.tools.paths import is_inside

MAX_FILE_BYTES = 1024 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINE_CHARS = 300
MAX_OUTPUT_BYTES = 50 * 1024
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj"})


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


def files(root: str, start: str) -> Iterator[str]:
    """Regular files under `start` (or `start` itself), sorted, confined to `root`."""
    if os.path.isfile(start):
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                real = os.path.realpath(full)
                if not is_inside(real, root) or not os.path.isfile(real):
                    continue
            elif not os.path.isfile(full):
                continue  # sockets, fifos, devices
            yield full


def read_text(full: str) -> str | None:
    """The decoded content of a searchable file, or None to skip it."""
    try:
        if os.path.getsize(full) > MAX_FILE_BYTES:
            return None
        with open(full, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", "replace")


def shorten(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return text[:MAX_LINE_CHARS] + f"... [{len(text) - MAX_LINE_CHARS} more chars]"


def relative(root: str, full: str) -> str:
    """`full` relative to the root, with `/` separators."""
    return os.path.relpath(full, root).replace(os.sep, "/")


def search(config: dict, emit: Callable[[list[str]], None]) -> None:
    """Walk and match as the module doc says, emitting protocol lines through `emit`."""
    root, start, glob = config["root"], config["start"], config.get("glob")
    regex = re.compile(config["pattern"], re.IGNORECASE if config.get("ignore_case") else 0)
    hits = Hits(int(config["max_results"]), emit)
    for full in files(root, start):
        rel = relative(root, full)
        if glob and not glob_matches(glob, rel):
            continue
        text = read_text(full)
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

    search(json.loads(args[0]), emit)
    return 0
