"""The composition root behind the RPC methods: the core services one server uses.

Built once by `RpcServer` on the main thread. Services are created on first use (so
`initialize` stays cheap) under `_lock`; after that they are thread-safe themselves.
Handlers reach everything through `call.app`. Nothing here speaks JSON-RPC except the
`notify` callable the server passes in.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from kward.config import ConfigStore, Paths, Settings

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.engine import AgentEngine
    from kward.providers.model_service import ModelService
    from kward.agent.questions import QuestionBroker
    from kward.agent.turns import TurnManager
    from kward.secrets import KnownSecrets
    from kward.sessions.manager import SessionManager


@dataclass
class ClientState:
    """What the client told us in `initialize`. Written by the dispatcher thread only."""

    info: dict[str, Any] | None = None
    opt_out: frozenset[str] = frozenset()
    experimental_api: bool = False
    initialized: bool = False


@dataclass
class App:
    paths: Paths
    config: ConfigStore
    settings: Settings
    launch_cwd: Path
    send_notification: Callable[[str, Any, bool], None]  # (method, params, wait)
    request_stop: Callable[[], None]  # stop after the current response is queued
    is_overloaded: Callable[[], bool]
    submit: Callable[[Callable[[], None]], bool]  # run a job on the worker pool
    make_room: Callable[[], None]  # block while the client is behind (never on the dispatcher)
    env: Any = field(default_factory=lambda: os.environ)  # the process environment (tests may pass another)
    secrets: "KnownSecrets | None" = None  # built from env, config and paths when not given
    client: ClientState = field(default_factory=ClientState)
    started_at: float = field(default_factory=time.monotonic)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _services: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.secrets is None:
            from kward.secrets import KnownSecrets

            self.secrets = KnownSecrets(self.env, self.config, self.paths.auth_file)

    # --- core services, built on first use (any thread) -----------------------------

    def _service(self, name: str, build: Callable[[], Any]) -> Any:
        service = self._services.get(name)
        if service is None:
            with self._lock:
                service = self._services.get(name)
                if service is None:
                    service = self._services[name] = build()
        return service

    @property
    def sessions(self) -> "SessionManager":
        from kward.sessions.manager import SessionManager

        return self._service("sessions", lambda: SessionManager(self.paths.sessions_dir, str(self.launch_cwd)))

    @property
    def questions(self) -> "QuestionBroker":
        from kward.agent.questions import QuestionBroker

        def notify(session_id: str, request_id: str, questions: list) -> None:
            self.notify("ui/question", {"sessionId": session_id, "questionRequestId": request_id,
                                        "questions": questions})

        return self._service("questions", lambda: QuestionBroker(notify))

    @property
    def engine(self) -> "AgentEngine":
        from kward.agent.engine import AgentEngine

        return self._service("engine", lambda: AgentEngine(paths=self.paths, config=self.config,
                                                           questions=self.questions, env=self.env,
                                                           secrets=self.secrets, models=self.models))

    @property
    def models(self) -> "ModelService":
        from kward.providers.model_service import ModelService

        return self._service("models", lambda: ModelService(self.config))

    @property
    def turns(self) -> "TurnManager":
        from kward.agent.turns import TurnManager

        def build() -> "TurnManager":
            engine = self.engine
            return TurnManager(submit=self.submit, publish=lambda event: self.notify("turn/event", event, wait=False),
                               make_room=self.make_room, execute=engine.execute,
                               steering_supported=engine.steering_supported)

        return self._service("turns", build)

    def notify(self, method: str, params: Any, *, wait: bool = True) -> None:
        """Send a notification unless the client opted out of `method`. Any thread;
        `wait=False` never blocks (the dispatcher, and callers that paced themselves)."""
        if method not in self.client.opt_out:
            self.send_notification(method, params, wait)

    def has_service(self, name: str) -> bool:
        """Whether a service was built (e.g. no turn was ever started: nothing to cancel)."""
        return name in self._services

    def shutdown(self) -> None:
        """Main thread, once, at the end: cancel every turn, then close every session (a
        session whose turn still runs closes when that turn ends)."""
        with self._lock:
            services = dict(self._services)
        steps = []
        if "turns" in services:
            steps.append(services["turns"].shutdown)
        if "sessions" in services:
            steps.append(services["sessions"].shutdown_all)
        for step in steps:
            try:
                step()
            except Exception:
                import logging

                logging.getLogger(__name__).exception("shutdown step failed")
