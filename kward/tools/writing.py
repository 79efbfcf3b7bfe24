"""write_file and edit_file: the mutating file tools.

Rules (the original's): an existing file must have been read in this conversation
(its realpath is in `ctx.read_paths`) before it is written or edited; edits are exact,
non-empty, unique, non-overlapping replacements applied against the original content.
Files are replaced atomically (temp file in the same directory, fsync, rename) keeping
the existing file's permission bits; new files get ``0666 & ~umask`` and their missing
parent directories are created inside the workspace. The temp file and the rename are
made relative to a descriptor of the parent directory reached from the workspace root
without following symlinks (`paths.open_confined_dir`), so a parent swapped for a symlink
after the path checks cannot redirect the write out of the workspace; the old content
(for the diff and the edits) is read through a descriptor opened the same way. A successful
write or edit records the file's realpath in `ctx.read_paths` (session replay counts
these results the same way). File bytes that are not valid
UTF-8 survive an edit unchanged (surrogateescape round trip). Both report the file they
changed in `ToolResult.changes` (its path resolved, relative to the root; status ``added``
or ``modified``; `before` the bytes it held), what turnDiff and sessions/diff are made of;
a write of the content a file already held reports none.

Handlers run on the turn's worker thread; they take no locks (one turn per session).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from kward.confined import replace_file
from kward.fsutil import read_fd
from kward.model import FileChange
from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec
from kward.tools.diff import truncated_diff
from kward.tools.paths import (
    ensure_parent_dirs,
    open_confined_dir,
    open_resolved,
    resolve_for_write,
)
from kward.tools.reading import file_of, load_text_file, open_text_file

log = logging.getLogger(__name__)


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask is a
    process-wide set-and-restore that would race with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write(root: Path, target: str, data: bytes, path: str) -> None:
    """Atomically replace `target` (a realpath inside `root`), keeping its mode (or the
    umask default when new); every step is relative to the confined parent descriptor."""
    dir_fd = open_confined_dir(root, os.path.dirname(target), path)
    try:
        name = os.path.basename(target)
        try:
            mode = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        replace_file(dir_fd, name, data, mode, tmp)
    finally:
        os.close(dir_fd)


def _change(ctx: ToolContext, target: str, old: bytes | None) -> FileChange:
    """The FileChange of writing `target` (a resolved path inside the root) whose content
    was `old` (None: there was no file)."""
    path = os.path.relpath(target, str(ctx.workspace_root)).replace(os.sep, "/")
    return FileChange(path, "added", b"") if old is None else FileChange(path, "modified", old)


def _diff_text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def write_file(args: Args, ctx: ToolContext) -> ToolResult:
    """Write complete file content; ``Wrote N bytes to P`` plus a diff on change."""
    path = args.string("path")
    content = args.string("content")
    target = resolve_for_write(ctx.workspace_root, path)
    old: bytes | None = None
    with open_resolved(ctx.workspace_root, target, path, missing_ok=True) as node:
        if node.exists:
            fd, size = file_of(node, path)
            if target not in ctx.read_paths:
                raise ToolError(f"existing file must be read before writing: {path}")
            old = read_fd(fd, size + 1)
    if old is None:
        ensure_parent_dirs(ctx.workspace_root, target, path)
    data = content.encode("utf-8", "surrogateescape")
    _write(ctx.workspace_root, target, data, path)
    ctx.read_paths.add(os.path.realpath(target))
    log.debug("write_file wrote %d bytes to %s", len(data), target)

    out = f"Wrote {len(data)} bytes to {path}"
    diff = None
    if old is not None and old != data:
        diff = truncated_diff(path, _diff_text(old), _diff_text(data))
        out += "\n" + diff
    changes = () if old == data else (_change(ctx, target, old),)
    return ToolResult.text(out, diff=diff, changed_files=[path], changes=changes)


def apply_edits(path: str, content: str, edits: list[object]) -> tuple[str, int]:
    """Apply exact replacements to `content`; returns (new content, block count).

    Raises `ToolError` with the original's messages (indices are 0-based, as the model
    sent them).
    """
    if not edits:
        raise ToolError("edits must contain at least one replacement")
    spans: list[tuple[int, int, int, str]] = []  # (start, length, index, new_text)
    for i, edit in enumerate(edits):
        old_text = edit.get("old_text") if isinstance(edit, dict) else None
        new_text = edit.get("new_text") if isinstance(edit, dict) else None
        if not isinstance(old_text, str):
            raise ToolError(f"edits[{i}].old_text must be a string")
        if not isinstance(new_text, str):
            raise ToolError(f"edits[{i}].new_text must be a string")
        if not old_text:
            raise ToolError(f"edits[{i}].old_text must not be empty")
        first = content.find(old_text)
        if first < 0:
            raise ToolError(f"edits[{i}].old_text was not found in {path}")
        count = content.count(old_text)  # non-overlapping, like the original's scan
        if count > 1:
            raise ToolError(f"edits[{i}].old_text appears {count} times in {path}; provide more context")
        spans.append((first, len(old_text), i, new_text))

    spans.sort()
    for left, right in zip(spans, spans[1:]):
        if left[0] + left[1] > right[0]:
            raise ToolError(f"edits[{left[2]}] and edits[{right[2]}] overlap in {path}")
    parts: list[str] = []
    pos = 0
    for start, length, _, new_text in spans:
        parts.append(content[pos:start])
        parts.append(new_text)
        pos = start + length
    parts.append(content[pos:])
    result = "".join(parts)
    if result == content:
        raise ToolError(f"no changes made to {path}")
    return result, len(spans)


def edit_file(args: Args, ctx: ToolContext) -> ToolResult:
    """Exact block replacements in a previously read file; ``Edited P: replaced N block(s)``."""
    path = args.string("path")
    edits = args.array("edits")
    with open_text_file(ctx.workspace_root, path) as node:
        real = node.path
        if real not in ctx.read_paths:
            raise ToolError(f"existing file must be read before editing: {path}")
        old_bytes = load_text_file(path, node)
    content = old_bytes.decode("utf-8", "surrogateescape")
    new_content, count = apply_edits(path, content, edits or [])
    new_bytes = new_content.encode("utf-8", "surrogateescape")
    _write(ctx.workspace_root, real, new_bytes, path)
    ctx.read_paths.add(real)
    log.debug("edit_file replaced %d block(s) in %s", count, real)
    diff = truncated_diff(path, _diff_text(old_bytes), _diff_text(new_bytes))
    return ToolResult.text(f"Edited {path}: replaced {count} block(s)\n{diff}", diff=diff, changed_files=[path],
                           changes=(_change(ctx, real, old_bytes),))


def write_preview(args: Args, ctx: ToolContext) -> str:
    """The unified diff `write_file` would make (a new file: against nothing); nothing is
    written. Raises what the tool would (ToolError, PathNotAllowed, OSError)."""
    path = args.string("path")
    content = args.string("content")
    target = resolve_for_write(ctx.workspace_root, path)
    old = b""
    with open_resolved(ctx.workspace_root, target, path, missing_ok=True) as node:
        if node.exists:
            fd, size = file_of(node, path)
            if target not in ctx.read_paths:  # as write_file: no diff for a call that would be refused
                raise ToolError(f"existing file must be read before writing: {path}")
            old = read_fd(fd, size + 1)
    return truncated_diff(path, _diff_text(old), content)


def edit_preview(args: Args, ctx: ToolContext) -> str:
    """The unified diff `edit_file` would make; nothing is written. Raises what the tool
    would (ToolError for edits that do not apply, PathNotAllowed, OSError)."""
    path = args.string("path")
    edits = args.array("edits")
    with open_text_file(ctx.workspace_root, path) as node:
        old_bytes = load_text_file(path, node)
    content = old_bytes.decode("utf-8", "surrogateescape")
    new_content, _ = apply_edits(path, content, edits or [])
    return truncated_diff(path, _diff_text(old_bytes), _diff_text(new_content.encode("utf-8", "surrogateescape")))


SPECS = (
    ToolSpec(
        name="write_file",
        description="Write a workspace file (complete content). Existing files must be read first.",
        properties={
            "path": {"type": "string", "description": "Workspace-relative path."},
            "content": {"type": "string", "description": "Complete file content."},
        },
        required=("path", "content"),
        handler=write_file,
    ),
    ToolSpec(
        name="edit_file",
        description=(
            "Edit a read workspace file by exact replacements. Each old_text must match once; "
            "edits must not overlap."
        ),
        properties={
            "path": {"type": "string", "description": "Workspace-relative path."},
            "edits": {
                "type": "array",
                "description": "Non-overlapping replacements against original content.",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "new_text": {"type": "string", "description": "Replacement text."},
                        "old_text": {"type": "string", "description": "Unique exact text to replace."},
                    },
                    "required": ["new_text", "old_text"],
                    "additionalProperties": False,
                },
            },
        },
        required=("edits", "path"),
        handler=edit_file,
    ),
)
