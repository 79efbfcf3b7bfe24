"""The runtime's compaction: `sessions/compact` and `/compact` (`compact`), and the guard
of automatic compaction each turn runs with (`guard`). The core is `kward.compaction`.

A manual compaction holds the session's lane (`TurnManager.exclusive`): refused with
`turn_in_progress` while a turn runs or is queued on the session in this process, with
`session_busy` while another process runs one; turns started meanwhile wait for it. It
summarizes with the active provider and model. Its `compactionStart` / `compactionEnd`
events go to `sink` (default: the runtime's notices, `kward.runtime.notices.SessionEvent`),
as do those of automatic compactions; an automatic compaction, which runs inside a turn,
is also reported as the turn's events of the same types and payloads (after each notice),
so that a turn's event replay shows it.

The context window of automatic compaction is config `compaction.context_window`, else
the model's (the catalog, cached; loaded when unknown). Any thread; `compact` and
`guard` block (a model call, a listing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

from kward.cancel import CancelToken
from kward.compaction.auto import AutoCompaction
from kward.compaction.events import CompactionEmit, CompactionEnd, CompactionEvent, CompactionResult, CompactionStart
from kward.compaction.prompt import detect_profile
from kward.compaction.run import model_summarizer, run
from kward.config.settings import CompactionSettings
from kward.errors import KwardError
from kward.runtime.notices import SessionEvent
from kward.timefmt import now_iso

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.engine import AgentEngine
    from kward.agent.scheduler import TurnManager
    from kward.agent.turn import Turn
    from kward.providers.base import Provider
    from kward.providers.select import Selection
    from kward.runtime.resources import RuntimeResources
    from kward.sessions.handle import SessionHandle
    from kward.sessions.manager import SessionManager

Sink = Callable[[SessionEvent], None]


class CompactionServices(Protocol):
    """The services a compaction draws on (the Runtime has them, built on first use)."""

    @property
    def sessions(self) -> SessionManager: ...

    @property
    def turns(self) -> TurnManager: ...

    @property
    def engine(self) -> AgentEngine: ...

    @property
    def resources(self) -> RuntimeResources: ...


class RuntimeCompaction:
    def __init__(self, services: CompactionServices, notify: Sink):
        self._rt = services
        self._notify = notify

    def settings(self) -> CompactionSettings:
        return self._rt.engine.settings.current().compaction

    def auto_enabled(self) -> bool:
        try:
            return self.settings().enabled
        except KwardError:
            return False

    def _emitter(self, session: SessionHandle, sink: Sink | None) -> CompactionEmit:
        out = sink or self._notify

        def emit(type_: str, payload: CompactionEvent) -> None:
            out(SessionEvent(session.id, type_, payload, now_iso()))

        return emit

    def compact(self, session_id: str, instructions: str | None = None,
                sink: Sink | None = None) -> CompactionResult:
        """Compact the session now (see the module docstring); raises NothingToCompact,
        AlreadyCompacted, EmptySummary, TurnInProgress, SessionBusy or the provider's error;
        the session is unchanged when it raises."""
        rt = self._rt
        session = rt.sessions.get(session_id)
        cancel = CancelToken()
        with rt.turns.exclusive(session, cancel):
            engine = rt.engine
            selection = engine.selection()
            summarize = model_summarizer(selection.provider, selection.model, cancel,
                                         reasoning_effort=engine.models.request_effort(selection, cancel),
                                         session_key=session.persistent_id)
            settings = self.settings()
            return run(session, summarize, settings, detect_profile(session.workspace_root),
                       self._emitter(session, sink), reason="manual", instructions=rt.resources.estimate(session),
                       focus=instructions, window=self._window(settings, selection, cancel))

    def _window(self, settings: CompactionSettings, selection: Selection, cancel: CancelToken) -> int | None:
        """config `compaction.context_window`, else the model's (None: unknown)."""
        if settings.context_window:
            return settings.context_window
        try:
            return self._rt.engine.models.describe(selection, load=True, cancel=cancel).context_window
        except KwardError:
            return None

    def guard(self, turn: Turn, session: SessionHandle, provider: Provider, selection: Selection,
              effort: str | None) -> AutoCompaction:
        """The automatic compaction of one turn, with the turn's provider and its selection
        (`kward.providers.select.Selection`: the model and the window); the turn's
        `compacting` is true while it runs (read by `TurnManager.compacting`). The
        workspace's language profile is looked for only when a compaction starts."""
        settings = self.settings()
        window = self._window(settings, selection, turn.cancel) if settings.enabled else None
        summarize = model_summarizer(provider, selection.model, turn.cancel, reasoning_effort=effort,
                                     headers=dict(turn.headers),
                                     session_key=session.persistent_id)

        def busy(on: bool) -> None:
            turn.compacting = on

        notify = self._emitter(session, None)

        def emit(type_: str, payload: CompactionEvent) -> None:
            notify(type_, payload)
            if isinstance(payload, CompactionStart):
                turn.emit("compactionStart", payload)
            elif isinstance(payload, CompactionEnd):
                turn.emit("compactionEnd", payload)

        root = session.workspace_root
        return AutoCompaction(session, settings, window, summarize, lambda: detect_profile(root), emit, busy)
