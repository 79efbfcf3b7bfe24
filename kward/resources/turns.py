"""A turn's slash input: the model's turn, or a plugin command's instead.

`run_turn(resources, turn, session, runner)` is the engine's turn hook. The turn's
`plan` (`kward.resources.catalog.Plan`, set by the runtime when `turns/start` could
resolve the input at once) or else the input resolved now decides:

- a prompt template: the model runs on the expanded text (the typed text is kept as the
  user message's `display_content`);
- a plugin command: the command runs instead of the model. Its input is stored as a
  user message, then (once the command returned) its output as an assistant message,
  then it is emitted as one `assistantDelta` (when there is any output) and `answer`;
  the turn completes. A command that raised or timed out fails the turn
  (`plugin_failed`, `plugin_timeout`); cancelling the turn stops waiting for it;
- anything else: the model runs on the input as typed.

`runner` is the engine (`name_session(session, text)`, `run_model(turn, session, text,
display)`). Runs on the turn's worker thread.
"""

from __future__ import annotations

from typing import Any

from kward.model import Answer, AssistantMessage, Delta, UserMessage
from kward.resources.catalog import Plan


def run_turn(resources: Any, turn: Any, session: Any, runner: Any) -> str:
    plan = turn.plan if isinstance(turn.plan, Plan) else resources.resolve(turn.input, bool(turn.attachments))
    if plan.kind == "plugin":
        return run_command_turn(resources, plan, turn, session, runner)
    if plan.kind == "prompt":
        return runner.run_model(turn, session, plan.text, plan.display)
    return runner.run_model(turn, session, turn.input, None)


def run_command_turn(resources: Any, plan: Plan, turn: Any, session: Any, runner: Any) -> str:
    turn.cancel.raise_if_cancelled()
    runner.name_session(session, plan.text)
    session.append_message(UserMessage(plan.text))
    out = resources.run_command(plan.command, plan.arguments, session, cancel=turn.cancel)
    text = out.text
    session.append_message(AssistantMessage(text))
    if text:
        turn.emit("assistantDelta", Delta(text))
    turn.emit("answer", Answer(text))
    return text
