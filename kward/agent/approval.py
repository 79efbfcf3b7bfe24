"""The approval policy: which tool calls may run without asking, and the gate the agent
loop calls before each one.

Modes (config `security.approvalMode`, per session `runtime/updateSetting approvalMode`):
``off`` runs every call (the default of `kward rpc`); ``readOnly`` declines every mutating
call without asking; ``ask`` asks the face's `Approver` (over RPC: the
`tool/requestApproval` server request, `kward.rpc.approvals`) before a mutating call runs,
and declines when there is none that can answer. Mutating means any tool whose spec is
not `read_only` (write, edit, shell; an MCP tool not annotated readOnlyHint). A declined call's result is
``Declined: <reason>`` (an error result the model reads); the turn goes on.
``approveForSession`` approves that tool for the rest of the session, for the shell that
exact command. An approval may carry edited `args` (the terminal's "edit the command"):
the call then runs with them in place of the model's, and its result ends with
`edited_note`, so the model reads what ran.

The gate emits ``approvalRequested`` before it asks and ``approvalResolved`` for every
gated call (`kward.model.ApprovalAsked` / `ApprovalDecided`). Knows nothing of JSON-RPC.

Thread contract: `ApprovalPolicy` is shared by the runtime; `_lock` guards its
per-session tables (modes and approvals), written by `set_mode` (a request's worker) and
by gates (turn workers), never held while asking. A `Gate` belongs to one turn and runs
on its worker thread; `Approver.ask` blocks that thread until an answer, the timeout,
the turn's cancel or the client's end, and always returns a `Decision`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Mapping, Protocol

from kward.cancel import CancelToken
from kward.config.rules import APPROVAL_MODES
from kward.errors import InvalidParams
from kward.model import ApprovalAsked, ApprovalDecided, ApprovalDecision, ApprovalOutcome, EventPayload, ToolCall
from kward.tools.base import ToolContext
from kward.tools.preview import preview

OFF, ASK, READ_ONLY = APPROVAL_MODES  # "off", "ask", "readOnly"
APPROVE: Final = "approve"
APPROVE_FOR_SESSION: Final = "approveForSession"
DECLINE: Final = "decline"
DECISIONS: tuple[ApprovalDecision, ...] = (APPROVE, APPROVE_FOR_SESSION, DECLINE)
SHELL = "run_shell_command"

Emit = Callable[[str, EventPayload], None]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the approver is asked: the call, its decoded `args` and the `preview`
    (`kward.tools.preview`)."""

    session_id: str
    turn_id: str
    call: ToolCall
    args: Mapping[str, Any]
    preview: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Decision:
    """An approver's answer: `decision` (one of DECISIONS), the client's `reason`, the
    `outcome` (see `kward.model.ApprovalDecided`) and, for an approval, the edited `args`
    the call runs with instead of its own (None: as the model gave them)."""

    decision: ApprovalDecision
    reason: str | None = None
    outcome: ApprovalOutcome = "answered"
    args: Mapping[str, Any] | None = None


class Approver(Protocol):
    """Asks someone about one call. `announce(request_id)` is called once the question is
    on its way (the gate emits approvalRequested then). Blocks the turn's thread; returns
    a Decision (a decline for a timeout, a cancel or a client gone), never raises."""

    def ask(self, request: ApprovalRequest, cancel: CancelToken, timeout: float,
            announce: Callable[[str], None]) -> Decision: ...

    def available(self) -> bool:
        """Whether the other side said it answers approval questions."""
        ...


@dataclass(slots=True)
class _SessionState:
    mode: str | None = None  # the session's override; None: the configured mode
    tools: set[str] = field(default_factory=set)  # approved for the session (not the shell)
    commands: set[str] = field(default_factory=set)  # shell commands approved for the session


