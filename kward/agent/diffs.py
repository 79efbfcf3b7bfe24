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
  files, which `git apply` and `patch -p1` take. A name is written as git writes it
  (`quote_name`: in double quotes with C escapes when it holds a control character, ``"``,
  ``\\`` or a byte past ASCII; a tab after a name with a space), so that no name can break
  the patch or add a line to it. File bytes that are not UTF-8 are shown with U+FFFD.
- `complete=False` (a tool's list of changed files may have missed some, see
  `kward.agent.changes`) is carried into the summary and said in its note.

Reads are confined and bounded: each path is walked from the root without following any
symlink (`kward.confined.open_below`, ``follow=False``), so a symlink in the path (or in
place of the file) is ``notRegularFile`` and never read through, nor a FIFO or a device;
a file over MAX_FILE_BYTES (1 MiB) is not read (``tooLarge``); all reads of one summary
stop at MAX_READ_BYTES (16 MiB; later files are listed without counts, ``capped``). A
file that vanishes while it is read counts as missing.

Comparing is bounded too (difflib's cost grows with the product of the lines and the
lines each one matches on the other side, minutes for some 1 MiB pairs, and it cannot be
interrupted): splitting and indexing cost 2 units a line and `_Matcher` charges each search
the positions it will visit before making it, at most MAX_FILE_OPS (3 million, ~0.5 s) for
one file and MAX_SUMMARY_OPS (4 million) for all of one summary. A file past its own
budget is listed without counts (``tooLarge``, "too large to compare"), one past what is
left of the summary's without counts (``capped``). A few edits of a 1 MiB source file
cost a fraction of the file's budget; many edits spread over a file whose lines repeat
(blank lines, braces, imports) may not fit it. The text of a file's diff is not even
made past the lines left in the diff (``capped``, its counts given).

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
from itertools import accumulate
from typing import Callable, Mapping, Sequence

from kward.agent.changes import MAX_BASELINE_BYTES, MAX_PATHS, Baseline
from kward.confined import Escape, open_below, split_below
from kward.fsutil import read_fd
from kward.model import ChangeSummary, DiffFile, DiffOmitted, DiffStatus

MAX_FILE_BYTES = MAX_BASELINE_BYTES
MAX_READ_BYTES = 16 * 1024 * 1024
MAX_LISTED_FILES = 1000
MAX_DIFF_BYTES = 256 * 1024
MAX_DIFF_LINES = 4000
MAX_FILE_OPS = 3_000_000
MAX_SUMMARY_OPS = 4_000_000
CONTEXT_LINES = 3

#: The words of the note for each reason a file's diff is not in the text.
REASONS = {"binary": "binary", "tooLarge": f"over {MAX_FILE_BYTES // (1024 * 1024)} MiB",
           "unknownBaseline": "content before the change not known", "notRegularFile": "not a regular file",
           "unreadable": "unreadable", "capped": "past the diff's size caps"}
CAPS = ("tooLarge", "capped")  # the reasons that make a summary `truncated`
COSTLY = "too large to compare"  # the note's words for a file past MAX_FILE_OPS (``tooLarge``)
SPENT = "past what one summary reads and compares"  # for one past MAX_READ_BYTES or MAX_SUMMARY_OPS (``capped``)
INCOMPLETE = "A tool's list of the files it changed was incomplete: changed files may be missing here."


@dataclass(slots=True)
class _Now:
    """A path on disk now: `kind` ``missing``, ``file`` (`content` read), ``large`` (a
    regular file not read: too big, or the read budget is spent; `budget` says which),
    ``other`` (a symlink in the way, a directory, a FIFO, a device) or ``unreadable``."""

    kind: str
    content: bytes | None = None
    budget: bool = False


@dataclass(slots=True)
class _Budget:
    """What one summary may still spend: bytes read (`left`) and comparing work (`ops`)."""

    left: int
    ops: int


class _OverBudget(Exception):
    """Comparing a file would pass a budget: its own (`file` True) or the summary's."""

    def __init__(self, file: bool):
        super().__init__()
        self.file = file


class _Cost:
    """What comparing one file spends, in lines visited: at most MAX_FILE_OPS, and at most
    what is left of the summary's `budget.ops` (spent as it goes). One thread."""

    def __init__(self, budget: _Budget):
        self._budget = budget
        self._spent = 0

    def charge(self, ops: int) -> None:
        """Pay for `ops` before doing them; _OverBudget (nothing paid) when they do not fit."""
        if self._spent + ops > MAX_FILE_OPS:
            raise _OverBudget(True)
        if ops > self._budget.ops:
            raise _OverBudget(False)
        self._spent += ops
        self._budget.ops -= ops


