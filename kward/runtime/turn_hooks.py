"""The runtime's turn hooks (`kward.agent.hooks.TurnHooks`): memory and telemetry for the
turns the engine runs. Built once by the runtime; the services behind it are built on
first use. Same thread contract as the hooks: a turn's worker thread, never raising.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kward.agent.hooks import NO_RECORDER, TurnHooks

if TYPE_CHECKING:  # pragma: no cover
    from kward.runtime.core import Runtime


class RuntimeTurnHooks(TurnHooks):
    def __init__(self, runtime: "Runtime"):
        self._runtime = runtime

    def recorder(self, turn: Any) -> Any:
        return self._runtime.telemetry.recorder(getattr(turn, "headers", None)) or NO_RECORDER

    def memory_block(self, turn: Any, session: Any) -> str | None:
        return self._runtime.memory.prepare(turn.input, session)

    def after_turn(self, turn: Any, session: Any) -> None:
        self._runtime.memory.after_turn(session)
