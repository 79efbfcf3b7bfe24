"""search_files: a regular-expression search over workspace files (new in kward).

Walks `path` (default the workspace root) in sorted order without following symlinked
directories, confined as the file tools are (see `search_worker`: every directory and
file is opened relative to its parent's descriptor, never through a symlink pointing out,
even one swapped in during the walk); skips VCS directories, symlinked files that resolve
outside the workspace, files over 1 MiB and binary files (a NUL byte in the first 8 KiB).
Each matching line is shown as ``path:line: text`` (path relative to the workspace root,
text cut at 300 characters). Results stop at `max_results` (default 100, at most 500) or
50 KiB of output, with a note saying so.

Where the matching runs: Python's `re` cannot be interrupted inside one `search` call and
holds the GIL meanwhile, so a catastrophically backtracking pattern (``(a+)+$``) would
freeze the whole process. The walk and the matching therefore run in a child interpreter
(`search_worker`, started with ``sys.executable -I -S``) through
`kward.tools.process.run_command`: the turn's cancellation kills it at once (raising
`kward.errors.Canceled`), and after `SEARCH_TIMEOUT_SECONDS` it is killed and the
lines found so far are returned with a note (or an error when there were none).

The handler runs on the turn's worker thread and blocks while the child runs.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys

import kward
from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec
from kward.tools.paths import open_existing, outside
from kward.tools.process import child_environment, run_command
from kward.tools.search_worker import MAX_OUTPUT_BYTES, SearchConfig, glob_matches

__all__ = ["SPECS", "glob_matches", "search_files"]

log = logging.getLogger(__name__)

DEFAULT_MAX_RESULTS = 100
MAX_RESULTS_CAP = 500
SEARCH_TIMEOUT_SECONDS = 30.0
MAX_ARGUMENT_BYTES = 100_000  # pattern + glob + paths; one argv string may hold 128 KiB
_CAPTURE_BYTES = 1024 * 1024  # JSON-escaped hits: well above 50 KiB of text
_BOOTSTRAP = ("import sys; sys.path.insert(0, sys.argv[1]); "
              "from kward.tools.search_worker import main; sys.exit(main(sys.argv[2:]))")


def _package_parent() -> str:
    """The sys.path entry that holds the `kward` package (a directory or a zipapp)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(kward.__file__)))


def _run_worker(config: SearchConfig, path: str, ctx: ToolContext) -> tuple[list[str], str | None, bool]:
    """Run the worker; (hit lines, stop reason, timed out). Raises Canceled, ToolError or
    PathNotAllowed (the start was swapped for a symlink pointing out)."""
    payload = json.dumps(config)
    if len(payload.encode("utf-8", "surrogateescape")) > MAX_ARGUMENT_BYTES:
        raise ToolError(f"pattern, glob and path are too long (limit {MAX_ARGUMENT_BYTES} bytes)")
    if not sys.executable:
        raise ToolError("cannot search: no Python interpreter to run the search in")
    argv = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, _package_parent(), payload]
    try:
        outcome = run_command(argv, cwd=config["root"], timeout=SEARCH_TIMEOUT_SECONDS, cancel=ctx.cancel,
                              env=child_environment(), cap=_CAPTURE_BYTES)
    except OSError as exc:
        log.warning("search_files could not start %s: %s", sys.executable, exc)
        raise ToolError(f"could not start the search: {exc.strerror or exc}") from exc
    if not outcome.timed_out and outcome.exit_status != 0:
        detail = outcome.stderr.decode("utf-8", "replace").strip().splitlines()
        log.warning("search_files worker failed (status %s): %s", outcome.exit_status,
                    outcome.stderr.decode("utf-8", "replace"))
        raise ToolError(f"search failed: {detail[-1] if detail else f'exit status {outcome.exit_status}'}")
    hits: list[str] = []
    stop = None
    for raw in outcome.stdout.split(b"\n"):
        try:
            kind, value = json.loads(raw)
        except (ValueError, TypeError):
            continue  # the cut last line of a killed worker
        if kind == "hit":
            hits.append(value)
        elif kind == "stop":
            stop = value
        elif kind == "error" and value == "outside":
            raise outside(path)
        elif kind == "error":
            raise ToolError(f"no such file or directory: {path}")
    return hits, stop, outcome.timed_out


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
        re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)  # errors named here, not by the child
    except (re.error, OverflowError, RecursionError) as exc:
        raise ToolError(f"invalid regex: {exc}") from exc
    with open_existing(ctx.workspace_root, path) as node:
        if not node.is_dir and not node.is_file:
            raise ToolError(f"not a directory: {path}")
        start = node.path

    config: SearchConfig = {"root": str(ctx.workspace_root), "start": start, "pattern": pattern,
                            "ignore_case": not case_sensitive, "glob": glob, "max_results": max_results}
    lines, stop, timed_out = _run_worker(config, path, ctx)
    limit = f"{SEARCH_TIMEOUT_SECONDS:g}"
    if timed_out and not lines:
        return ToolResult.error(f"search timed out after {limit} seconds; the pattern may backtrack "
                                "catastrophically. Simplify the pattern or narrow the path or glob.")
    if not lines:
        return ToolResult.text(f"No matches found for /{pattern}/ in {path}.")
    out = "\n".join(lines)
    if timed_out:
        out += (f"\n\n[Search stopped after {limit} seconds with {len(lines)} matches; results may be "
                "incomplete. Simplify the pattern or narrow the path or glob.]")
    elif stop == "results":
        out += f"\n\n[Results capped at {max_results} matches. Narrow the pattern, path or glob to see more.]"
    elif stop == "bytes":
        out += (f"\n\n[Output capped at {MAX_OUTPUT_BYTES} bytes after {len(lines)} matches. "
                "Narrow the pattern, path or glob to see more.]")
    log.debug("search_files %r: %d lines", pattern, len(lines))
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
        read_only=True,
    ),
)