class _Matcher(difflib.SequenceMatcher[str]):
    """A SequenceMatcher whose searches are paid for (`cost`): each `find_longest_match`
    costs the positions of ``b`` its rows will visit (``b2j``, as difflib's popularity cut
    left it) and its ranges, charged before it runs, so that it raises _OverBudget instead
    of running long. (Making it, ~2 units a line, is paid for by the caller.) One thread."""

    b2j: dict[str, list[int]]  # (set by SequenceMatcher: the positions of each line of b)

    def __init__(self, a: Sequence[str], b: Sequence[str], cost: _Cost):
        super().__init__(None, a, b)
        self._cost = cost
        self._sizes = len(a), len(b)
        b2j = self.b2j
        self._rows = [0, *accumulate(len(b2j.get(line, ())) for line in a)]  # the row costs, summed

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0,
                           bhi: int | None = None) -> difflib.Match:
        top, bottom = self._sizes[0] if ahi is None else ahi, self._sizes[1] if bhi is None else bhi
        self._cost.charge(self._rows[top] - self._rows[alo] + 4 * (top - alo) + (bottom - blo))
        return super().find_longest_match(alo, top, blo, bottom)


_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r",
            0x22: '\\"', 0x5C: "\\\\"}


def quote_name(name: str) -> str:
    """`name` (``a/<path>``, ``b/<path>``) as git writes it in a patch header with
    core.quotePath's default: as it is when it holds only printable ASCII other than ``"``
    and ``\\``; else in double quotes, ``\\t \\n \\" \\\\`` and the other C escapes, octal
    (``\\303\\274``) for any other control byte or byte past ASCII. The bytes are the name's
    on disk (UTF-8, surrogate-escaped bytes as they were; a lone surrogate as UTF-8 would
    write it)."""
    try:
        data = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte
        data = name.encode("utf-8", "surrogatepass")
    if all(0x20 <= c < 0x7F and c not in _ESCAPES for c in data):
        return name
    return '"' + "".join(_ESCAPES.get(c) or (chr(c) if 0x20 <= c < 0x7F else f"\\{c:03o}") for c in data) + '"'


def _header(mark: str, name: str | None) -> str:
    """A ``---`` or ``+++`` line; None: ``/dev/null``. A tab ends a name with a space (as
    git writes it), so that a trailing space or a date-like tail stays the name's."""
    if name is None:
        return f"{mark} /dev/null\n"
    quoted = quote_name(name)
    tab = "\t" if " " in quoted else ""
    return f"{mark} {quoted}{tab}\n"


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


def file_diff(path: str, old: bytes | None, new: bytes | None, budget: _Budget | None = None,
              room: int | None = None) -> tuple[str | None, int, int]:
    """The unified diff of `path` from `old` to `new` (None: no file on that side) and its
    added and removed line counts; the text is None when it would be longer than `room`
    lines (then only the counts are made). Raises _OverBudget when comparing them would
    pass MAX_FILE_OPS or what is left of `budget` (default: a summary's whole budget)."""
    before, after = old or b"", new or b""
    cost = _Cost(budget or _Budget(MAX_READ_BYTES, MAX_SUMMARY_OPS))
    cost.charge(2 * (before.count(b"\n") + after.count(b"\n") + 2))  # splitting both, indexing b, a's rows
    a, b = _lines(before), _lines(after)
    out: list[str] | None = []
    lines = added = removed = 0
    for group in _Matcher(a, b, cost).get_grouped_opcodes(CONTEXT_LINES):
        lines += 3 if not lines else 1  # (the headers and the hunk's line)
        for tag, i1, i2, j1, j2 in group:
            lines += (i2 - i1 if tag != "insert" else 0) + (j2 - j1 if tag in ("replace", "insert") else 0)
            if tag in ("replace", "delete"):
                removed += i2 - i1
            if tag in ("replace", "insert"):
                added += j2 - j1
        if room is not None and lines + 2 > room:  # (2: the No newline markers it may have)
            out = None
        if out is not None:
            _hunk(out, path, old is not None, new is not None, group, a, b)
    return None if out is None else "".join(out), added, removed


def _hunk(out: list[str], path: str, old: bool, new: bool, group: list[tuple[str, int, int, int, int]],
          a: list[str], b: list[str]) -> None:
    """Append the lines of one hunk (`group`: its opcodes) to `out`, the file's headers first
    (`old`, `new`: whether that side has a file)."""
    if not out:
        out.append(_header("---", "a/" + path if old else None))
        out.append(_header("+++", "b/" + path if new else None))
    first, last = group[0], group[-1]
    out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            out.extend(_marked(" ", a[i1:i2]))
            continue
        if tag in ("replace", "delete"):
            out.extend(_marked("-", a[i1:i2]))
        if tag in ("replace", "insert"):
            out.extend(_marked("+", b[j1:j2]))


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


