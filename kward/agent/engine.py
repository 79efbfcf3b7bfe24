"""The engine behind turns: picks the provider, builds the tool context, names new
sessions, and runs one turn's `TurnPlan` (`kward.agent.plan`): the agent loop for a model
turn, a plugin command for a command turn. Its `planner` resolves each turn's plan (the
runtime's: `kward.runtime.planner`; default `BasePlanner`). The reasoning level a turn's
requests carry is the requested one mapped to what the model offers
(`ModelService.request_effort`).

Thread contract: `execute` runs on a pool worker, concurrently for different sessions
(never twice at once for one session). `_lock` guards the cached provider selection, which
is rebuilt when the settings change (config.json's content: `LiveSettings`) or auth.json
does, after `invalidate()` (a login or logout) or on `reload()`. Credentials come from the
`credentials` source it is built with (the runtime's credential store; default: the
environment and the files). `wants_event(type)` says whether the face's client takes turn
events of a type (`Runtime.wants_event`): live tool output (`toolUpdate`) is only
coalesced and emitted when it does.

Hooks (`hooks`, `kward.agent.hooks`): the command hooks config.json's `hooks` sets run
on each model turn (prompt, tool calls, its end); an unusable `hooks.<event>` fails the
turn with its ConfigError before anything runs, so a policy hook is never silently off.

Approval: each model turn's tool calls go through a gate of `approvals` (the runtime's
`kward.agent.approval.ApprovalPolicy`) in the mode config.json's `security.approvalMode`
(or the session's override) sets; an unusable `security.approval*` value fails the turn
with its ConfigError before any call runs.

What a model turn changed: `changes` holds a tracker per session file
(`kward.agent.changes`), fed every tool result's file changes; once the loop ended
(answered, failed or canceled) the turn's net changes are emitted as `turnDiff`, before
the scheduler's `error` and `turnFinished`, unless `wants_event("turnDiff")` says the
face's client does not take them. The runtime asks `changes` for `sessions/diff` and drops
a session's tracker when its file is closed.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from kward.agent.approval import ApprovalPolicy
from kward.agent.changes import ChangeTracker, SessionChanges
from kward.agent.hooks import Hooks, TurnHooks
from kward.agent.diffs import summarize
from kward.agent.loop import TurnSetup, live_output, run_agent, user_content
from kward.agent.plan import BasePlanner, CommandTurn, ModelTurn, Planner
from kward.agent.questions import QuestionBroker
from kward.agent.scheduler import Turn
from kward.config.secrets import KnownSecrets
from kward.config.settings import LiveSettings, Settings
from kward.config.store import ConfigStore, Paths
from kward.errors import Canceled, InvalidParams
from kward.model import Answer, AssistantMessage, Delta, ToolCall, UserMessage
from kward.providers import specs
from kward.providers.model_service import ModelService
from kward.providers.select import FileCredentials, Selection, build, select_provider
from kward.tools.base import ToolContext
from kward.tools.registry import ToolRegistry, default_registry
from kward.sandbox import policy as sandbox_policy

if TYPE_CHECKING:  # pragma: no cover
    from kward.providers.base import Provider
    from kward.providers.select import CredentialSource
    from kward.sessions.handle import SessionHandle

log = logging.getLogger(__name__)

NAME_CHARS = 120


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def compact_name(text: str) -> str:
    name = " ".join(text.split())
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 3] + "..."


class AgentEngine:
    def __init__(self, *, paths: Paths, config: ConfigStore, questions: QuestionBroker,
                 env: Mapping[str, str] = os.environ, tools: ToolRegistry | None = None,
                 models: ModelService | None = None, secrets: KnownSecrets | None = None,
                 settings: LiveSettings | None = None, credentials: CredentialSource | None = None,
                 planner: Planner | None = None, changes: SessionChanges | None = None,
                 wants_event: Callable[[str], bool] = lambda _type: True, approvals: ApprovalPolicy | None = None,
                 hooks: Hooks | None = None):
        self.paths = paths
        self.credentials = credentials or FileCredentials(env, paths.auth_file)
        self.config = config
        self.settings = settings or LiveSettings(config, env)
        self.models = models or ModelService(config)
        self.questions = questions
        self.env = env
        self.tools = tools or default_registry()
        self.secrets = secrets or KnownSecrets(env, config, paths.auth_file)  # scrubbed from tool output
        self.planner = planner or BasePlanner(paths.config_dir)
        self.changes = changes or SessionChanges()  # what each session's tools changed
        self.wants_event = wants_event  # whether the face's client takes turn events of a type
        self.approvals = approvals or ApprovalPolicy()  # asked before each tool call (kward.agent.approval)
        self.hooks = hooks or Hooks(lambda _notice: None, self.secrets.scrub_output)  # config `hooks`
        self._lock = threading.Lock()
        self._built_from: Settings | None = None  # the Settings and auth.json stat the selection was built from
        self._auth: tuple[int, int] | None = None
        self._selection: Selection | None = None

    def selection(self) -> Selection:
        """The provider selection for the current settings (cached; ConfigError if invalid)."""
        settings = self.settings.current()  # a new object whenever config.json's content changed
        auth = _stat_key(self.paths.auth_file)
        with self._lock:
            if self._selection is None or settings is not self._built_from or auth != self._auth:
                self._selection = select_provider(settings, self.credentials)
                self._built_from, self._auth = settings, auth
            return self._selection

    def invalidate(self) -> None:
        """Forget the cached selection (credentials changed): the next use selects again."""
        with self._lock:
            self._selection = None

    def reload(self) -> Selection:
        self.settings.reload()
        self.invalidate()
        return self.selection()

    def openrouter_provider(self) -> Provider:
        """An OpenRouter provider for the public catalog, whichever provider is active."""
        selection = self.selection()
        if selection.key == "openrouter":
            return selection.provider
        return build(specs.get("openrouter"), self.settings.current(), self.credentials)

    def steering_supported(self) -> bool:
        try:
            return self.selection().provider.supports_steering
        except Exception:
            return False

    def name_session(self, session: SessionHandle, text: str) -> None:
        """Name an unnamed session after its first input."""
        if session.name is None and not any(isinstance(m, UserMessage) for m in session.entry_messages()):
            session.rename(compact_name(text) or None)

    def execute(self, turn: Turn, session: SessionHandle) -> str:
        """Run `turn` on `session` (the TurnManager's `execute`); returns the answer."""
        plan = self.planner.plan(turn, session, self.tools)
        if isinstance(plan, CommandTurn):
            return self._run_command(turn, session, plan)
        return self._run_model(turn, session, plan)

    def _run_command(self, turn: Turn, session: SessionHandle, plan: CommandTurn) -> str:
        """The input and then the command's output are stored, its output is emitted as one
        `assistantDelta` (when there is any) and `answer`. What the command reports with
        `ctx.progress` while it runs becomes `toolUpdate` events of the call
        ``command:<name>`` (coalesced like a tool's output), all before the answer."""
        turn.cancel.raise_if_cancelled()
        self.name_session(session, plan.text)
        session.append_message(UserMessage(plan.text))
        live = None
        if self.wants_event("toolUpdate"):
            call = ToolCall(f"command:{plan.name}", "command", {"command": plan.name, "arguments": plan.arguments})
            live = live_output(call, turn.emit, self.secrets.scrub_output)
        try:
            text = plan.run(live)
        finally:
            if live is not None:
                live.close()
        session.append_message(AssistantMessage(text))
        if text:
            turn.emit("assistantDelta", Delta(text))
        turn.emit("answer", Answer(text))
        return text

    def _run_model(self, turn: Turn, session: SessionHandle, plan: ModelTurn) -> str:
        selection = self.selection()
        self.name_session(session, plan.display or plan.text)
        try:
            ctx = ToolContext(workspace_root=Path(session.workspace_root), read_paths=session.read_paths,
                              cancel=turn.cancel, scrub=self.secrets.scrub_output,
                              sandbox=sandbox_policy(self.settings.current(), self.paths), headers=dict(turn.headers),
                              ask_user=lambda questions: self.questions.ask(session.id, questions, turn.cancel))
        except OSError as exc:  # the workspace was removed (or made unreachable) since the session opened
            raise InvalidParams(f"Workspace path is not available: {session.workspace_root} ({exc.strerror or exc})",
                                reason="workspace_not_found", data={"path": session.workspace_root}) from None
        settings = self.settings.current()
        settings.check("security.approvalMode", "security.approvalTimeoutSeconds")  # never silently off
        gate = self.approvals.gate(session_id=turn.session_id, turn_id=turn.id,
                                   configured=settings.security.approval_mode,
                                   timeout=settings.security.approval_timeout_seconds, emit=plan.emit,
                                   cancel=turn.cancel, ctx=ctx, read_only=plan.tools.read_only)
        hooks = self._turn_hooks(settings, turn, session, ctx)
        provider = plan.recorder.provider(selection.provider)
        effort = self.models.request_effort(selection, turn.cancel)
        setup = TurnSetup(provider=provider, tools=plan.recorder.tools(plan.tools), tool_ctx=ctx,
                          instructions="", refresh_instructions=plan.instructions,
                          model=selection.model, reasoning_effort=effort,
                          context=plan.guard(provider, selection, effort) if plan.guard is not None else None,
                          cancel=turn.cancel, emit=plan.emit, steering=turn.steering,
                          headers=dict(turn.headers), session_key=session.persistent_id, has_ui=True,
                          live_output=self.wants_event("toolUpdate"), gate=gate, hooks=hooks)
        tracker = self.changes.tracker(session.shared)
        setup.changes = tracker.record
        tracker.begin_turn()
        status, answer = "failed", None
        try:
            text, display = plan.text, plan.display
            added = hooks.prompt(plan.text) if hooks is not None else ""
            if added:  # the model reads the hooks' context after the input; the user sees the input
                text, display = f"{plan.text}\n\n{added}", plan.display if plan.display is not None else plan.text
            message = UserMessage(user_content(text, turn.attachments),
                                  display if display is not None and display != text else None)
            with plan.recorder.turn():
                answer = run_agent(session, message, setup)
            status = "completed"
        except Canceled:
            status = "canceled"
            raise
        except BaseException:
            status = "canceled" if turn.cancel.cancelled else "failed"
            raise
        finally:
            if hooks is not None:
                self._turn_end(hooks, status, answer)
            self._report_changes(plan, tracker, session.workspace_root)
        plan.after()
        return answer

    def _turn_hooks(self, settings: Settings, turn: Turn, session: SessionHandle, ctx: ToolContext) -> TurnHooks | None:
        """The turn's hooks (None when none is configured); an unusable `hooks.<event>`
        fails the turn with its ConfigError before anything runs."""
        if settings.hooks.total == 0 and not any(key.startswith("hooks.") for key in settings.problems):
            return None
        settings.check(*(key for key in settings.problems if key.startswith("hooks.")))
        return self.hooks.turn(settings.hooks, session_id=turn.session_id, turn_id=turn.id,
                               cwd=str(ctx.workspace_root), cancel=turn.cancel, sandbox_policy=ctx.sandbox,
                               session_file=session.path)

    @staticmethod
    def _turn_end(hooks: TurnHooks, status: str, answer: str | None) -> None:
        try:
            hooks.turn_end(status, answer)
        except Exception:  # (never expected: a hook's failure is reported, not raised)
            log.exception("the turnEnd hooks could not run")

    def _report_changes(self, plan: ModelTurn, tracker: ChangeTracker, root: str) -> None:
        """Emit the turn's `turnDiff` (its net file changes, `kward.agent.diffs`) unless the
        face's client does not take it, and let go of the turn's baselines. Never raises:
        a failure is logged and the turn ends as it would have."""
        try:
            if self.wants_event("turnDiff"):
                baselines = tracker.turn_baselines()
                plan.emit("turnDiff", summarize(root, baselines.paths, untracked=baselines.untracked,
                                                complete=baselines.complete, scrub=self.secrets.scrub_output))
        except Exception:
            log.exception("the changes of the turn could not be reported")
        finally:
            tracker.end_turn()
