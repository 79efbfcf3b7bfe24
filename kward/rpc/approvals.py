"""The RPC face's approver (`kward.agent.approval.Approver`): the `tool/requestApproval`
server request, sent only to a client that declared in `initialize` that it answers it
(`capabilities.serverRequests`), and its reply read as a `Decision`.

Params: ``{sessionId, turnId, toolCallId, toolName, args, preview, tool}`` (`toolCallId`,
`toolName` and `args` as the call's `toolCall` event has them; `tool` the model's own tool
name). A reply ``{"decision": "approve" | "approveForSession" | "decline", "reason"?, "args"?}``
(`args`, with an approval: an object the call runs with in place of its own, e.g. the shell
command the user edited; the result tells the model what ran);
anything else (an error, another value) declines with a reason saying so. No answer in
time, a cancelled turn or a client gone decline too (`kward.rpc.server_requests`).
`ask` runs on the turn's thread and blocks it; `available` on any thread. Built at
start-up, it imports the agent's side only when first asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kward.rpc.server_requests import ANSWERED, CANCELED, CLIENT_GONE, TIMED_OUT, Reply

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.approval import ApprovalRequest, Decision
    from kward.model import ApprovalOutcome
    from kward.cancel import CancelToken
    from kward.rpc.connection import Connection

METHOD = "tool/requestApproval"
MAX_REASON_CHARS = 2000

#: A reply's outcome as approvalResolved names it (what the request machinery may give).
_OUTCOMES: dict[str, ApprovalOutcome] = {TIMED_OUT: "timedOut", CANCELED: "canceled", CLIENT_GONE: "clientGone"}
_UNANSWERED = {TIMED_OUT: "no answer to the approval request in time",
               CANCELED: "the turn was canceled while waiting for approval",
               CLIENT_GONE: "the client went away before answering the approval request"}


class RpcApprover:
    def __init__(self, conn: Connection):
        self.conn = conn

    def available(self) -> bool:
        return METHOD in self.conn.server_requests

    def ask(self, request: ApprovalRequest, cancel: CancelToken, timeout: float,
            announce: Callable[[str], None]) -> Decision:
        reply = self.conn.requests.ask(METHOD, approval_params(request), timeout=timeout, cancel=cancel,
                                       announce=announce)
        return decision_of(reply, timeout)


def approval_params(request: ApprovalRequest) -> dict[str, Any]:
    """The params of `tool/requestApproval` for `request`."""
    from kward.sessions.codec import call_fields  # (with the first question, not at start-up)

    return {"sessionId": request.session_id, "turnId": request.turn_id, **call_fields(request.call),
            "tool": request.call.name, "preview": dict(request.preview)}


def decision_of(reply: Reply, timeout: float) -> Decision:
    """The Decision a reply makes (an invalid one declines, saying why)."""
    from kward.agent.approval import DECISIONS, DECLINE, Decision

    if reply.outcome != ANSWERED:
        reason = _UNANSWERED.get(reply.outcome, "no answer to the approval request")
        if reply.outcome == TIMED_OUT:
            reason += f" ({timeout:g} s)"
        return Decision(DECLINE, reason, _OUTCOMES.get(reply.outcome, "clientGone"))
    if reply.error is not None:
        return Decision(DECLINE, "the client answered the approval request with an error", "invalidReply")
    result: Any = reply.result
    decision = result.get("decision") if isinstance(result, dict) else None
    if decision not in DECISIONS:
        return Decision(DECLINE, "the client's approval reply was not valid (decision must be one of "
                                 + ", ".join(DECISIONS) + ")", "invalidReply")
    edited = result.get("args")
    if edited is not None and (not isinstance(edited, dict) or decision == DECLINE):
        return Decision(DECLINE, "the client's approval reply was not valid (args must be an object, "
                                 "given only with an approval)", "invalidReply")
    given = result.get("reason")
    said = given[:MAX_REASON_CHARS] if isinstance(given, str) and given.strip() else None
    return Decision(decision, said, "answered", edited)
