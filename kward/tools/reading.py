"""list_directory and read_file: the read-only file tools.

Limits and texts are the original's: files over 256 KiB are refused; one read shows at
most 2,000 lines and 51,200 bytes, ending with a continuation notice; a file containing
a NUL byte is refused as binary. A successful read records the file's realpath in
`ctx.read_paths` (the read-before-write rule of writing.py). A listing is capped at
51,200 bytes too (kward's addition), ending with a notice of how many entries were shown.
Both open their target once, confined (`paths.open_existing`), and read or list through
that descriptor; a listed symlink is shown as a directory (``name/``) only when it
resolves, confined, to a directory inside the workspace.

Handlers run on the turn's worker thread; they take no locks.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kward.confined import Escape, Node, open_below
from kward.fsutil import read_fd
from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec
from kward.tools.paths import open_existing

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024
MAX_READ_LINES = 2000
MAX_READ_BYTES = 50 * 1024


def list_directory(args: Args, ctx: ToolContext) -> ToolResult:
    """Sorted children of a directory, directories suffixed ``/``, one per line."""
    path = args.string("path", required=False, default=".") or "."
    with open_existing(ctx.workspace_root, path) as node:
        if not node.is_dir or node.fd is None:
            raise ToolError(f"not a directory: {path}")
        try:
            with os.scandir(node.fd) as it:
                entries = {entry.name: entry for entry in it}
        except OSError as exc:  # no permission to read it
            raise ToolError(f"{exc.strerror or exc}: {path}") from None
        names = sorted(entries)
        lines: list[str] = []
        used = 0
        for name in names:  # types only for what is shown: a huge directory costs one scan
            line = name + "/" if _shows_as_dir(ctx.workspace_root, node, entries[name]) else name
            cost = len(line.encode("utf-8", "surrogateescape")) + (1 if lines else 0)
            if used + cost > MAX_READ_BYTES:
                break
            lines.append(line)
            used += cost
    out = "\n".join(lines)
    if len(lines) < len(names):
        out += (f"\n\n[Showing {len(lines)} of {len(names)} entries ({MAX_READ_BYTES} byte limit). "
                "List a subdirectory, or use search_files or run_shell_command to narrow down.]")
    return ToolResult.text(out)


def _shows_as_dir(root: Path, parent: Node, entry: os.DirEntry[str]) -> bool:
    """A directory, or a symlink resolving (confined) to a directory inside the root."""
    try:
        if not entry.is_symlink():
            return entry.is_dir(follow_symlinks=False)
        with open_below(str(root), parent.parts + [entry.name]) as target:
            return target.is_dir
    except (Escape, OSError):
        return False


def open_text_file(root: Path, path: str) -> Node:
    """The regular file `path` names, opened confined (shared with edit_file)."""
    node = open_existing(root, path)
    if not node.is_file:
        node.close()
        raise ToolError(f"not a file: {path}")
    return node


def file_of(node: Node, path: str) -> tuple[int, int]:
    """(descriptor, size) of the regular file open in `node`; ToolError ``not a file: <path>``
    for anything else (shared with write_file)."""
    if not node.is_file or node.fd is None or node.st is None:
        raise ToolError(f"not a file: {path}")
    return node.fd, node.st.st_size


def load_text_file(path: str, node: Node) -> bytes:
    """The bytes of the text file open in `node` within the size cap (shared with edit_file)."""
    fd, size = file_of(node, path)
    if size > MAX_FILE_BYTES:
        raise ToolError(f"file too large: {path} is {size} bytes; limit is {MAX_FILE_BYTES} bytes")
    data = read_fd(fd, MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # grew since the stat
        raise ToolError(f"file too large: {path} is over {MAX_FILE_BYTES} bytes; limit is {MAX_FILE_BYTES} bytes")
    if b"\x00" in data:
        raise ToolError(f"not a text file: {path} (binary content, NUL byte found)")
    return data


def read_file(args: Args, ctx: ToolContext) -> ToolResult:
    """A slice of a text file with the original's continuation notices."""
    path = args.string("path")
    offset = args.integer("offset")
    limit = args.integer("limit")
    with open_text_file(ctx.workspace_root, path) as node:
        data = load_text_file(path, node)
        real = node.path
    content = slice_text(data.decode("utf-8", "replace"), offset=offset, limit=limit)
    ctx.read_paths.add(real)
    return ToolResult.text(content)


def slice_text(content: str, *, offset: int | None, limit: int | None,
               max_lines: int = MAX_READ_LINES, max_bytes: int = MAX_READ_BYTES) -> str:
    """Lines ``offset..offset+limit-1`` (1-based) of `content`, capped at `max_lines`
    lines and `max_bytes` bytes, plus the continuation notice when anything is left."""
    lines = content.split("\n")  # a trailing newline yields a last empty line, as the original
    total = len(lines)
    start = max((offset or 1) - 1, 0)
    if start >= total:
        raise ToolError(f"offset {offset} is beyond end of file ({total} lines total)")
    if limit is not None and limit <= 0:
        raise ToolError("limit must be positive")
    end = min(start + limit, total) if limit is not None else total
    selected = lines[start:end]

    first_bytes = len(selected[0].encode("utf-8"))
    if first_bytes > max_bytes:
        raise ToolError(
            f"first line is {first_bytes} bytes, exceeds {max_bytes} byte read limit. "
            "Use run_shell_command with sed/head to inspect smaller chunks."
        )
    shown: list[str] = []
    used = 0
    truncated_by = None
    for line in selected:
        if len(shown) >= max_lines:
            truncated_by = "lines"
            break
        cost = len(line.encode("utf-8")) + (1 if shown else 0)
        if used + cost > max_bytes:
            truncated_by = "bytes"
            break
        shown.append(line)
        used += cost

    out = "\n".join(shown)
    if truncated_by is not None:
        last = start + len(shown)
        detail = f"{max_lines} line limit" if truncated_by == "lines" else f"{max_bytes} byte limit"
        out += f"\n\n[Showing lines {start + 1}-{last} of {total} ({detail}). Use offset={last + 1} to continue.]"
    elif limit is not None and end < total:
        out += f"\n\n[{total - end} more lines in file. Use offset={end + 1} to continue.]"
    return out


SPECS = (
    ToolSpec(
        name="list_directory",
        description="List workspace directory entries (sorted; directories end with /).",
        properties={"path": {"type": "string", "description": "Workspace-relative directory."}},
        required=("path",),
        handler=list_directory,
        read_only=True,
    ),
    ToolSpec(
        name="read_file",
        description=(
            "Read a workspace text file. Output is capped at 2000 lines / 51200 bytes; "
            "use offset/limit to continue."
        ),
        properties={
            "path": {"type": "string", "description": "Workspace-relative path."},
            "offset": {"type": "integer", "description": "1-indexed start line."},
            "limit": {"type": "integer", "description": "Maximum lines to return."},
        },
        required=("path",),
        handler=read_file,
        read_only=True,
    ),
)
