"""run_shell_command: one command through /bin/sh in the workspace root.

Output format (the original's)::

    Exit status: N
    <blank>
    STDOUT:
    ...
    ... truncated to 131072 bytes      (only when stdout was cut)
    <blank>
    STDERR:
    ...

An empty stream is left out. A timeout answers ``Error: command timed out after N
seconds`` after every process the command started was ended (its process group, and
those that left it: ``setsid``, double forks). Turn cancellation ends them the same way
and raises `kward.errors.Canceled`. Background processes of a command that returned run
on until kward exits (see process.py and kward/processes/children.py for the mechanics).

Environment: the command gets kward's environment plus ``ctx.env``, minus the credentials
kward itself reads (``OPENAI_ACCESS_TOKEN``, ``OPENROUTER_API_KEY`` and any ``KWARD_*``
variable named like a secret; see `process.child_environment`), so a prompt-injected
``env`` cannot leak them into the session.

Sandbox: with ``security.sandbox: "workspace-write"`` (`ctx.sandbox`) the command runs
under bubblewrap (`kward.sandbox.wrap`): read-only outside the workspace, a private
/tmp, kward's config directory hidden, no network when `security.sandboxNetwork` is false.
Where that sandbox cannot be used the command is not run: ``Error: sandbox
workspace-write is configured but unavailable, command not run: <why>``. The process
group, timeout, cancel and changed-file look are the same (the look runs outside).

While it runs, its output also goes to `ctx.live` as it comes (the `toolUpdate` events;
`kward.tools.live`); the result above is the same either way.

Changed files: `kward.tools.changes.ChangeWatch` looks at the workspace just before the
command is spawned and after it exited or timed out; the result's `changes` and
`changed_files` (sorted workspace-relative paths; None when nothing changed) say what it
created, modified or deleted, and `changes_complete` whether that list can be trusted to
be whole. A cancelled command is looked at too, once every process of it was killed, for
at most `CANCEL_LOOK_SECONDS` (past that: nothing, incomplete); the `Canceled` raised is a
`CanceledCommand` whose `result` (``Cancelled.``, as the agent records a cancelled call)
carries those changes, so that the turn's diff has them.

The handler runs on the turn's worker thread and blocks for the command's duration.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from kward.errors import Canceled
from kward.tools.base import CANCELLED, Args, ToolContext, ToolError, ToolResult, ToolSpec
from kward import sandbox
from kward.tools.changes import Changes, ChangeWatch
from kward.tools.process import (
    MAX_STREAM_BYTES,
    CommandOutcome,
    child_environment,
    run_command,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 30
CANCEL_LOOK_SECONDS = 2.0


class CanceledCommand(Canceled):
    """The turn was cancelled while the command ran; `result` is the call's result
    (``Cancelled.``) with what the command changed before it was killed."""

    def __init__(self, result: ToolResult):
        super().__init__("Canceled.")
        self.result = result


def format_outcome(outcome: CommandOutcome, cap: int = MAX_STREAM_BYTES) -> str:
    """The model-facing text of a finished (not timed-out) command."""
    out = f"Exit status: {outcome.exit_status}\n"
    for label, data, cut in (("STDOUT", outcome.stdout, outcome.stdout_truncated),
                             ("STDERR", outcome.stderr, outcome.stderr_truncated)):
        if not data:
            continue
        out += f"\n{label}:\n{data.decode('utf-8', 'replace')}"
        if cut:
            out += f"\n... truncated to {cap} bytes"
    return out


def run_shell_command(args: Args, ctx: ToolContext) -> ToolResult:
    """Run the command; see the module doc."""
    command = (args.string("command") or "").strip()
    if not command:
        raise ToolError("command is required")
    timeout = args.integer("timeout_seconds")
    if timeout is None or timeout <= 0:
        timeout = DEFAULT_TIMEOUT_SECONDS
    env = child_environment(ctx.env)
    root = str(ctx.workspace_root)
    try:
        argv = sandbox.wrap(["/bin/sh", "-c", command], cwd=root, env=env, policy=ctx.sandbox)
    except sandbox.SandboxUnavailable as exc:
        raise ToolError(exc.message) from None
    watch = ChangeWatch(ctx.workspace_root, env, ctx.cancel)
    before = watch.begin()
    try:
        try:
            outcome = run_command(argv, cwd=root, timeout=timeout, cancel=ctx.cancel,
                                  env=env, live=ctx.live)
        except OSError as exc:
            log.warning("run_shell_command could not start %s: %s", argv[0], exc)
            raise ToolError(f"could not start command: {exc.strerror or exc}") from exc
        except Canceled:
            changes = watch.end(before, deadline=time.monotonic() + CANCEL_LOOK_SECONDS)
            raise CanceledCommand(with_changes(ToolResult.text(CANCELLED), changes)) from None
        changes = watch.end(before)
    finally:
        watch.release(before)
    if outcome.timed_out:
        return with_changes(ToolResult.error(f"command timed out after {timeout} seconds"), changes)
    return with_changes(ToolResult.text(format_outcome(outcome)), changes)


def with_changes(result: ToolResult, changes: Changes) -> ToolResult:
    """`result` carrying what the command changed."""
    return dataclasses.replace(result, changed_files=changes.paths or None, changes=changes.files,
                               changes_complete=changes.complete)


SPECS = (
    ToolSpec(
        name="run_shell_command",
        description=(
            "Run a shell command (/bin/sh -c) from the workspace root. stdin is closed; "
            "stdout and stderr are returned with the exit status."
        ),
        properties={
            "command": {"type": "string", "description": "Command to run."},
            "timeout_seconds": {"type": "integer", "description": "Timeout seconds; default 30."},
        },
        required=("command",),
        handler=run_shell_command,
    ),
)
