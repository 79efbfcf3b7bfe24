"""The tool table: which tools exist, their schemas, and the one entry point that runs a
model's tool call.

`ToolRegistry.run` never raises for tool-level problems: an unknown tool answers
``Unknown tool: <name>`` (is_error true), bad JSON or mistyped arguments answer
``Error: ...``, an OS error anywhere in a tool (a path that vanished or was swapped while
the tool ran, a full disk, a name too long) answers ``Error: <the OS's words>: <path>``
(`os_error_text`), and any other unexpected exception (or a handler that returns no
`ToolResult`) is logged with its traceback and answered
``Error: <tool> failed: <ExceptionClass>: <message>``. So a failing tool never fails the
turn: the model gets the error as the call's result. The one exception it lets through is
`kward.errors.Canceled`: raised when `ctx.cancel` was already cancelled before the tool
started, or when a long tool (shell, search, question) was interrupted by it. The agent
records whatever it wants (e.g. `base.CANCELLED`) for that call and ends the turn.

A registry is immutable after construction and may be shared by every session and
thread; `run` executes on the caller's (the turn's worker) thread.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Iterable

from kward import toolcalls as normalize
from kward.errors import Canceled, InvalidParams
from kward.tools import question, reading, search, shell, writing
from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec

log = logging.getLogger(__name__)

#: The built-in tools in advertised order.
DEFAULT_SPECS: tuple[ToolSpec, ...] = (
    *reading.SPECS, *writing.SPECS, *shell.SPECS, *search.SPECS, *question.SPECS,
)


def decode_arguments(name: str, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    """`normalize.decode_arguments` with the messages the model sees; `ToolError` when the
    arguments are not a JSON object. Empty text means no arguments."""
    try:
        return normalize.decode_arguments(arguments)
    except normalize.ArgumentsError as exc:
        if exc.invalid_json:
            raise ToolError(f"invalid JSON arguments for {name}: {exc}") from None
        raise ToolError(f"arguments for {name} must be a JSON object") from None


def os_error_text(exc: OSError, given_path: object = None) -> str:
    """``<OS words>: <path>``: the OS's own message and the file it concerns. The path is
    the absolute name the failing call used; a relative one (a step relative to a
    directory descriptor, a temporary name) means nothing to the model, so the path the
    model gave stands in for it when there is one."""
    words = exc.strerror or str(exc) or type(exc).__name__
    name = os.fsdecode(exc.filename) if isinstance(exc.filename, (str, bytes)) else None
    if not (name and os.path.isabs(name)) and isinstance(given_path, str) and given_path:
        name = given_path
    return f"{words}: {name}" if name else words


class ToolRegistry:
    """A fixed set of tools by name."""

    def __init__(self, specs: Iterable[ToolSpec] = DEFAULT_SPECS):
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"duplicate tool name: {spec.name}")
            self._specs[spec.name] = spec

    def with_specs(self, *specs: ToolSpec) -> "ToolRegistry":
        """A new registry of these tools followed by `specs` (ValueError for a taken name)."""
        return ToolRegistry([*self._specs.values(), *specs])

    def names(self, has_ui: bool) -> list[str]:
        """Names of the tools advertised with (`has_ui`) or without a UI question bridge."""
        return [s.name for s in self._specs.values() if has_ui or not s.needs_ui]

    def read_only(self, name: str) -> bool:
        """Whether the tool `name` changes nothing (`ToolSpec.read_only`); False for a name
        no tool has."""
        spec = self._specs.get(name)
        return spec is not None and spec.read_only

    def schemas(self, has_ui: bool) -> list[dict[str, Any]]:
        """The function-tool schemas to send to the model (and to `tools/list`)."""
        return [s.schema() for s in self._specs.values() if has_ui or not s.needs_ui]

    def run(self, name: str, arguments: str | dict[str, Any] | None, ctx: ToolContext) -> ToolResult:
        """Run one tool call; see the module doc for what is returned and what is raised."""
        spec = self._specs.get(name)
        if spec is None or (spec.needs_ui and ctx.ask_user is None):
            return ToolResult(content=f"Unknown tool: {name}", is_error=True)
        ctx.cancel.raise_if_cancelled()
        args = Args({})
        try:
            args = Args(decode_arguments(name, arguments))
            result = spec.handler(args, ctx)
            if not isinstance(result, ToolResult):
                raise TypeError(f"the handler returned {type(result).__name__}, not a ToolResult")
        except Canceled:
            log.debug("tool %s cancelled", name)
            raise
        except (ToolError, InvalidParams) as exc:  # InvalidParams: PathNotAllowed, QuestionError
            result = ToolResult.error(exc.message)
        except OSError as exc:
            text = os_error_text(exc, args.data.get("path"))
            log.info("tool %s: %s", name, text)
            result = ToolResult.error(text)
        except Exception as exc:  # a bug: keep the turn alive, keep the traceback in the log
            log.exception("tool %s failed", name)
            result = ToolResult.error(f"{name} failed: {type(exc).__name__}: {exc}")
        log.debug("tool %s -> %s (%d chars)", name, "error" if result.is_error else "ok", len(result.content))
        return result.scrubbed(ctx.scrub)


_default: ToolRegistry | None = None


def default_registry() -> ToolRegistry:
    """The shared registry of the built-in tools (built on first use)."""
    global _default
    if _default is None:
        _default = ToolRegistry()
    return _default
