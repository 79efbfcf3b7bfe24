"""The tools the model can call: a core library that knows nothing of JSON-RPC or sessions.

Public API, imported from the module that defines each name::

    ctx = base.ToolContext(workspace_root=Path, read_paths=set[str], cancel=CancelToken,
                           ask_user=Callable[[list[dict]], list | None] | None, env=dict[str, str])
    tools = registry.default_registry()      # or registry.ToolRegistry(specs)
    tools.schemas(has_ui: bool) -> list[dict]   # {type:"function", function:{name, ...}}
    tools.names(has_ui: bool) -> list[str]
    tools.run(name: str, arguments: str | dict, ctx) -> ToolResult   # raises only Canceled
    result.content, result.is_error, result.diff, result.changed_files, result.images,
    result.changes, result.changes_complete   # what a call changed (FileChange); see changes.py
    (ToolResult is kward.model's, also importable from base; the RPC face shapes it, kward.rpc.wire)

    question.validate_questions(questions) -> list[dict]   # raises QuestionError (InvalidParams)
    question.normalize_answers(answers, questions) -> list[{question, answer}] | None

Call-name and argument normalization (`normalize_tool_name`, `normalize_args`,
`parse_arguments`, `extract_diff`) lives below, in `kward.toolcalls`.

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
changes (what a shell command changed: gitlook over gitstatus, or plainlook over snapshot
where git cannot tell; baselines; the looks kept between commands in lookcache, kept up
to date by fswatch over the inotify binding),
search (and search_worker, its matcher run in a child process), question, registry.
This package module imports none of them: the search worker's child interpreter imports
`kward.tools.search_worker` alone.
"""
