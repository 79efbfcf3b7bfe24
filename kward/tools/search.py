"""search_files: a regular-expression search over workspace files (new in kward).

Walks `path` (default the workspace root) in sorted order without following symlinked
directories; skips VCS directories, symlinked files that resolve outside the workspace,
files over 1 MiB and binary files (a NUL byte in the first 8 KiB). Each matching line is
shown as ``path:line: text`` (path relative to the workspace root, text cut at 300
characters). Results stop at `max_results` (default 100, at most 500) or 50 KiB of output,
with a note saying so.

The handler runs on the turn's worker thread and checks `ctx.cancel` between files
(raising `kward.errors.Canceled`). Python's `re` cannot be interrupted inside one line,
so a pathological pattern is bounded only by the 1 MiB file cap.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Iterator

from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec
from kward.tools.paths import is_inside, relative_display, resolve_existing

log = logging.getLogger(__name__)

DEFAULT_MAX_RESULTS = 100
MAX_RESULTS_CAP = 500
MAX_FILE_BYTES = 1024 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINE_CHARS = 300
MAX_OUTPUT_BYTES = 50 * 1024
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj"})


@dataclass
class _Hits:
    """The collected result lines and why collection stopped."""

    limit: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    stop: str | None = None  # "results" or "bytes"

    def add(self, line: str) -> bool:
        """Record a line; False once a cap is reached (the line is then not kept)."""
        if len(self.lines) >= self.limit:
            self.stop = "results"
            return False
        cost = len(line.encode("utf-8")) + 1
        if self.size + cost > MAX_OUTPUT_BYTES:
            self.stop = "bytes"
            return False
        self.lines.append(line)
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


def _files(root: str, start: str) -> Iterator[str]:
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


def _read_text(full: str) -> str | None:
    """The decoded content of a searchable file, or None to skip it."""
    try:
        if os.path.getsize(full) > MAX_FILE_BYTES:
            return None
        with open(full, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        log.debug("search_files skipped %s: %s", full, exc)
        return None
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", "replace")


def _shorten(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return text[:MAX_LINE_CHARS] + f"... [{len(text) - MAX_LINE_CHARS} more chars]"


def search_files(args: Args, ctx: ToolContext) -> ToolResult:
    """Run the search; see the module doc."""
    pattern = args.string("pattern")
    path = args.string("path", required=False, default=".") or "."
    glob = args.string("glob", required=False)
    case_sensitive = args.boolean("case_sensitive", default=True)
    max_results = args.integer("max_results", default=DEFAULT_MAX_RESULTS)
    if max_results is None or max_results < 1:
        raise ToolError("max_results must be positive")
    max_results = min(max_results, MAX_RESULTS_CAP)
    if not pattern:
        raise ToolError("pattern is required")
    try:
        regex = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise ToolError(f"invalid regex: {exc}") from exc
    start = resolve_existing(ctx.workspace_root, path)
    if not os.path.isdir(start) and not os.path.isfile(start):
        raise ToolError(f"not a directory: {path}")

    root = str(ctx.workspace_root)
    hits = _Hits(max_results)
    files_with_hits = 0
    for full in _files(root, start):
        ctx.cancel.raise_if_cancelled()
        rel = relative_display(ctx.workspace_root, full)
        if glob and not glob_matches(glob, rel):
            continue
        text = _read_text(full)
        if text is None:
            continue
        matched = False
        for number, line in enumerate(text.split("\n"), 1):
            line = line.rstrip("\r")
            if regex.search(line) is None:
                continue
            matched = True
            if not hits.add(f"{rel}:{number}: {_shorten(line)}"):
                break
        files_with_hits += matched
        if hits.stop:
            break

    if not hits.lines:
        return ToolResult.text(f"No matches found for /{pattern}/ in {path}.")
    out = "\n".join(hits.lines)
    if hits.stop == "results":
        out += f"\n\n[Results capped at {max_results} matches. Narrow the pattern, path or glob to see more.]"
    elif hits.stop == "bytes":
        out += (f"\n\n[Output capped at {MAX_OUTPUT_BYTES} bytes after {len(hits.lines)} matches. "
                "Narrow the pattern, path or glob to see more.]")
    log.debug("search_files %r: %d lines in %d files", pattern, len(hits.lines), files_with_hits)
    return ToolResult.text(out)


SPECS = (
    ToolSpec(
        name="search_files",
        description=(
            "Search workspace files with a regular expression (Python re syntax). Returns "
            "path:line: text lines. Skips .git and other VCS directories, binary files and "
            "files over 1 MiB."
        ),
        properties={
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "Workspace-relative directory (or file) to search; default the root."},
            "glob": {"type": "string", "description": "Only files whose relative path or name matches this glob, e.g. *.py."},
            "case_sensitive": {"type": "boolean", "description": "Match case; default true."},
            "max_results": {"type": "integer", "description": f"Maximum matching lines; default {DEFAULT_MAX_RESULTS}, at most {MAX_RESULTS_CAP}."},
        },
        required=("pattern",),
        handler=search_files,
    ),
)