class ApprovalPolicy:
    """The runtime's policy: the face's default mode, its approver (None: nobody can
    answer), and each session's override and approvals (by RPC session id)."""

    def __init__(self, approver: Approver | None = None, default_mode: str = OFF):
        self.approver = approver
        self.default_mode = default_mode
        self._lock = threading.Lock()
        self._sessions: dict[str, _SessionState] = {}

    def configured(self, configured: str | None) -> str:
        """The mode in force when no session overrides it."""
        return configured if configured is not None else self.default_mode

    def mode(self, session_id: str, configured: str | None) -> str:
        with self._lock:
            state = self._sessions.get(session_id)
            override = state.mode if state is not None else None
        return override if override is not None else self.configured(configured)

    def set_mode(self, session_id: str, mode: str) -> None:
        """The session's override (InvalidParams naming `value` for an unknown mode)."""
        if mode not in APPROVAL_MODES:
            raise InvalidParams(f"Invalid params: approvalMode must be one of {', '.join(APPROVAL_MODES)}",
                                data={"param": "value"})
        with self._lock:
            self._sessions.setdefault(session_id, _SessionState()).mode = mode

    def forget(self, session_id: str) -> None:
        """The session was closed: drop its override and approvals."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def gate(self, *, session_id: str, turn_id: str, configured: str | None, timeout: float, emit: Emit,
             cancel: CancelToken, ctx: ToolContext, read_only: Callable[[str], bool]) -> "Gate":
        return Gate(self, session_id, turn_id, configured, timeout, emit, cancel, ctx, read_only)

    def approved_for_session(self, session_id: str, call: ToolCall, args: Mapping[str, Any]) -> bool:
        with self._lock:
            state = self._sessions.get(session_id)
            if state is None:
                return False
            if call.name == SHELL:
                return _command(args) in state.commands
            return call.name in state.tools

    def approve_for_session(self, session_id: str, call: ToolCall, args: Mapping[str, Any]) -> None:
        with self._lock:
            state = self._sessions.setdefault(session_id, _SessionState())
            if call.name == SHELL:
                command = _command(args)
                if command is not None:
                    state.commands.add(command)
            else:
                state.tools.add(call.name)


def _command(args: Mapping[str, Any]) -> str | None:
    command = args.get("command")
    return command if isinstance(command, str) else None


def edited(call: ToolCall, args: Mapping[str, Any]) -> ToolCall:
    """`call` with the approver's edited `args` (the same id and name)."""
    return ToolCall(call.id, call.name, json.dumps(dict(args), ensure_ascii=False))


def edited_note(call: ToolCall, args: Mapping[str, Any]) -> str:
    """What ends the result of a call run with edited `args`, for the model to read."""
    command = _command(args)
    if call.name == SHELL and command is not None:
        return f"\n\n(The user edited the command before it ran; what ran: {command})"
    return f"\n\n(The user edited the call before it ran; it ran with: {json.dumps(dict(args), ensure_ascii=False)})"


class Gate:
    """One turn's gate: `check(call, args)` returns None when the call may run as it is, a
    `ToolCall` to run in its place (the approver edited its args: `edited`), else the
    ``Declined: ...`` text that is its result. On the turn's worker thread."""

    def __init__(self, policy: ApprovalPolicy, session_id: str, turn_id: str, configured: str | None,
                 timeout: float, emit: Emit, cancel: CancelToken, ctx: ToolContext,
                 read_only: Callable[[str], bool]):
        self.policy = policy
        self.read_only = read_only  # the turn's tools' `ToolRegistry.read_only`
        self.session_id = session_id
        self.turn_id = turn_id
        self.configured = configured
        self.timeout = timeout
        self.emit = emit
        self.cancel = cancel
        self.ctx = ctx

    def check(self, call: ToolCall, args: Mapping[str, Any]) -> str | ToolCall | None:
        if self.read_only(call.name):
            return None
        mode = self.policy.mode(self.session_id, self.configured)
        if mode == OFF:
            return None
        if mode == READ_ONLY:
            return self._resolved(call, Decision(DECLINE, f"approval mode is readOnly: {call.name} may change "
                                                          "files or run commands", "readOnly"))
        if self.policy.approved_for_session(self.session_id, call, args):
            return self._resolved(call, Decision(APPROVE, "approved for this session", "session"))
        approver = self.policy.approver
        if approver is None:
            return self._resolved(call, Decision(
                DECLINE, "approval mode is ask and nothing here can answer approval questions; set "
                         "security.approvalMode to off to allow tools without asking", "unsupported"))
        if not approver.available():
            return self._resolved(call, Decision(
                DECLINE, "approval mode is ask and the client cannot answer approval requests (it did not declare "
                         "capabilities.serverRequests [\"tool/requestApproval\"] in initialize); set "
                         "approvalMode to off to allow tools without asking", "unsupported"))
        request = ApprovalRequest(self.session_id, self.turn_id, call, args, preview(call.name, call.arguments,
                                                                                      self.ctx))

        def announce(request_id: str) -> None:
            self.emit("approvalRequested", ApprovalAsked(call, request_id, request.preview))

        decision = approver.ask(request, self.cancel, self.timeout, announce)
        ran = decision.args if decision.args is not None else args
        if decision.decision == APPROVE_FOR_SESSION:
            self.policy.approve_for_session(self.session_id, call, ran)
        declined = self._resolved(call, decision)
        if declined is None and decision.args is not None:
            return edited(call, decision.args)
        return declined

    def _resolved(self, call: ToolCall, decision: Decision) -> str | None:
        self.emit("approvalResolved", ApprovalDecided(call, decision.decision, decision.reason, decision.outcome))
        if decision.decision in (APPROVE, APPROVE_FOR_SESSION):
            return None
        return f"Declined: {decision.reason or 'the user declined this tool call'}"
