"""Shared types of the tools library: the per-call context, the tool spec, the tool-level
error and a small typed reader for model arguments (the result, `ToolResult`, is a type of
the core model, `kward.model`, re-exported here).

Nothing here does I/O. `ToolContext` is built by the agent loop for each tool call (or
once per turn) on the turn's worker thread; `read_paths` is the session's set and is
mutated by read_file/write_file on that same thread (one turn per session at a time, so it
needs no lock). `ToolResult` is an immutable value handed back to the agent loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, overload

from kward.cancel import CancelToken
from kward.model import ERROR_PREFIXES, ToolResult, is_error_text

if TYPE_CHECKING:  # pragma: no cover
    from kward.tools.live import LiveOutput
    from kward.sandbox import SandboxPolicy

__all__ = ["CANCELLED", "ERROR_PREFIXES", "Args", "AskUser", "ToolContext", "ToolError", "ToolResult", "ToolSpec",
           "is_error_text"]

#: The UI question bridge: takes the validated questions, returns the answers list, or
#: None / [] when the user dismissed the questions (or the turn was cancelled).
AskUser = Callable[[list[dict[str, Any]]], "list[Any] | None"]


class ToolError(Exception):
    """A tool-level failure the model should see as ``Error: <message>``: a failure of the
    call (a missing file, a bad argument), not of the request that runs the turn, so it is
    no KwardError and has no wire code.

    Raised inside tool handlers and turned into a `ToolResult` by the registry; it never
    leaves `kward.tools` (and `kward.confined`). `message` carries no ``Error:`` prefix.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(slots=True)
class ToolContext:
    """What a tool call may touch.

    - `workspace_root`: the workspace directory; made a realpath on construction.
    - `read_paths`: realpaths read (or written) in this conversation; shared with the
      session, so pass the session's own set. Mutated on the calling thread.
    - `cancel`: the turn's token; long tools (shell, search, question) watch it.
    - `ask_user`: the UI question bridge, or None when no UI is attached (then
      `ask_user_question` is neither advertised nor runnable).
    - `env`: extra environment variables for `run_shell_command`, merged over os.environ
      without kward's own credential variables (see `process.child_environment`).
    - `scrub`: applied by the registry to every result's text (kward's own credentials out
      of tool output: `kward.config.secrets.KnownSecrets.scrub_output`), or None.
    - `live`: where the call being run sends its output as it comes (`run_shell_command`),
      or None when nobody watches; set by the agent loop around each call.
    - `sandbox`: how `run_shell_command` confines its command (`kward.sandbox`);
      None: not at all (``security.sandbox: "off"``).
    - `headers`: the request's trace headers (``traceparent``), which tools that make
      HTTP requests (MCP servers, web search) send on.

    Construction raises `FileNotFoundError` when the workspace root does not exist.
    """

    workspace_root: Path
    read_paths: set[str] = field(default_factory=set)
    cancel: CancelToken = field(default_factory=CancelToken)
    ask_user: AskUser | None = None
    env: dict[str, str] = field(default_factory=dict)
    scrub: Callable[[str], str] | None = None
    live: LiveOutput | None = None
    sandbox: SandboxPolicy | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workspace_root = Path(self.workspace_root).resolve(strict=True)


#: What the agent records when a tool call was interrupted by turn cancellation.
CANCELLED = "Cancelled."


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool: its wire name, description, JSON-schema parameters and handler.

    `handler(args, ctx)` runs on the turn's worker thread and returns a `ToolResult`; it
    may raise `ToolError` (shown as ``Error: ...``) or `kward.errors.Canceled`.
    `needs_ui` tools are advertised and runnable only when `ctx.ask_user` is set.
    `read_only` tools change nothing (no file, no command): approval never gates them
    (`kward.agent.approval`). `parameters`, when set, is the arguments' JSON Schema as
    given (an MCP server's `inputSchema`), in place of one made of `properties` and
    `required`.
    """

    name: str
    description: str
    properties: Mapping[str, Any]
    required: tuple[str, ...]
    handler: Callable[["Args", ToolContext], ToolResult]
    needs_ui: bool = False
    read_only: bool = False
    parameters: Mapping[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        """The function-tool envelope, properties and required sorted (or `parameters`)."""
        if self.parameters is not None:
            return {"type": "function",
                    "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}}
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {k: self.properties[k] for k in sorted(self.properties)},
                    "required": sorted(self.required),
                    "additionalProperties": False,
                },
            },
        }


_MISSING = object()


class Args:
    """Typed access to a tool's decoded arguments; every accessor raises `ToolError`
    with a message naming the argument. Unknown keys are ignored (models add extras)."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = data

    def _get(self, key: str, required: bool) -> object:
        value = self.data.get(key, _MISSING)
        if value is None:
            value = _MISSING
        if value is _MISSING and required:
            raise ToolError(f"{key} is required")
        return value

    @overload
    def string(self, key: str, *, required: Literal[True] = True) -> str: ...

    @overload
    def string(self, key: str, *, required: bool, default: str | None = None) -> str | None: ...

    def string(self, key: str, *, required: bool = True, default: str | None = None) -> str | None:
        """A string; `required` (the default) raises when it is missing, else `default`."""
        value = self._get(key, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise ToolError(f"{key} must be a string")
        return value

    def integer(self, key: str, *, default: int | None = None) -> int | None:
        """An integer; integral floats and digit strings are accepted (models send both)."""
        value = self._get(key, False)
        if value is _MISSING:
            return default
        if isinstance(value, bool):
            raise ToolError(f"{key} must be an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            return int(value.strip())
        raise ToolError(f"{key} must be an integer")

    def boolean(self, key: str, *, default: bool) -> bool:
        value = self._get(key, False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise ToolError(f"{key} must be a boolean")
        return value

    def array(self, key: str, *, required: bool = True) -> list[Any] | None:
        value = self._get(key, required)
        if value is _MISSING:
            return None
        if not isinstance(value, list):
            raise ToolError(f"{key} must be an array")
        return value
