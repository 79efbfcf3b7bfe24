"""The original's single-hunk unified diff, shown after write_file and edit_file.

Algorithm: split both texts into lines on ``\\n`` (a final newline ends the last line;
it does not start an empty one), trim the common prefix and suffix, keep up to 3 lines of
context on each side and print one hunk::

    --- <path>
    +++ <path>
    @@ -<start>,<oldLen> +<start>,<newLen> @@
     context
    -removed
    +added

Both starts are the 1-based first context line (the original's quirk, kept for clients
that parse it). A diff over `MAX_DIFF_BYTES` (8 KiB) is cut at that many bytes and gets
the note ``... diff truncated to 8192 bytes; full diff stats: +A|-D. Use read_file to
inspect current content.``

Pure functions, safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTEXT_LINES = 3
MAX_DIFF_BYTES = 8 * 1024


@dataclass(frozen=True, slots=True)
class Diff:
    """A computed diff: its full text and its added/removed line counts."""

    text: str
    additions: int
    deletions: int


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def unified_diff(path: str, old: str, new: str) -> Diff:
    """The full single-hunk diff of `old` -> `new` labelled with `path`."""
    old_lines = _lines(old)
    new_lines = _lines(new)
    prefix = 0
    while prefix < len(old_lines) and prefix < len(new_lines) and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    old_end = len(old_lines) - 1  # last changed line index, inclusive
    new_end = len(new_lines) - 1
    while old_end >= prefix and new_end >= prefix and old_lines[old_end] == new_lines[new_end]:
        old_end -= 1
        new_end -= 1

    start = max(prefix - CONTEXT_LINES, 0)
    old_ctx_end = min(old_end + CONTEXT_LINES, len(old_lines) - 1)
    new_ctx_end = min(new_end + CONTEXT_LINES, len(new_lines) - 1)
    old_len = old_ctx_end - start + 1 if old_ctx_end >= start else 0
    new_len = new_ctx_end - start + 1 if new_ctx_end >= start else 0

    removed = old_lines[prefix:old_end + 1]
    added = new_lines[prefix:new_end + 1]
    out = [f"--- {path}", f"+++ {path}", f"@@ -{start + 1},{old_len} +{start + 1},{new_len} @@"]
    out.extend(" " + line for line in old_lines[start:prefix])
    out.extend("-" + line for line in removed)
    out.extend("+" + line for line in added)
    out.extend(" " + line for line in old_lines[old_end + 1:old_ctx_end + 1])
    return Diff("\n".join(out), additions=len(added), deletions=len(removed))


def truncated_diff(path: str, old: str, new: str, limit: int = MAX_DIFF_BYTES) -> str:
    """The diff text, cut at `limit` UTF-8 bytes (on a character boundary) with the
    stats note when longer."""
    diff = unified_diff(path, old, new)
    data = diff.text.encode("utf-8", "replace")
    if len(data) <= limit:
        return diff.text
    head = data[:limit].decode("utf-8", "ignore")
    return (
        f"{head}\n... diff truncated to {limit} bytes; full diff stats: "
        f"+{diff.additions}|-{diff.deletions}. Use read_file to inspect current content."
    )
