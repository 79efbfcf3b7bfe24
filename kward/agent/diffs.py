"""The net changes of a set of baselines against the workspace as it is now: the
`ChangeSummary` of `turnDiff` and `sessions/diff`.

`summarize(root, baselines)` looks at each tracked path on disk now (in path order) and
compares it with its baseline (`kward.agent.changes.Baseline`):

- no file before, a file now: ``added``; a file before, none now: ``deleted``; else
  ``modified``. A file created and removed again, or whose content is its baseline's again,
  is left out. A baseline of unknown content that still has a file is ``modified``.
- `added`/`removed` count the lines of the text diff (None when the file is binary, its
  baseline unknown, or one side too large, unreadable or not a regular file).
- The diff text is one unified diff (``--- a/p``, ``+++ b/p``, ``/dev/null`` for a missing
  side, 3 lines of context, ``\\ No newline at end of file`` as git writes it) of the text
  files, which `git apply` and `patch -p1` take. File bytes that are not UTF-8 are shown
  with U+FFFD.

Reads are confined and bounded: each path is walked from the root without following any
symlink (`kward.confined.open_below`, ``follow=False``), so a symlink in the path (or in
place of the file) is ``notRegularFile`` and never read through, nor a FIFO or a device;
a file over MAX_FILE_BYTES (1 MiB) is not read (``tooLarge``); all reads of one summary
stop at MAX_READ_BYTES (16 MiB, as diffing a rewritten file costs up to ~0.2 s per MiB;
later files are listed without counts, ``capped``). A file that vanishes while it is read
counts as missing.

Caps on the result: at most MAX_LISTED_FILES (1,000) files; the diff text holds whole
files' diffs, in path order, while it stays within MAX_DIFF_BYTES (256 KiB) and
MAX_DIFF_LINES (4,000 lines): a file that does not fit is left out of it (``capped``; its
counts are still given) and later files that fit still go in. `truncated` says that a cap
left something out; `note` names every file whose diff is not in the text and why.

Pure functions over the filesystem, any thread, no locks.
"""

from __future__ import annotations

import difflib
import errno
from dataclasses import dataclass
from typing import Callable, Mapping

from kward.agent.changes import MAX_BASELINE_BYTES, MAX_PATHS, Baseline
from kward.confined import Escape, open_below, split_below
from kward.fsutil import read_fd
from kward.model import ChangeSummary, DiffFile

MAX_FILE_BYTES = MAX_BASELINE_BYTES
MAX_READ_BYTES = 16 * 1024 * 1024
MAX_LISTED_FILES = 1000
MAX_DIFF_BYTES = 256 * 1024
MAX_DIFF_LINES = 4000
CONTEXT_LINES = 3

#: The words of the note for each reason a file's diff is not in the text.
REASONS = {"binary": "binary", "tooLarge": f"over {MAX_FILE_BYTES // (1024 * 1024)} MiB",
           "unknownBaseline": "content before the change not known", "notRegularFile": "not a regular file",
           "unreadable": "unreadable", "capped": "past the diff's size caps"}
CAPS = ("tooLarge", "capped")  # the reasons that make a summary `truncated`


@dataclass(slots=True)
class _Now:
    """A path on disk now: `kind` ``missing``, ``file`` (`content` read), ``large`` (a
    regular file not read: too big, or the read budget is spent; `budget` says which),
    ``other`` (a symlink in the way, a directory, a FIFO, a device) or ``unreadable``."""

    kind: str
    content: bytes | None = None
    budget: bool = False


class _Budget:
    def __init__(self, left: int):
        self.left = left


def _look(root: str, path: str, budget: _Budget) -> _Now:
    parts = split_below(root, path)
    if parts is None:
        return _Now("other")
    try:
        node = open_below(root, parts, follow=False, missing_ok=True)
    except Escape:
        return _Now("other")  # a symlink in the path: never followed
    except (NotADirectoryError, ValueError):
        return _Now("missing")  # a file where a directory of the path was
    except OSError as exc:
        return _Now("unreadable" if exc.errno != errno.ELOOP else "other")
    with node:
        if node.st is None:
            return _Now("missing")
        if not node.is_file or node.fd is None:
            return _Now("other")
        size = node.st.st_size
        if size > MAX_FILE_BYTES:
            return _Now("large")
        if size > budget.left:
            return _Now("large", budget=True)
        try:
            data = read_fd(node.fd, MAX_FILE_BYTES + 1)
        except OSError:
            return _Now("unreadable")
    budget.left -= len(data)
    if len(data) > MAX_FILE_BYTES:  # grew since the stat
        return _Now("large")
    return _Now("file", data)


