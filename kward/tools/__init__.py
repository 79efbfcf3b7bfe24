"""The tools the model can call: a core library that knows nothing of JSON-RPC or sessions.

Public API (all importable from ``kward.tools``)::

    ctx = ToolContext(workspace_root=Path, read_paths=set[str], cancel=CancelToken,
                      ask_user=Callable[[list[dict]], list | None] | None, env=dict[str, str])
    registry = default_registry()            # or ToolRegistry(specs)
    registry.schemas(has_ui: bool) -> list[dict]   # {type:"function", function:{name, ...}}
    registry.names(has_ui: bool) -> list[str]
    registry.run(name: str, arguments: str | dict, ctx) -> ToolResult   # raises only Canceled
    result.content, result.is_error, result.diff, result.changed_files, result.images
    (ToolResult is kward.model's; the RPC face shapes it, kward.rpc.wire)

    normalize_tool_name(name) -> str         # read_file -> read, ... (kward.toolcalls)
    normalize_args(name, args: dict) -> dict # camelCase; bash -> {command, timeout}
    parse_arguments(raw) -> dict             # lenient JSON decode for event payloads
    validate_questions(questions) -> list[dict]     # raises QuestionError (InvalidParams)
    normalize_answers(answers, questions) -> list[{question, answer}] | None

Tools: list_directory, read_file, write_file, edit_file, run_shell_command, search_files,
and ask_user_question (advertised only when a UI question bridge is attached, i.e.
``schemas(has_ui=True)``; `run` answers ``Unknown tool`` for it when ``ctx.ask_user`` is None).

Cancellation contract: `ToolRegistry.run` raises `kward.errors.Canceled` when
``ctx.cancel`` is already cancelled, or when a running shell command, search or question
is interrupted by it (a shell command's whole process group is killed and reaped before
the raise). It never returns a "cancelled" result for turn cancellation; the agent loop
catches `Canceled`, records a tool result of its choosing (``base.CANCELLED`` is the
original's text ``Cancelled.``) and finishes the turn as canceled. A ``Cancelled.`` result
*returned* by ask_user_question means the user dismissed the questions while the turn
goes on.

Threading: `run` executes on the calling (turn worker) thread and may block for the
duration of a shell command or a UI answer; `ctx.cancel.cancel()` from any other thread
interrupts it promptly. A registry is immutable and shared; a `ToolContext` belongs to
one turn at a time (its `read_paths` is the session's set, unlocked: one turn per session).

Modules: base (types), paths (workspace confinement), diff (single-hunk unified diff),
reading (list/read), writing (write/edit), process (child process runner), shell,
search (and search_worker, its matcher run in a child process), question, registry;
call-name and argument normalization lives below, in `kward.toolcalls`.
"""

import importlib
from typing import Any

# Public names and the module that defines each; imported on first use (PEP 562), so that
# importing one of them does not load every tool.
_EXPORTS = {
    "CANCELLED": "base", "Args": "base", "ToolContext": "base", "ToolError": "base", "ToolResult": "base",
    "ToolSpec": "base", "is_error_text": "base",
    "extract_diff": "kward.toolcalls", "normalize_args": "kward.toolcalls",
    "normalize_tool_name": "kward.toolcalls", "parse_arguments": "kward.toolcalls",
    "QuestionError": "question", "normalize_answers": "question", "validate_questions": "question",
    "DEFAULT_SPECS": "registry", "ToolRegistry": "registry", "default_registry": "registry",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kward.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module if "." in module else f"kward.tools.{module}"), name)
    globals()[name] = value
    return value
