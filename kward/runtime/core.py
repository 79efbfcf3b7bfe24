"""The Runtime: the one core object every face drives (see the package docstring).

Construction is cheap: the services (session manager, question broker, model service,
engine, turn manager; `kward.runtime.services`) are built on first use, so a face that
only answers a handshake never imports the agent, the providers or `requests`. Once
built, each service is thread-safe itself; every operation below may be called from any thread. The
slow ones (resume, clone, fork, export, transcript, list of sessions, close and delete
with running turns, compaction, model listings, model and reasoning changes, reload, stats) belong on
a worker thread; the rest are quick (a lookup, a stat, one appended line).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from kward.config import ConfigStore, Paths, Settings
from kward.errors import InvalidParams
from kward.runtime.services import RuntimeServices
from kward.runtime.startup import RuntimeInfo, announce, warm_up_modules
from kward.secrets import KnownSecrets
from kward.settings import LiveSettings

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.turns import Turn
    from kward.compaction.run import CompactionResult
    from kward.providers.model_service import ModelChoice, ModelListing
    from kward.runtime.state import SessionState, SessionStats
    from kward.sessions.export import Exported
    from kward.sessions.handle import SessionHandle
    from kward.sessions.listing import SessionSummary
    from kward.sessions.manager import ForkEntry
    from kward.sessions.transcript import Transcript
    from kward.workspace import WorkspaceInfo

    EventSink = Callable[[Any], None]  # receives kward.model.TurnEvent

log = logging.getLogger(__name__)

STOP_WAIT = 5.0  # seconds a close/delete waits for the canceled turns to end


def _nothing() -> None:
    return None


def _drop(_item: Any) -> None:
    return None


class Runtime(RuntimeServices):
    """Sessions, turns, models and settings of one process, for one face.

    What the face injects: `submit(job) -> bool` runs a job on its worker pool (False once
    the pool is shut down); `event_sink(event)` receives the events of turns started
    without a sink of their own and must not block (`kward.agent.eventlog.EventLog`);
    `make_room()` blocks a streaming worker while the face's consumer is behind (never
    called on the face's dispatching thread); `admit()` is called before a turn is queued
    and raises (e.g. `Overloaded`) to refuse it; `notify(notice)` receives the notices of
    `kward.runtime.notices` (a question a tool asks). `env` is the process environment
    the providers and settings are read from (default `os.environ`); `secrets` the known
    credential values scrubbed from tool output (built from env, config and auth.json
    when not given). `event_payload(type, payload)` gives an event's payload as the face's
    protocol shows it, which plugin observers see (the RPC face:
    `kward.rpc.wire.events.event_payload`; without it observers see nothing). `live_settings`
    (a `LiveSettings` of `config` and `env`, made on first use when not given) gives
    `info()` the settings of config.json now; a face passes the one its `settings` came
    from, so that an unchanged file is not resolved again.
    """

    def __init__(self, *, paths: Paths, config: ConfigStore, settings: Settings, launch_cwd: str | Path,
                 submit: Callable[[Callable[[], None]], bool], env: Mapping[str, str] = os.environ,
                 secrets: KnownSecrets | None = None, event_sink: EventSink = _drop,
                 notify: Callable[[Any], None] = _drop, make_room: Callable[[], None] = _nothing,
                 admit: Callable[[], None] = _nothing,
                 event_payload: "Callable[[str, Any], dict[str, Any]] | None" = None,
                 live_settings: LiveSettings | None = None):
        self.paths = paths
        self.config = config
        self.settings = settings
        self._launch_cwd = Path(launch_cwd)
        self.env = env
        self.secrets = secrets if secrets is not None else KnownSecrets(env, config, paths.auth_file)
        self._submit = submit
        self._event_sink = event_sink
        self._notify = notify
        self._make_room = make_room
        self._admit = admit
        self.event_payload = event_payload
        self._live_settings = live_settings
        super().__init__()

    @property
    def launch_cwd(self) -> Path:
        """The default workspace."""
        return self._launch_cwd

    # --- the runtime as a whole -----------------------------------------------------

    def info(self) -> RuntimeInfo:
        """What a face announces at start (`kward.runtime.startup.announce`). Never fails:
        problems become warnings. Cheap (reads config.json and the environment)."""
        # no keyring at start-up: the files and the environment, unless auth is in use already
        credentials = self.auth.provider_credentials if self.has_service("auth") else None
        if self._live_settings is None:  # (a race builds two, harmlessly)
            self._live_settings = LiveSettings(self.config, self.env)
        return announce(self.settings, self._live_settings, self.paths, credentials)

    def warm_up_modules(self) -> list[str]:
        """The modules the first session request and the first turn need, for a face to
        import ahead of them (`kward.runtime.startup.warm_up_modules`). Quick; any thread;
        never raises."""
        return warm_up_modules(self.config, self.env, self.paths)

    def read_config(self) -> dict[str, Any]:
        return self.config.load()

    def update_config(self, values: dict[str, Any]) -> dict[str, Any]:
        """Merge `values` into config.json; returns the merged config."""
        return self.config.update(values)

    def resolve_workspace(self, root: str | None) -> Path:
        """The real directory `root` names (relative to the launch directory; default it)."""
        from kward.workspace import resolve_root

        return resolve_root(root, self.launch_cwd)

    def describe_workspace(self, root: str | None) -> "WorkspaceInfo":
        from kward.workspace import describe

        return describe(self.resolve_workspace(root))

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools the model is given (with a UI to ask questions)."""
        return self.resources.core.tools(self.engine.tools).schemas(True)

    def shutdown(self) -> None:
        """Once, at the end: cancel every turn, then close every session (a session whose
        turn still runs closes when that turn ends). Never raises."""
        with self._lock:
            services = dict(self._services)
        steps = []
        if "auth" in services:  # pending logins: their callback listeners and threads
            steps.append(services["auth"].close)
        if "turns" in services:
            steps.append(services["turns"].shutdown)
        if "sessions" in services:
            steps.append(services["sessions"].shutdown_all)
        steps += [services[n].shutdown for n in ("memory", "telemetry") if n in services]  # hit counts, log file
        if "resources" in services:
            steps.append(services["resources"].shutdown)
        for step in steps:
            try:
                step()
            except Exception:
                log.exception("shutdown step failed")

    # --- sessions ---------------------------------------------------------------------

    def session(self, session_id: Any) -> "SessionHandle":
        """The open session with that id; SessionNotFound."""
        return self.sessions.get(session_id)

    def create_session(self, workspace_root: str | None = None, name: str | None = None, *,
                       memory: bool = True) -> "SessionHandle":
        """`memory=False`: the session's turns use no memory (a one-shot prompt's session)."""
        handle = self.sessions.create(workspace_root, name or None)
        if not memory:
            self.memory.exclude(handle)
        return handle

    def resume_session(self, path: str, workspace_root: str | None = None) -> "SessionHandle":
        return self.sessions.resume(path, workspace_root)

    def list_sessions(self, workspace_root: str | None = None, limit: int | None = 20) -> "list[SessionSummary]":
        return self.sessions.list(workspace_root, limit)

    def rename_session(self, session_id: str, name: str | None) -> "SessionHandle":
        """A blank name removes the name."""
        return self.sessions.rename(session_id, name if name and name.strip() else None)

    def clone_session(self, session_id: str) -> "SessionHandle":
        return self.sessions.clone(session_id)

    def fork_messages(self, session_id: str) -> "list[ForkEntry]":
        return self.sessions.fork_messages(session_id)

    def fork_session(self, session_id: str, entry_id: str) -> "tuple[SessionHandle, str]":
        """A new session holding the messages before that user message, and its text."""
        return self.sessions.fork(session_id, entry_id)

    def export_session(self, session_id: str, path: str | None = None, format: str | None = None) -> "Exported":
        return self.sessions.export(session_id, path, format)

    def transcript(self, session_id: str) -> "Transcript":
        return self.sessions.transcript(session_id)

    def close_session(self, session_id: str) -> None:
        """Cancel the turns started through this id, wait for them to end (up to
        STOP_WAIT s), then close the id (the file, when no other id is left on it)."""
        self._stop_turns([self.sessions.get(session_id)])
        self.sessions.close(session_id)

    def delete_session(self, session_id: str, *, force: bool = False) -> str:
        """Delete the session's file (its path is returned): refused (before any turn is stopped) when another
        process has it open, unless `force`; else every id on the file has its turns
        canceled and waited for, and is closed."""
        sessions = self.sessions
        sessions.check_deletable(session_id, force=force)
        self._stop_turns(sessions.handles_on(session_id))
        return sessions.delete(session_id, force=force)

    def _stop_turns(self, handles: list[Any]) -> None:
        """Cancel the queued and running turns started through these ids and wait for them
        to end (a canceled turn still records its last tool result and turnFinished)."""
        if not self.has_service("turns"):  # no turn was ever started: nothing to stop
            return
        for handle in handles:
            self.turns.cancel_session(handle)
        deadline = time.monotonic() + STOP_WAIT
        for handle in handles:
            self.turns.wait_idle(handle, max(0.0, deadline - time.monotonic()))

    # --- turns ------------------------------------------------------------------------

    def check_input(self, text: str) -> str:
        """`text` when it is within the input limit; InvalidParams `input_too_large`."""
        limit = self.settings.max_input_chars
        if len(text) > limit:
            raise InvalidParams(f"Input is too large: {len(text)} characters (the limit is {limit})",
                                reason="input_too_large",
                                data={"input_error_code": "input_too_large", "max_chars": limit,
                                      "actual_chars": len(text)})
        return text

    def start_turn(self, session_id: str, text: str, *, attachments: list[Any] | None = None,
                   behavior: str | None = None, headers: Mapping[str, str] | None = None,
                   sink: EventSink | None = None) -> "Turn":
        """Queue a turn on the session (or, `behavior="steer"` or by default while one runs
        on a steering provider, hand the input to the running turn); returns the turn the
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
        if self.has_service("resources"):  # (else no catalog is loaded: slash input resolves when the turn runs)
            text, display, behavior = self.resources.classify_input(text, bool(images), behavior)
        return self.turns.start(session, text, images, behavior, dict(headers or {}), sink, display=display)

    def compact(self, session_id: str, instructions: str | None = None,
                sink: Callable[[Any], None] | None = None) -> "CompactionResult":
        """Summarize the session's older conversation now (kward.runtime.compaction); its
        SessionEvent notices go to `sink` (default: the face's notices). Slow."""
        return self.compaction.compact(session_id, instructions, sink)

    def cancel_turn(self, turn_id: str) -> "Turn":
        return self.turns.cancel(turn_id)

    def turn(self, turn_id: str) -> "Turn":
        """A turn this runtime started (the last few hundred finished ones are kept)."""
        return self.turns.get(turn_id)

    def answer_question(self, session_id: str, request_id: str, answers: list[Any] | None) -> None:
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
        return self.models.list(self.engine.selection(), refresh=refresh)

    def openrouter_catalog(self) -> "ModelListing":
        engine = self.engine
        return self.models.openrouter_catalog(engine.openrouter_provider(), engine.selection())

    def current_model(self, *, load: bool = False) -> "ModelChoice":
        """The current model; `load` may ask the provider about an unknown model."""
        return self.models.current(self.engine.selection(), load=load)

    def set_model(self, model: str, provider: str | None = None) -> "ModelChoice":
        """Store the model (and provider) in config.json; returns the new current model."""
        self.models.set_model(self.engine.selection(), model, provider)
        return self.current_model(load=True)

    def set_reasoning(self, effort: str) -> "ModelChoice":
        """Store the reasoning level; returns the new current model."""
        self.models.set_effort(self.engine.selection(), effort)
        return self.current_model(load=True)

    def update_setting(self, setting: str, value: str) -> str:
        """Change `defaultModel` or `defaultThinkingLevel` (applied live); returns what the
        user is told."""
        if setting == "defaultModel":
            provider, model = self.models.set_default_model(value)
            message = f"Default model set to {provider}/{model}."
            if self.env.get("KWARD_PROVIDER"):
                message += " KWARD_PROVIDER in the environment still chooses the provider of this process."
        elif setting == "defaultThinkingLevel":
            effort = self.models.set_effort(self.engine.selection(), value, param="value")
            message = f"Default thinking level set to {effort}."
            current = self.current_model(load=True)
            if current.effective_effort is not None:
                message += f" {current.entry.id} uses {current.effective_effort}."
        else:
            raise InvalidParams(f"Unsupported setting: {setting}; use defaultModel or defaultThinkingLevel",
                                data={"param": "settingId"})
        return message

    def reload(self) -> None:
        """Forget cached model listings and the provider selection: the next use reads
        config.json, auth.json and the provider again; read prompt templates, skills,
        plugins and the AGENTS.md files again."""
        self.resources.reload()
        self.models.catalog.clear()
        self.engine.reload()
