"""The runtime's turn hooks (`kward.agent.hooks.TurnHooks`): the resources (slash input,
instructions, skills' tool, plugin observers), memory, telemetry and automatic compaction
for the turns the engine runs. Built once by the runtime; the services behind it are built on first use.
Same thread contract as the hooks: a turn's worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kward.agent.hooks import NO_RECORDER, Emit, TurnHooks
from kward.sessions.messages import full_text, role_of

if TYPE_CHECKING:  # pragma: no cover
    from kward.runtime.core import Runtime


class RuntimeTurnHooks(TurnHooks):
    def __init__(self, runtime: "Runtime"):
        self._runtime = runtime

    def run_turn(self, turn: Any, session: Any, engine: Any) -> str:
        return self._runtime.resources.core.run_turn(turn, session, engine)

    def instructions(self, session: Any) -> Callable[[], str] | None:
        return self._runtime.resources.core.instructions(session)

    def tools(self, base: Any) -> Any:
        return self._runtime.resources.core.tools(base)

    def observe(self, emit: Emit, session: Any, turn: Any) -> Emit:
        return self._runtime.resources.core.observe(emit, session, turn)

    def recorder(self, turn: Any) -> Any:
        return self._runtime.telemetry.recorder(getattr(turn, "headers", None)) or NO_RECORDER

    def context_guard(self, turn: Any, session: Any, provider: Any, selection: Any, effort: str | None) -> Any:
        return self._runtime.compaction.guard(turn, session, provider, selection, effort)

    def after_turn(self, turn: Any, session: Any) -> None:
        self._runtime.memory.after_turn(session)


def memory_block(runtime: "Runtime") -> Callable[[Any], "str | None"]:
    """The memory hook of the system prompt (`kward.resources.core.Resources.set_memory_block`):
    the memories retrieved for the turn's input, the session's last user message."""

    def block(session: Any) -> str | None:
        messages = session.entry_messages()
        query = next((full_text(m) for m in reversed(messages) if role_of(m) == "user"), "")
        return runtime.memory.prepare(query, session)

    return block