def _lines(data: bytes) -> list[str]:
    """The lines of `data` as text, each with its ``\\n`` (the last may have none)."""
    parts = data.decode("utf-8", "replace").split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def file_diff(path: str, old: bytes | None, new: bytes | None) -> tuple[str, int, int]:
    """The unified diff of `path` from `old` to `new` (None: no file on that side) and its
    added and removed line counts."""
    a, b = _lines(old or b""), _lines(new or b"")
    out: list[str] = []
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, a, b)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        if not out:
            out.append(f"--- {'a/' + path if old is not None else '/dev/null'}\n")
            out.append(f"+++ {'b/' + path if new is not None else '/dev/null'}\n")
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_marked(" ", a[i1:i2]))
                continue
            if tag in ("replace", "delete"):
                out.extend(_marked("-", a[i1:i2]))
                removed += i2 - i1
            if tag in ("replace", "insert"):
                out.extend(_marked("+", b[j1:j2]))
                added += j2 - j1
    return "".join(out), added, removed


def _range(start: int, stop: int) -> str:
    """A hunk range as unified diffs write it (1-based; an empty range names the line before)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _marked(mark: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        out.append(mark + line if line.endswith("\n") else f"{mark}{line}\n\\ No newline at end of file\n")
    return out


def _entry(path: str, base: Baseline, now: _Now, scrub: Callable[[str], str] | None) -> tuple[DiffFile, str] | None:
    """The path's DiffFile and its diff text ("" when not shown); None when it has no net
    change."""
    exists = now.kind != "missing"
    if not base.existed and not exists:
        return None
    if base.existed and base.content is not None and now.kind == "file" and now.content == base.content:
        return None
    status = "added" if not base.existed else "deleted" if not exists else "modified"
    omitted = None
    if base.content is None:
        omitted = "unknownBaseline"
    elif now.kind == "other":
        omitted = "notRegularFile"
    elif now.kind == "unreadable":
        omitted = "unreadable"
    elif now.kind == "large":
        omitted = "capped" if now.budget else "tooLarge"
    elif b"\x00" in base.content or (now.content is not None and b"\x00" in now.content):
        return DiffFile(path, status, None, None, binary=True, omitted="binary"), ""
    if omitted is not None:
        return DiffFile(path, status, None, None, omitted=omitted), ""
    text, added, removed = file_diff(path, base.content if base.existed else None, now.content if exists else None)
    if scrub is not None:
        text = scrub(text)
    return DiffFile(path, status, added, removed), text


def summarize(root: str, baselines: Mapping[str, Baseline], *, untracked: int = 0,
              scrub: Callable[[str], str] | None = None) -> ChangeSummary:
    """The net changes of `baselines` (path -> Baseline, paths relative to `root`, the
    workspace's real path) against the files now (module docstring). `untracked`: changes
    of further paths that were not tracked (named in the note). `scrub` is applied to each
    file's diff text (the known secrets)."""
    budget = _Budget(MAX_READ_BYTES)
    files: list[DiffFile] = []
    chunks: list[str] = []
    size = lines = 0
    unlisted = 0
    for path in sorted(baselines):
        if len(files) >= MAX_LISTED_FILES:
            unlisted += 1
            continue
        found = _entry(path, baselines[path], _look(root, path, budget), scrub)
        if found is None:
            continue
        entry, text = found
        if text:
            data = len(text.encode("utf-8", "surrogateescape"))
            count = text.count("\n")
            if size + data > MAX_DIFF_BYTES or lines + count > MAX_DIFF_LINES:
                entry = DiffFile(entry.path, entry.status, entry.added, entry.removed, omitted="capped")
            else:
                chunks.append(text)
                size, lines = size + data, lines + count
        files.append(entry)
    truncated = unlisted > 0 or untracked > 0 or any(f.omitted in CAPS for f in files)
    return ChangeSummary(tuple(files), "".join(chunks), truncated, _note(files, unlisted, untracked))


def _note(files: list[DiffFile], unlisted: int, untracked: int) -> str | None:
    parts = []
    left_out = [f"{f.path} ({REASONS[f.omitted]})" for f in files if f.omitted is not None]
    if left_out:
        parts.append("Not in the diff: " + ", ".join(left_out) + ".")
    if any(f.omitted == "capped" for f in files):
        parts.append(f"The diff holds at most {MAX_DIFF_BYTES // 1024} KiB and {MAX_DIFF_LINES} lines.")
    if unlisted:
        parts.append(f"{unlisted} more changed path(s) not looked at (at most {MAX_LISTED_FILES} files are listed).")
    if untracked:
        parts.append(f"{untracked} change(s) of further paths not tracked (at most {MAX_PATHS} paths per session).")
    return " ".join(parts) or None
