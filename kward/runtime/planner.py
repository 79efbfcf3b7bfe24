"""The runtime's turn planner (`kward.agent.plan.Planner`): what a turn will do, resolved
once when it starts running.

Slash input resolves against the user's prompt templates, skills and plugin commands
(`kward.resources`): a prompt template or a `/skill:<name>` command runs the model on its
expansion (the typed text kept as the user message's `display_content`; an expansion over the
input limit fails the turn before anything is stored; an unknown skill is input as typed); a plugin
command runs instead of the model (what it reports with `ctx.progress` goes to the engine's
`progress`). Input that `turns/start` already expanded (`Turn.display` set) runs as it is;
anything else runs the model on the input as typed.

A model turn gets: the instructions rebuilt before each model request (the AGENTS.md
files, the memories retrieved for the turn's input, plugin prompt context, skills;
`Resources.instructions`), the tools with `read_skill` when there are skills, the ready MCP servers' tools and
`web_search` (`kward.runtime.mcp`), the turn's
emit wrapped for plugin observers, the telemetry recorder (when a category is on), the
automatic compaction of the settings, and memory's auto-summary after it completed.

Thread contract: `plan` runs on the turn's worker thread; the services are thread-safe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kward.agent.plan import NO_RECORDER, CommandTurn, ModelTurn, TurnPlan
from kward.sessions.messages import full_text, role_of

if TYPE_CHECKING:  # pragma: no cover
    from kward.agent.loop import ContextGuard
    from kward.agent.turn import Turn
    from kward.providers.base import Provider
    from kward.providers.select import Selection
    from kward.runtime.compaction import RuntimeCompaction
    from kward.runtime.mcp import McpRuntime
    from kward.runtime.memory import MemoryRuntime
    from kward.runtime.resources import RuntimeResources
    from kward.runtime.telemetry import TelemetryRuntime
    from kward.sessions.handle import SessionHandle
    from kward.tools.registry import ToolRegistry


class PlanServices(Protocol):
    """The services a plan draws on (the Runtime has them, built on first use)."""

    @property
    def resources(self) -> RuntimeResources: ...

    @property
    def memory(self) -> MemoryRuntime: ...

    @property
    def telemetry(self) -> TelemetryRuntime: ...

    @property
    def compaction(self) -> RuntimeCompaction: ...

    @property
    def mcp(self) -> McpRuntime: ...


class RuntimePlanner:
    def __init__(self, services: PlanServices):
        self._services = services

    def plan(self, turn: Turn, session: SessionHandle, tools: ToolRegistry) -> TurnPlan:
        if turn.display is not None:  # a prompt template expanded when the turn was started
            return self._model_turn(turn, session, tools, turn.input, turn.display)
        resources = self._services.resources.core
        resolved = resources.resolve(turn.input, bool(turn.attachments))
        command = resolved.command
        if resolved.kind == "plugin" and command is not None:
            arguments = resolved.arguments
            return CommandTurn(resolved.text, lambda progress: resources.run_command(
                command, arguments, session, cancel=turn.cancel, progress=progress).text, command.name, arguments)
        if resolved.kind == "prompt":
            return self._model_turn(turn, session, tools, resolved.text, resolved.display)
        return self._model_turn(turn, session, tools, turn.input, None)

    def _model_turn(self, turn: Turn, session: SessionHandle, tools: ToolRegistry, text: str,
                    display: str | None) -> ModelTurn:
        services = self._services
        resources = services.resources.core
        memory = services.memory

        def memory_block() -> str | None:
            """The memories retrieved for the turn's input: the session's last user message
            (called after the turn's user message was stored)."""
            messages = session.entry_messages()
            query = next((full_text(m) for m in reversed(messages) if role_of(m) == "user"), "")
            return memory.prepare(query, session)

        compaction = services.compaction

        def guard(provider: Provider, selection: Selection, effort: str | None) -> ContextGuard:
            return compaction.guard(turn, session, provider, selection, effort)

        return ModelTurn(text=text, display=display, instructions=resources.instructions(session, memory_block),
                         tools=services.mcp.tools(resources.tools(tools)), emit=resources.observe(turn.emit, session, turn),
                         recorder=services.telemetry.recorder(turn.headers) or NO_RECORDER, guard=guard,
                         after=lambda: memory.after_turn(session))
