"""What one turn will do, resolved once when it starts running: a `TurnPlan`.

A turn either runs the model (`ModelTurn`: the text the model gets, the instructions of
each request, the tools, the emit callback its events go through, telemetry, automatic
compaction and the work after it) or a plugin command instead (`CommandTurn`). The
engine (`kward.agent.engine`) asks its `Planner` for the plan of each turn and runs it;
the runtime's planner (`kward.runtime.planner`) builds plans from the user's prompt
templates, plugins, AGENTS.md files, memory, telemetry and compaction settings.
`BasePlanner` is the plan without any of them: the model on the input as typed, with
the base instructions.

Thread contract: `Planner.plan` is called on the turn's worker thread, once per turn,
before the turn's first message is stored; a plan belongs to that turn and that thread.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager, Protocol

from kward.agent.loop import ContextGuard, Emit
from kward.providers.base import Provider
from kward.tools.live import LiveOutput
from kward.tools.registry import ToolRegistry

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.turn import Turn
    from kward.providers.select import Selection
    from kward.sessions.handle import SessionHandle


class Recorder(Protocol):
    """A turn's telemetry: wraps the provider and the tools, and times the turn."""

    def provider(self, provider: Provider) -> Provider: ...

    def tools(self, tools: ToolRegistry) -> ToolRegistry: ...

    def turn(self) -> ContextManager[None]: ...


class NoRecorder:
    """Records nothing and wraps nothing."""

    def provider(self, provider: Provider) -> Provider:
        return provider

    def tools(self, tools: ToolRegistry) -> ToolRegistry:
        return tools

    def turn(self) -> ContextManager[None]:
        return contextlib.nullcontext()


NO_RECORDER = NoRecorder()

#: The automatic compaction of a model turn, made once the engine knows the turn's
#: provider (wrapped by the recorder), its selection and reasoning level; None: none.
GuardFactory = Callable[["Provider", "Selection", "str | None"], "ContextGuard | None"]


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """The model runs on `text` (`display`: what the user typed when `text` is its
    expansion, kept with the user message). `instructions()` is called before each model
    request; `emit` is the turn's own emit, wrapped for plugin observers."""

    text: str
    display: str | None
    instructions: Callable[[], str]
    tools: ToolRegistry
    emit: Emit
    recorder: Recorder = NO_RECORDER
    guard: GuardFactory | None = None
    after: Callable[[], None] = field(default=_nothing)  # called once the turn completed


#: Where a command reports progress while it runs: fed lines from the plugin's thread,
#: polled by the turn's thread while it waits (`kward.resources.context.ProgressSink`).
Progress = LiveOutput


@dataclass(frozen=True, slots=True)
class CommandTurn:
    """A plugin command runs instead of the model: `text` (the input) is stored as the
    user message, `run(progress)` runs the command `name` on `arguments` (bounded,
    cancelled with the turn; what it reports goes to `progress` unless that is None) and
    returns its output, the answer."""

    text: str
    run: Callable[[Progress | None], str]
    name: str = "command"
    arguments: str = ""


TurnPlan = ModelTurn | CommandTurn


class Planner(Protocol):
    def plan(self, turn: Turn, session: SessionHandle, tools: ToolRegistry) -> TurnPlan:
        """The plan of `turn` on `session`; `tools` are the engine's own."""
        ...


@dataclass(frozen=True, slots=True)
class BasePlanner:
    """The model on the turn's input with the base instructions of
    `kward.resources.system_prompt` (and the workspace's AGENTS.md) of `config_dir`."""

    config_dir: Path

    def plan(self, turn: Turn, session: SessionHandle, tools: ToolRegistry) -> TurnPlan:
        from kward.resources.system_prompt import (
            static_instructions,  # (the agent does not load kward.resources)
        )

        text = static_instructions(self.config_dir, session.workspace_root)
        return ModelTurn(turn.input, turn.display, lambda: text, tools, turn.emit)
