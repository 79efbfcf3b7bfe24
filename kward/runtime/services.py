"""The services of a `kward.runtime.Runtime`, built on first use: the session manager,
question broker, model service, agent engine, turn manager, and the runtime's auth,
memory, telemetry, resources and compaction parts.

`RuntimeServices` is the Runtime's base: each property builds its service once, under
`_lock` (an RLock: a service's builder may use another service), and imports its module
only then, so a face that only answers a handshake never imports the agent, the providers
or `requests`. The builders read what `Runtime.__init__` stores (`paths`, `config`,
`env`, `secrets`, `launch_cwd`, `_submit`, `_event_sink`, `_notify`, `_make_room`).
Every property may be called from any thread; each service is thread-safe itself.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.engine import AgentEngine
    from kward.agent.questions import QuestionBroker
    from kward.agent.turns import TurnManager
    from kward.providers.model_service import ModelService
    from kward.runtime.auth import RuntimeAuth
    from kward.runtime.compaction import RuntimeCompaction
    from kward.runtime.memory import MemoryRuntime
    from kward.runtime.resources import RuntimeResources
    from kward.runtime.telemetry import TelemetryRuntime
    from kward.sessions.manager import SessionManager


class RuntimeServices:
    """The lazily built services (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._services: dict[str, Any] = {}

    def _service(self, name: str, build: Callable[[], Any]) -> Any:
        service = self._services.get(name)
        if service is None:
            with self._lock:
                service = self._services.get(name)
                if service is None:
                    service = self._services[name] = build()
        return service

    def has_service(self, name: str) -> bool:
        """Whether a service was built (e.g. no turn was ever started: nothing to cancel)."""
        return name in self._services

    @property
    def sessions(self) -> "SessionManager":
        from kward.sessions.manager import SessionManager

        return self._service("sessions", lambda: SessionManager(self.paths.sessions_dir, str(self.launch_cwd)))

    @property
    def questions(self) -> "QuestionBroker":
        from kward.agent.questions import QuestionBroker
        from kward.runtime.notices import QuestionAsked

        def asked(session_id: str, request_id: str, questions: list) -> None:
            self._notify(QuestionAsked(session_id, request_id, questions))

        return self._service("questions", lambda: QuestionBroker(asked))

    @property
    def models(self) -> "ModelService":
        from kward.providers.model_service import ModelService

        return self._service("models", lambda: ModelService(self.config))

    @property
    def engine(self) -> "AgentEngine":
        from kward.agent.engine import AgentEngine
        from kward.runtime.planner import RuntimePlanner

        return self._service("engine", lambda: AgentEngine(paths=self.paths, config=self.config,
                                                           questions=self.questions, env=self.env,
                                                           secrets=self.secrets, models=self.models,
                                                           credentials=self.auth.provider_credentials,
                                                           planner=RuntimePlanner(self)))

    @property
    def auth(self) -> "RuntimeAuth":
        """Credentials and logins (kward/runtime/auth.py)."""
        from kward.runtime.auth import RuntimeAuth

        return self._service("auth", lambda: RuntimeAuth(self, self._notify))

    @property
    def memory(self) -> "MemoryRuntime":
        """Memory operations and the turn hooks that use them (kward.runtime.memory)."""
        from kward.runtime.memory import MemoryRuntime

        return self._service("memory", lambda: MemoryRuntime(self))

    @property
    def telemetry(self) -> "TelemetryRuntime":
        """Telemetry records, stats and the token CSV (kward.runtime.telemetry)."""
        from kward.runtime.telemetry import TelemetryRuntime

        return self._service("telemetry", lambda: TelemetryRuntime(self))

    @property
    def resources(self) -> "RuntimeResources":
        """Prompt templates, skills, plugins, AGENTS.md (kward/runtime/resources.py)."""
        from kward.runtime.resources import RuntimeResources

        return self._service("resources", lambda: RuntimeResources(self))

    @property
    def compaction(self) -> "RuntimeCompaction":
        """Manual and automatic compaction (kward/runtime/compaction.py)."""
        from kward.runtime.compaction import RuntimeCompaction

        return self._service("compaction", lambda: RuntimeCompaction(self, self._notify))

    @property
    def turns(self) -> "TurnManager":
        from kward.agent.turns import TurnManager

        def build() -> "TurnManager":  # (the engine is built when a turn first runs or steers)
            return TurnManager(submit=self._submit, publish=self._event_sink, make_room=self._make_room,
                               execute=lambda turn, session: self.engine.execute(turn, session),
                               steering_supported=lambda: self.engine.steering_supported())

        return self._service("turns", build)