def _entry(path: str, base: Baseline, now: _Now, budget: _Budget, room: int,
           scrub: Callable[[str], str] | None) -> tuple[DiffFile, str, str | None] | None:
    """The path's DiffFile, its diff text ("" when not shown: ``capped`` when it would pass
    `room` lines) and the note's words for why it is not shown when they are not
    REASONS[omitted]'s; None when it has no net change."""
    exists = now.kind != "missing"
    if not base.existed and not exists:
        return None
    if base.existed and base.content is not None and now.kind == "file" and now.content == base.content:
        return None
    status: DiffStatus = "added" if not base.existed else "deleted" if not exists else "modified"
    omitted: DiffOmitted | None = None
    if base.content is None:
        omitted = "unknownBaseline"
    elif now.kind == "other":
        omitted = "notRegularFile"
    elif now.kind == "unreadable":
        omitted = "unreadable"
    elif now.kind == "large":
        if now.budget:
            return DiffFile(path, status, None, None, omitted="capped"), "", SPENT
        omitted = "tooLarge"
    elif b"\x00" in base.content or (now.content is not None and b"\x00" in now.content):
        return DiffFile(path, status, None, None, binary=True, omitted="binary"), "", None
    if omitted is not None:
        return DiffFile(path, status, None, None, omitted=omitted), "", None
    try:
        text, added, removed = file_diff(path, base.content if base.existed else None,
                                         now.content if exists else None, budget, room)
    except _OverBudget as over:
        if over.file:
            return DiffFile(path, status, None, None, omitted="tooLarge"), "", COSTLY
        return DiffFile(path, status, None, None, omitted="capped"), "", SPENT
    if text is None:  # longer than the diff's room
        return DiffFile(path, status, added, removed, omitted="capped"), "", None
    if scrub is not None:
        text = scrub(text)
    return DiffFile(path, status, added, removed), text, None


def summarize(root: str, baselines: Mapping[str, Baseline], *, untracked: int = 0, complete: bool = True,
              scrub: Callable[[str], str] | None = None) -> ChangeSummary:
    """The net changes of `baselines` (path -> Baseline, paths relative to `root`, the
    workspace's real path) against the files now (module docstring). `untracked`: changes
    of further paths that were not tracked (named in the note); `complete` False: the
    changes tracked may miss files (said in the note). `scrub` is applied to each file's
    diff text (the known secrets)."""
    budget = _Budget(MAX_READ_BYTES, MAX_SUMMARY_OPS)
    files: list[tuple[DiffFile, str | None]] = []  # each with the note's words when not REASONS'
    chunks: list[str] = []
    size = lines = 0
    unlisted = 0
    for path in sorted(baselines):
        if len(files) >= MAX_LISTED_FILES:
            unlisted += 1
            continue
        found = _entry(path, baselines[path], _look(root, path, budget), budget, MAX_DIFF_LINES - lines, scrub)
        if found is None:
            continue
        entry, text, words = found
        if text:
            data = len(text.encode("utf-8", "surrogateescape"))
            count = text.count("\n")
            if size + data > MAX_DIFF_BYTES or lines + count > MAX_DIFF_LINES:
                entry = DiffFile(entry.path, entry.status, entry.added, entry.removed, omitted="capped")
            else:
                chunks.append(text)
                size, lines = size + data, lines + count
        files.append((entry, words))
    truncated = unlisted > 0 or untracked > 0 or any(f.omitted in CAPS for f, _ in files)
    return ChangeSummary(tuple(f for f, _ in files), "".join(chunks), truncated,
                         _note(files, unlisted, untracked, complete), complete)


def _note(files: list[tuple[DiffFile, str | None]], unlisted: int, untracked: int, complete: bool) -> str | None:
    parts = []
    left_out = [f"{f.path} ({words or REASONS[f.omitted]})" for f, words in files if f.omitted is not None]
    if left_out:
        parts.append("Not in the diff: " + ", ".join(left_out) + ".")
    if any(f.omitted == "capped" and words is None for f, words in files):
        parts.append(f"The diff holds at most {MAX_DIFF_BYTES // 1024} KiB and {MAX_DIFF_LINES} lines.")
    if unlisted:
        parts.append(f"{unlisted} more changed path(s) not looked at (at most {MAX_LISTED_FILES} files are listed).")
    if untracked:
        parts.append(f"{untracked} change(s) of further paths not tracked (at most {MAX_PATHS} paths per session).")
    if not complete:
        parts.append(INCOMPLETE)
    return " ".join(parts) or None
