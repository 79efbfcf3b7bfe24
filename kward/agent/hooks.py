"""What the engine lets the layers above it add to a turn, without knowing them: memory for
the system prompt, telemetry around model requests and tool calls, and work after a
completed turn. The runtime (`kward.runtime.turn_hooks`) supplies the real ones; the
defaults here add nothing.

Thread contract: every method is called on the turn's worker thread, for one turn at a
time per session, and must never raise (a hook's failure must not fail the turn).
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager


class Recorder:
    """A turn's telemetry: wraps the provider and the tools, and times the turn. This
    default records nothing and wraps nothing."""

    def provider(self, provider: Any) -> Any:
        return provider

    def tools(self, tools: Any) -> Any:
        return tools

    def turn(self) -> ContextManager[None]:
        return contextlib.nullcontext()


NO_RECORDER = Recorder()


class TurnHooks:
    """The hooks of a turn (see the module docstring); these defaults do nothing."""

    def recorder(self, turn: Any) -> Any:
        """The turn's Recorder (anything with `provider`, `tools` and `turn`)."""
        return NO_RECORDER

    def memory_block(self, turn: Any, session: Any) -> str | None:
        """The memory text for this turn's system prompt, or None."""
        return None

    def after_turn(self, turn: Any, session: Any) -> None:
        """A turn completed (its loop returned an answer)."""
