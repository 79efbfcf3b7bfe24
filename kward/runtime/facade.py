"""The Runtime: the one core object every face drives (see the package docstring).

Construction is cheap: the services (session manager, question broker, model service,
agent engine, turn manager, and the auth, memory, telemetry, resources, compaction and
approval parts) are built on first use (`Lazy`), each importing its module only then, so a face
that only answers a handshake or lists sessions never imports the agent, the providers or
`requests`. Once built, each service is thread-safe itself; every operation below may be
called from any thread. The slow ones (resume, clone, fork, export, transcript, list of
sessions, close and delete with running turns, compaction, model listings, model and
reasoning changes, reload, stats, a session's diff) belong on a worker thread; the rest are quick (a lookup,
a stat, one appended line).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, TypeVar

from kward.config.secrets import KnownSecrets
from kward.config.settings import LiveSettings, Settings
from kward.config.store import ConfigStore, Paths
from kward.errors import InputTooLarge, InvalidParams
from kward.runtime.startup import RuntimeInfo, announce, warm_up_modules

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.approval import ApprovalPolicy, Approver
    from kward.agent.engine import AgentEngine
    from kward.agent.questions import QuestionBroker
    from kward.agent.scheduler import Turn, TurnManager
    from kward.compaction.events import CompactionResult
    from kward.model import ChangeSummary, TurnEvent
    from kward.providers.model_service import ModelChoice, ModelListing, ModelService
    from kward.resources.observers import EventFields
    from kward.runtime.auth import RuntimeAuth
    from kward.runtime.compaction import RuntimeCompaction
    from kward.runtime.mcp import McpRuntime
    from kward.runtime.memory import MemoryRuntime
    from kward.runtime.notices import Notice, SessionEvent
    from kward.runtime.resources import RuntimeResources
    from kward.runtime.state import SessionState, SessionStats
    from kward.runtime.telemetry import TelemetryRuntime
    from kward.sessions.export import Exported
    from kward.sessions.handle import SessionHandle
    from kward.sessions.listing import SessionSummary
    from kward.sessions.manager import ForkEntry, SessionManager
    from kward.sessions.session import Changed
    from kward.sessions.transcript import Transcript
    from kward.workspace import WorkspaceInfo

log = logging.getLogger(__name__)

STOP_WAIT = 5.0  # seconds a close/delete waits for the canceled turns to end

EventSink = Callable[["TurnEvent"], None]
_T = TypeVar("_T")


class Lazy(Generic[_T]):
    """A service built by `build` on first use, once: `get` builds it under the runtime's
    lock (an RLock: a builder may use another service), `peek` never builds. Any thread."""

    def __init__(self, lock: threading.RLock, build: Callable[[], _T]):
        self._lock = lock
        self._build = build
        self._value: _T | None = None

    def get(self) -> _T:
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._build()
        return value

    def peek(self) -> _T | None:
        """The service if it was built (e.g. no turn was ever started: nothing to cancel)."""
        return self._value


def _nothing() -> None:
    return None


def _close_change_watchers() -> None:
    """The watchers shell commands keep between them (inotify descriptors), if any."""
    from kward.tools import lookcache

    lookcache.close_all()


def _drop(_item: object) -> None:
    return None


class Runtime:
    """Sessions, turns, models and settings of one process, for one face.

    What the face injects: `submit(job) -> bool` runs a job on its worker pool (False once
    the pool is shut down); `event_sink(event)` receives the events of turns started
    without a sink of their own and must not block (`kward.agent.eventlog.EventLog`);
    `make_room()` blocks a streaming worker while the face's consumer is behind (never
    called on the face's dispatching thread); `admit()` is called before a turn is queued
    and raises (e.g. `Overloaded`) to refuse it; `notify(notice)` receives the notices of
    `kward.runtime.notices` (a question a tool asks; a session's name or usage this
    process changed, reported under that session's lock, so `notify` must not block for
    a SessionEvent; RuntimeChanged after a model, setting, config or credentials change or
    a reload). `env` is the process environment the providers and settings are read
    from (default `os.environ`); `secrets` the known credential values scrubbed from tool
    output (built from env, config and auth.json when not given).
    `event_payload(type, payload)` gives an event's payload as the face's protocol shows
    it, which plugin observers see (the RPC face:
    `kward.rpc.wire.events.event_payload`; without it observers see nothing). `live_settings`
    (a `LiveSettings` of `config` and `env`, made on first use when not given) gives
    `info()` the settings of config.json now; a face passes the one its `settings` came
    from, so that an unchanged file is not resolved again. `wants_event(type)` says whether
    the face's consumer takes turn events of that type (the RPC face: the client did not opt
    out of it), so that work only such events need (live tool output) is skipped.
    A listening server of several clients (`kward.rpc.daemon`) passes `several_clients`
    (one client's new session never tidies away another's empty one) and `make_room_for`
    (a turn paces itself by the clients of its own session, given its RPC id, in place of
    `make_room`).
    """

    def __init__(self, *, paths: Paths, config: ConfigStore, settings: Settings, launch_cwd: str | Path,
                 submit: Callable[[Callable[[], None]], bool], env: Mapping[str, str] = os.environ,
                 secrets: KnownSecrets | None = None, event_sink: EventSink = _drop,
                 notify: Callable[[Notice], None] = _drop, make_room: Callable[[], None] = _nothing,
                 admit: Callable[[], None] = _nothing,
                 event_payload: EventFields | None = None,
                 live_settings: LiveSettings | None = None, wants_event: Callable[[str], bool] = lambda _type: True,
                 approver: Approver | None = None, approval_default: str = "off", several_clients: bool = False,
                 make_room_for: Callable[[str], None] | None = None):
        self.paths = paths
        self.config = config
        self.settings = settings
        self.launch_cwd = Path(launch_cwd)  # the default workspace
        self._current_workspace: str | None = None  # of the session opened last (see `current_workspace`)
        self.env = env
        self.secrets = secrets if secrets is not None else KnownSecrets(env, config, paths.auth_file)
        self._submit = submit
        self._event_sink = event_sink
        self._notify = notify
        self._make_room = make_room
        self._make_room_for = make_room_for  # (a listening server's: pacing by the turn's session)
        self._admit = admit
        self.event_payload = event_payload
        self.wants_event = wants_event
        self._live_settings = live_settings
        self._approver = approver  # who answers approval questions (None: nobody can)
        self.approval_default = approval_default  # the face's mode when config.json sets none
        self.several_clients = several_clients  # a listening server: no client's session is another's to tidy
        lock = threading.RLock()
        self._sessions = Lazy(lock, self._build_sessions)
        self._questions = Lazy(lock, self._build_questions)
        self._models = Lazy(lock, self._build_models)
        self._engine = Lazy(lock, self._build_engine)
        self._turns = Lazy(lock, self._build_turns)
        self._auth = Lazy(lock, self._build_auth)
        self._memory = Lazy(lock, self._build_memory)
        self._telemetry = Lazy(lock, self._build_telemetry)
        self._resources = Lazy(lock, self._build_resources)
        self._compaction = Lazy(lock, self._build_compaction)
        self._approvals = Lazy(lock, self._build_approvals)
        self._mcp = Lazy(lock, self._build_mcp)
        self._services: dict[str, Lazy[Any]] = {
            "sessions": self._sessions, "questions": self._questions, "models": self._models,
            "engine": self._engine, "turns": self._turns, "auth": self._auth, "memory": self._memory,
            "telemetry": self._telemetry, "resources": self._resources, "compaction": self._compaction,
            "approvals": self._approvals, "mcp": self._mcp}

    # --- the services, built on first use ----------------------------------------------

    def has_service(self, name: str) -> bool:
        """Whether the service `name` (sessions, questions, models, engine, turns, auth,
        memory, telemetry, resources, compaction, approvals, mcp) was built."""
        return self._services[name].peek() is not None

    @property
    def sessions(self) -> SessionManager:
        return self._sessions.get()

    @property
    def approvals(self) -> ApprovalPolicy:
        return self._approvals.get()

    @property
    def questions(self) -> QuestionBroker:
        return self._questions.get()

    @property
    def models(self) -> ModelService:
        return self._models.get()

    @property
    def engine(self) -> AgentEngine:
        return self._engine.get()

    @property
    def turns(self) -> TurnManager:
        return self._turns.get()

    @property
    def auth(self) -> RuntimeAuth:
        """Credentials and logins (kward.runtime.auth)."""
        return self._auth.get()

    @property
    def memory(self) -> MemoryRuntime:
        """Memory operations and what turns get of them (kward.runtime.memory)."""
        return self._memory.get()

    @property
    def telemetry(self) -> TelemetryRuntime:
        """Telemetry records, stats and the token CSV (kward.runtime.telemetry)."""
        return self._telemetry.get()

    @property
    def resources(self) -> RuntimeResources:
        """Prompt templates, skills, plugins, AGENTS.md (kward.runtime.resources)."""
        return self._resources.get()

    @property
    def compaction(self) -> RuntimeCompaction:
        """Manual and automatic compaction (kward.runtime.compaction)."""
        return self._compaction.get()

    @property
    def mcp(self) -> McpRuntime:
        """The configured MCP servers and web search (kward.runtime.mcp)."""
        return self._mcp.get()

    def _build_mcp(self) -> McpRuntime:
        from kward import __version__
        from kward.runtime.mcp import McpRuntime

        if self._live_settings is None:  # (a race builds two, harmlessly)
            self._live_settings = LiveSettings(self.config, self.env)
        return McpRuntime(self._live_settings, client_version=__version__, changed=self._changed)

    def _build_sessions(self) -> SessionManager:
        from kward.sessions.manager import SessionManager

        return SessionManager(self.paths.sessions_dir, str(self.launch_cwd), on_change=self._session_changed,
                              tidy_on_open=not self.several_clients)

    def _session_changed(self, handles: list[SessionHandle], change: Changed) -> None:
        """This process renamed a session or stored usage on it: its notices
        (`kward.runtime.changes.session_notices`). On the appending thread, under the
        session's lock (see `SessionManager`)."""
        from kward.runtime.changes import session_notices
        from kward.timefmt import now_iso

        for notice in session_notices(handles, change, now_iso()):
            self._notify(notice)

    def _changed(self) -> None:
        """What `info()` reports may differ now: a RuntimeChanged notice."""
        from kward.runtime.notices import RuntimeChanged

        self._notify(RuntimeChanged())

    def _build_questions(self) -> QuestionBroker:
        from kward.agent.questions import QuestionBroker
        from kward.runtime.notices import QuestionAsked

        def asked(session_id: str, request_id: str, questions: list[dict[str, Any]]) -> None:
            self._notify(QuestionAsked(session_id, request_id, questions))

        return QuestionBroker(asked)

    def _build_approvals(self) -> ApprovalPolicy:
        from kward.agent.approval import ApprovalPolicy

        return ApprovalPolicy(self._approver, self.approval_default)

    def _build_models(self) -> ModelService:
        from kward.providers.model_service import ModelService

        return ModelService(self.config)

    def _build_engine(self) -> AgentEngine:
        from kward.agent.engine import AgentEngine
        from kward.agent.hooks import Hooks
        from kward.runtime.planner import RuntimePlanner

        return AgentEngine(paths=self.paths, config=self.config, questions=self.questions, env=self.env,
                           secrets=self.secrets, models=self.models, credentials=self.auth.provider_credentials,
                           planner=RuntimePlanner(self), wants_event=self.wants_event, approvals=self.approvals,
                           hooks=Hooks(self._notify, self.secrets.scrub_output))

    def _build_turns(self) -> TurnManager:
        from kward.agent.scheduler import TurnManager

        # (the engine is built when a turn first runs or steers)
        return TurnManager(submit=self._submit, publish=self._event_sink, make_room=self._make_room,
                           make_room_for=self._make_room_for,
                           execute=lambda turn, session: self.engine.execute(turn, session),
                           steering_supported=lambda: self.engine.steering_supported())

    def _build_auth(self) -> RuntimeAuth:
        from kward.runtime.auth import RuntimeAuth

        return RuntimeAuth(self.paths, self.config, self.env, self.secrets, notify=self._notify,
                           changed=self._credentials_changed)

    def _credentials_changed(self) -> None:
        """Credentials changed (a login or logout): select the provider again, list models
        again; the provider `info()` sees may be another (RuntimeChanged)."""
        engine, models = self._engine.peek(), self._models.peek()
        if engine is not None:
            engine.invalidate()
        if models is not None:
            models.catalog.clear()
        self._changed()

    def _build_memory(self) -> MemoryRuntime:
        from kward.runtime.memory import MemoryRuntime

        return MemoryRuntime(self.paths.memory_dir, self.config, self.env, workspace=self.current_workspace,
                             session=self.session, scrub=self.secrets.scrub_output)

    def _build_telemetry(self) -> TelemetryRuntime:
        from kward.runtime.telemetry import TelemetryRuntime

        return TelemetryRuntime(self.paths.logs_dir, self.config, self.env, self.secrets)

    def _build_resources(self) -> RuntimeResources:
        from kward.runtime.resources import RuntimeResources

        return RuntimeResources(self.paths.config_dir, self.config, self.env, launch_cwd=self.launch_cwd,
                                session=self.session, event_payload=self.event_payload,
                                max_input_chars=self.settings.max_input_chars)

    def _build_compaction(self) -> RuntimeCompaction:
        from kward.runtime.compaction import RuntimeCompaction

        return RuntimeCompaction(self, self._notify)

    # --- the runtime as a whole -----------------------------------------------------

    def info(self) -> RuntimeInfo:
        """What a face announces at start (`kward.runtime.startup.announce`). Never fails:
        problems become warnings. Cheap (reads config.json and the environment)."""
        # no keyring at start-up: the files and the environment, unless auth is in use already
        auth = self._auth.peek()
        credentials = auth.provider_credentials if auth is not None else None
        if self._live_settings is None:  # (a race builds two, harmlessly)
            self._live_settings = LiveSettings(self.config, self.env)
        info = announce(self.settings, self._live_settings, self.paths, credentials)
        return info._replace(approval_mode=info.approval_mode or self.approval_default)

    def warm_up_modules(self) -> list[str]:
        """The modules the first session request and the first turn need, for a face to
        import ahead of them (`kward.runtime.startup.warm_up_modules`). Quick; any thread;
        never raises."""
        return warm_up_modules(self.config, self.env, self.paths)

    def read_config(self) -> dict[str, Any]:
        return self.config.load()

    def update_config(self, values: dict[str, Any]) -> dict[str, Any]:
        """Merge `values` into config.json; returns the merged config (then RuntimeChanged)."""
        merged = self.config.update(values)
        self._changed()
        return merged

    def resolve_workspace(self, root: str | None) -> Path:
        """The real directory `root` names (relative to the launch directory; default it)."""
        from kward.workspace import resolve_root

        return resolve_root(root, self.launch_cwd)

    def current_workspace(self, root: str | None) -> Path:
        """`resolve_workspace(root)`, except that no `root` names the workspace of the
        session this runtime's face created, resumed, cloned or forked last (it stays the
        default after that session is closed); before any, the launch directory. The
        default of the memory methods, whose client may have launched kward anywhere. Any
        thread (the workspace is one reference, written and read whole)."""
        current = self._current_workspace
        if root is None and current is not None:
            return Path(current)
        return self.resolve_workspace(root)

    def _opened(self, handle: "SessionHandle") -> "SessionHandle":
        """A session was opened: turns will follow, so the MCP servers start (in the
        background; a process that only lists sessions starts none)."""
        self._current_workspace = handle.workspace_root
        try:
            self.mcp.start()
        except Exception:  # MCP must never stop a session from opening
            log.exception("MCP servers could not be started")
        return handle

    def describe_workspace(self, root: str | None) -> "WorkspaceInfo":
        from kward.workspace import describe

        return describe(self.resolve_workspace(root))

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools the model is given (with a UI to ask questions)."""
        schemas: list[dict[str, Any]] = self.mcp.tools(self.resources.core.tools(self.engine.tools)).schemas(True)
        return schemas

    def shutdown(self) -> None:
        """Once, at the end: cancel every turn, then close every session (a session whose
        turn still runs closes when that turn ends). Never raises."""
        steps: list[Callable[[], None]] = []
        auth, turns, sessions = self._auth.peek(), self._turns.peek(), self._sessions.peek()
        memory, telemetry, resources = self._memory.peek(), self._telemetry.peek(), self._resources.peek()
        mcp = self._mcp.peek()
        if auth is not None:  # pending logins: their callback listeners and threads
            steps.append(auth.close)
        if turns is not None:
            steps.append(turns.shutdown)
        if sessions is not None:
            steps.append(sessions.shutdown_all)
        if memory is not None:  # hit counts
            steps.append(memory.shutdown)
        if telemetry is not None:  # the log file
            steps.append(telemetry.shutdown)
        if resources is not None:
            steps.append(resources.shutdown)
        if mcp is not None:  # the servers' processes and sessions
            steps.append(mcp.close)
        steps.append(_close_change_watchers)
        for step in steps:
            try:
                step()
            except Exception:
                log.exception("shutdown step failed")

    # --- sessions ---------------------------------------------------------------------

    def session(self, session_id: str) -> SessionHandle:
        """The open session with that id; SessionNotFound."""
        return self.sessions.get(session_id)

    def create_session(self, workspace_root: str | None = None, name: str | None = None, *,
                       memory: bool = True) -> "SessionHandle":
        """`memory=False`: the session's turns use no memory (a one-shot prompt's session)."""
        handle = self.sessions.create(workspace_root, name or None)
        if not memory:
            self.memory.exclude(handle)
        return self._opened(handle)

    def resume_session(self, path: str, workspace_root: str | None = None) -> "SessionHandle":
        return self._opened(self.sessions.resume(path, workspace_root))

    def list_sessions(self, workspace_root: str | None = None, limit: int | None = 20) -> list[SessionSummary]:
        """Recent sessions of the workspace as a tree. In a process that has no session open
        (a UI's list refresh) the listing reads the files without the session manager."""
        sessions = self._sessions.peek()
        if sessions is not None:  # (it leaves out this process's own idle, empty sessions)
            return sessions.list_workspace(workspace_root, limit)
        from kward.sessions.listing import list_workspace

        return list_workspace(self.paths.sessions_dir, str(self.resolve_workspace(workspace_root)), limit)

    def rename_session(self, session_id: str, name: str | None) -> "SessionHandle":
        """A blank name removes the name."""
        return self.sessions.rename(session_id, name if name and name.strip() else None)

    def clone_session(self, session_id: str) -> "SessionHandle":
        return self._opened(self.sessions.clone(session_id))

    def fork_messages(self, session_id: str) -> "list[ForkEntry]":
        return self.sessions.fork_messages(session_id)

    def fork_session(self, session_id: str, entry_id: str) -> "tuple[SessionHandle, str]":
        """A new session holding the messages before that user message, and its text."""
        handle, text = self.sessions.fork(session_id, entry_id)
        return self._opened(handle), text

    def export_session(self, session_id: str, path: str | None = None, format: str | None = None) -> "Exported":
        return self.sessions.export(session_id, path, format)

    def transcript(self, session_id: str) -> "Transcript":
        return self.sessions.transcript(session_id)

    def close_session(self, session_id: str) -> None:
        """Cancel the turns started through this id, wait for them to end (up to
        STOP_WAIT s), then close the id (the file, when no other id is left on it)."""
        handle = self.sessions.get(session_id)
        self._stop_turns([handle])
        self.sessions.close(session_id)
        self._forget_changes([handle])
        self._forget_ids([session_id])

    def delete_session(self, session_id: str, *, force: bool = False) -> str:
        """Delete the session's file (its path is returned): refused (before any turn is stopped) when another
        process has it open, unless `force`; else every id on the file has its turns
        canceled and waited for, and is closed."""
        sessions = self.sessions
        sessions.check_deletable(session_id, force=force)
        handles = sessions.handles_on(session_id)
        self._stop_turns(handles)
        path = sessions.delete(session_id, force=force)
        self._forget_changes(handles)
        self._forget_ids([h.id for h in handles])
        return path

    def _forget_ids(self, session_ids: list[str]) -> None:
        """Drop the approval overrides and approvals, and the hooks' state, of these closed ids."""
        approvals = self._approvals.peek()
        engine = self._engine.peek()
        for session_id in session_ids:
            if approvals is not None:
                approvals.forget(session_id)
            if engine is not None:
                engine.hooks.forget(session_id)

    def _forget_changes(self, handles: list[SessionHandle]) -> None:
        """Drop the change trackers (`session_diff`) of the files these ids closed."""
        from kward.runtime.changes import forget_changes

        forget_changes(self._engine.peek(), handles)

    def session_diff(self, session_id: str) -> "ChangeSummary":
        """What the session's tool calls changed since this process opened its file
        (`kward.runtime.changes.session_diff`). Slow: it reads the files."""
        from kward.runtime.changes import session_diff

        handle = self.sessions.get(session_id)
        return session_diff(self._engine.peek(), handle, self.secrets.scrub_output)  # (no engine: no turn ran)

    def _stop_turns(self, handles: list[SessionHandle]) -> None:
        """Cancel the queued and running turns started through these ids and wait for them
        to end (a canceled turn still records its last tool result and turnFinished)."""
        turns = self._turns.peek()
        if turns is None:  # no turn was ever started: nothing to stop
            return
        for handle in handles:
            turns.cancel_session(handle)
        deadline = time.monotonic() + STOP_WAIT
        for handle in handles:
            turns.wait_idle(handle, max(0.0, deadline - time.monotonic()))

    # --- turns ------------------------------------------------------------------------

    def check_input(self, text: str) -> str:
        """`text` when it is within the input limit; InputTooLarge (`input_too_large`)."""
        limit = self.settings.max_input_chars
        if len(text) > limit:
            raise InputTooLarge(len(text), limit)
        return text

    def start_turn(self, session_id: str, text: str, *, attachments: object = None,
                   behavior: str | None = None, headers: Mapping[str, str] | None = None,
                   sink: EventSink | None = None) -> "Turn":
        """Queue a turn on the session (or, `behavior="steer"` or by default while one runs
        on a steering provider and none is queued, hand the input to the running turn:
        inputs never overtake each other, see kward.agent.scheduler); returns the turn the
        input went to. Its events go to `sink` (default: the runtime's event sink), from
        `turnQueued` to `turnFinished`; steered input joins the running turn's events.
        `attachments` are raw image attachments (checked here); `headers` go with the
        model requests (e.g. traceparent)."""
        from kward.agent.attachments import normalize_attachments

        session = self.sessions.get(session_id)
        self.check_input(text)
        images = normalize_attachments(attachments)
        self._admit()
        display = None
        resources = self._resources.peek()
        if resources is not None:  # (else no catalog is loaded: slash input resolves when the turn runs)
            text, display, behavior = resources.classify_input(text, bool(images), behavior)
        return self.turns.start(session, text, images, behavior, dict(headers or {}), sink, display=display)

    def compact(self, session_id: str, instructions: str | None = None,
                sink: Callable[[SessionEvent], None] | None = None) -> CompactionResult:
        """Summarize the session's older conversation now (kward.runtime.compaction); its
        SessionEvent notices go to `sink` (default: the face's notices). Slow."""
        return self.compaction.compact(session_id, instructions, sink)

    def cancel_turn(self, turn_id: str) -> "Turn":
        return self.turns.cancel(turn_id)

    def session_turns(self, session_id: str) -> "list[Turn]":
        """The kept turns started through the RPC id `session_id`, oldest first."""
        return self.turns.of_session(session_id) if self.has_service("turns") else []

    def turn(self, turn_id: str) -> "Turn":
        """A turn this runtime started (the last few hundred finished ones are kept)."""
        return self.turns.get(turn_id)

    def answer_question(self, session_id: str, request_id: str, answers: object) -> None:
        """The user's answers to a QuestionAsked notice; `[]` or None: dismissed."""
        self.sessions.get(session_id)
        self.questions.answer(session_id, request_id, answers or [])

    # --- state ------------------------------------------------------------------------

    def state(self, session_id: str) -> "SessionState":
        from kward.runtime.state import session_state

        return session_state(self, self.sessions.get(session_id))

    def stats(self, session_id: str) -> "SessionStats":
        from kward.runtime.state import session_stats

        return session_stats(self, self.sessions.get(session_id))

    # --- models and settings ----------------------------------------------------------

    def list_models(self, refresh: bool = False) -> "ModelListing":
        return self.models.list_models(self.engine.selection(), refresh=refresh)

    def openrouter_catalog(self) -> "ModelListing":
        engine = self.engine
        return self.models.openrouter_catalog(engine.openrouter_provider(), engine.selection())

    def current_model(self, *, load: bool = False) -> "ModelChoice":
        """The current model; `load` may ask the provider about an unknown model."""
        return self.models.current(self.engine.selection(), load=load)

    def set_model(self, model: str, provider: str | None = None) -> "ModelChoice":
        """Store the model (and provider) in config.json (RuntimeChanged); returns the new
        current model."""
        self.models.set_model(self.engine.selection(), model, provider)
        self._changed()
        return self.current_model(load=True)

    def set_reasoning(self, effort: str) -> "ModelChoice":
        """Store the reasoning level (RuntimeChanged); returns the new current model."""
        self.models.set_effort(self.engine.selection(), effort)
        self._changed()
        return self.current_model(load=True)

    def update_setting(self, setting: str, value: str, session_id: str | None = None) -> str:
        """Change `defaultModel` or `defaultThinkingLevel` (applied live; RuntimeChanged), or
        the approval mode of session `session_id` (`approvalMode`: that session only, no
        RuntimeChanged); returns what the user is told."""
        if setting == "approvalMode" and session_id is not None:
            self.approvals.set_mode(session_id, value)
            message = f"Approval mode of this session set to {value}."
        elif setting == "defaultModel":
            provider, model = self.models.set_default_model(value)
            self._changed()
            message = f"Default model set to {provider}/{model}."
            if self.env.get("KWARD_PROVIDER"):
                message += " KWARD_PROVIDER in the environment still chooses the provider of this process."
        elif setting == "defaultThinkingLevel":
            effort = self.models.set_effort(self.engine.selection(), value, param="value")
            self._changed()
            message = f"Default thinking level set to {effort}."
            current = self.current_model(load=True)
            if current.effective_effort is not None:
                message += f" {current.entry.id} uses {current.effective_effort}."
        else:
            raise InvalidParams(f"Unsupported setting: {setting}; use defaultModel, defaultThinkingLevel or approvalMode",
                                data={"param": "settingId"})
        return message

    def reload(self) -> None:
        """Forget cached model listings and the provider selection: the next use reads
        config.json, auth.json and the provider again; read prompt templates, skills,
        plugins and the AGENTS.md files again (then RuntimeChanged)."""
        self.resources.reload()
        self.models.catalog.clear()
        try:
            self.engine.reload()
        finally:  # (settings read again even when the provider they name cannot be built)
            self._changed()
