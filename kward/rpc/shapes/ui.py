"""The UI question bridge (`ui/question`, `ui/answerQuestion`; docs/protocol.md "UI
questions"), the approval server request (`tool/requestApproval`, "Approval") and its
`serverRequest/resolved`, and the hook runs (`hook/started`, `hook/completed`, "Hooks")."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, EXPERIMENTAL_FIELD, OPEN, Doc, Entry, Length

# --- ui/question, ui/answerQuestion --------------------------------------------------------


class UiQuestionOption(TypedDict):
    label: Annotated[str, Length(minimum=1)]
    description: Annotated[str, Length(minimum=1)]


class UiQuestion(TypedDict):
    question: Annotated[str, Length(minimum=1)]
    header: Annotated[str, Length(minimum=1), Doc("a short label")]
    options: Annotated[list[UiQuestionOption], Length(minimum=2, maximum=4)]


class UiQuestionParams(TypedDict):
    sessionId: Annotated[str, Doc("the RPC session id")]
    questionRequestId: str
    questions: Annotated[list[UiQuestion], Length(minimum=1, maximum=4)]


class UiQuestionAnswer(TypedDict, total=False):
    question: Annotated[str | None, Doc("default: the question at the answer's index")]
    answer: str | None


class UiAnswerQuestionParams(TypedDict):
    sessionId: Annotated[str, Doc("the RPC session id the question came with")]
    questionRequestId: Annotated[str, Doc("from `ui/question`")]
    answers: Annotated[list[UiQuestionAnswer | str] | None,
                       Doc("one entry per question: {question, answer} or a plain string (paired with the question "
                           "at its index); [] or null: the user dismissed the questions")]


class UiAnswerQuestionResult(TypedDict):
    ok: bool


# --- tool/requestApproval, serverRequest/resolved ----------------------------------------------


class ToolApprovalPreview(TypedDict, total=False):
    """What the call would do: `{diff}` (write_file, edit_file), `{command, cwd}`
    (run_shell_command), `{}` (other tools), or `{error}` for a call that would fail."""

    diff: Annotated[str, Doc("the unified diff the call would make (a new file against nothing)")]
    command: str
    cwd: str
    error: Annotated[str, Doc("what the tool would answer")]


class ToolRequestApprovalParams(TypedDict):
    sessionId: Annotated[str, Doc("the RPC session id")]
    turnId: str
    toolCallId: str
    toolName: Annotated[str, Doc("as the call's toolCall event has it (bash, edit, write, ...)")]
    args: Annotated[dict[str, Any], OPEN, Doc("as the call's toolCall event has them")]
    tool: Annotated[str, Doc("the model's own tool name (write_file, run_shell_command, ...)")]
    preview: ToolApprovalPreview


class _ToolRequestApprovalResultRequired(TypedDict):
    decision: Literal["approve", "approveForSession", "decline"]


class ToolRequestApprovalResult(_ToolRequestApprovalResultRequired, total=False):
    """The client's reply; anything else declines the call, saying the reply was not valid."""

    reason: Annotated[str | None, Doc("with decline: why (at most 2000 characters are kept)")]
    args: Annotated[dict[str, Any] | None, Doc("with an approval only: the arguments the call runs with instead "
                                               "of its own (the command the user edited)")]


class ServerRequestResolvedParams(TypedDict):
    """A server request ended without an answer; an answer that comes later changes nothing."""

    id: Annotated[str, Doc("the server request's id (srv-<n>)")]
    outcome: Literal["timedOut", "canceled", "clientGone"]


# --- hook/started, hook/completed ----------------------------------------------------------------


class HookRunOutput(TypedDict):
    kind: Annotated[str, Doc("stdout, stderr (what the hook wrote, each capped at 16 KiB) or error (kward's word)")]
    text: str


class _HookRunRequired(TypedDict):
    id: Annotated[str, Doc("hook-<n>, unique in the process; the same in both notifications")]
    event: Annotated[str, Doc("sessionStart, userPromptSubmit, beforeTool, afterTool or turnEnd")]
    source: Annotated[str, Doc("where the hook is configured: hooks.beforeTool[0]")]
    status: Annotated[str, Doc("running (in hook/started), then completed, blocked, timedOut or failed")]
    startedAt: Annotated[str, Doc("ISO 8601")]
    durationMs: Annotated[int | None, Doc("null while running")]
    output: list[HookRunOutput]


class HookRun(_HookRunRequired, total=False):
    exitStatus: Annotated[int | None, EXPERIMENTAL_FIELD,
                          Doc("null while running, after a timeout or when it never started (experimental: only "
                              "for a client that passed experimentalApi)")]


class _HookNotificationRequired(TypedDict):
    sessionId: Annotated[str, Doc("the RPC session id")]
    run: HookRun


class HookNotification(_HookNotificationRequired, total=False):
    """The params of `hook/started` and `hook/completed`."""

    turnId: Annotated[str, Doc("absent for a run outside a turn")]


METHODS = {
    "ui/answerQuestion": Entry(UiAnswerQuestionParams, UiAnswerQuestionResult),
}
NOTIFICATIONS = {
    "ui/question": Entry(UiQuestionParams, None),
    "serverRequest/resolved": Entry(ServerRequestResolvedParams, None, ADDITION),
    "hook/started": Entry(HookNotification, None, ADDITION),
    "hook/completed": Entry(HookNotification, None, ADDITION),
}
SERVER_REQUESTS = {
    "tool/requestApproval": Entry(ToolRequestApprovalParams, ToolRequestApprovalResult, ADDITION),
}
