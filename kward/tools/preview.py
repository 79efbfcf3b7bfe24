"""What a tool call would do, shown before it runs (the approval question's `preview`).

`preview(name, arguments, ctx)`: for `write_file` and `edit_file` ``{"diff": <the unified
diff it would make>}`` (computed by `kward.tools.writing`, nothing written), for
`run_shell_command` ``{"command", "cwd"}``, for any other tool ``{}``. A call that would
fail shows ``{"error": <what the tool would answer>}`` instead. Never raises; the text
goes through `ctx.scrub`. Runs on the
turn's thread, reads files only.
"""

from __future__ import annotations

import logging
from typing import Any

from kward.errors import InvalidParams
from kward.tools import writing
from kward.tools.base import Args, ToolContext, ToolError
from kward.tools.registry import decode_arguments, os_error_text

log = logging.getLogger(__name__)


def preview(name: str, arguments: str | dict[str, Any] | None, ctx: ToolContext) -> dict[str, Any]:
    args = Args({})
    try:
        args = Args(decode_arguments(name, arguments))
        if name == "run_shell_command":
            return {"command": args.string("command"), "cwd": str(ctx.workspace_root)}
        if name == "write_file":
            return {"diff": _scrub(writing.write_preview(args, ctx), ctx)}
        if name == "edit_file":
            return {"diff": _scrub(writing.edit_preview(args, ctx), ctx)}
        return {}
    except (ToolError, InvalidParams) as exc:
        return {"error": _scrub(exc.message, ctx)}
    except OSError as exc:
        return {"error": _scrub(os_error_text(exc, args.data.get("path")), ctx)}
    except Exception as exc:  # a bug: the question is still asked, without a preview
        log.exception("previewing %s failed", name)
        return {"error": f"no preview: {type(exc).__name__}"}


def _scrub(text: str, ctx: ToolContext) -> str:
    return ctx.scrub(text) if ctx.scrub is not None else text
