"""What the engine lets the layers above it add to a turn, without knowing them: how the
turn runs (slash input: a prompt template or a plugin command), the instructions of each
model request, extra tools, observers of the turn's events, telemetry around its model
requests and tool calls, and work after a completed turn. The runtime
(`kward.runtime.turn_hooks`) supplies the real ones, from the resources (prompt templates,
skills, plugins, AGENTS.md, memory), telemetry and memory; the defaults here add nothing.

Thread contract: every method is called on the turn's worker thread, for one turn at a
time per session. `run_turn` may raise what the turn fails with; the others must never
raise (a hook's failure must not fail the turn).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, ContextManager

Emit = Callable[[str, dict[str, Any]], None]


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

    def run_turn(self, turn: Any, session: Any, engine: Any) -> str:
        """Run the turn; the default runs the model on the turn's input
        (`engine.run_model(turn, session, text, display)`)."""
        return engine.run_model(turn, session, turn.input, None)

    def instructions(self, session: Any) -> Callable[[], str] | None:
        """A function called before each model request for the instructions to send, or
        None for the base instructions."""
        return None

    def tools(self, base: Any) -> Any:
        """The tool registry a turn gets (`base` plus any tools the layers add)."""
        return base

    def observe(self, emit: Emit, session: Any, turn: Any) -> Emit:
        """The emit callback of the turn (`emit` wrapped, e.g. for plugin observers)."""
        return emit

    def recorder(self, turn: Any) -> Any:
        """The turn's Recorder (anything with `provider`, `tools` and `turn`)."""
        return NO_RECORDER

    def context_guard(self, turn: Any, session: Any, provider: Any, selection: Any, effort: str | None) -> Any:
        """The turn's `kward.agent.loop.ContextGuard` (automatic compaction with this
        provider and the turn's `kward.providers.select.Selection`), or None for none."""
        return None

    def after_turn(self, turn: Any, session: Any) -> None:
        """A turn completed (its loop returned an answer)."""
