"""Shared types of the tools library: the per-call context, the result, the tool spec,
the tool-level error and a small typed reader for model arguments.

Nothing here does I/O. `ToolContext` is built by the agent loop for each tool call (or
once per turn) on the turn's worker thread; `read_paths` is the session's set and is
mutated by read_file/write_file on that same thread (one turn per session at a time, so it
needs no lock). `ToolResult` is an immutable value handed back to the agent loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from kward.cancel import CancelToken
from kward.errors import InvalidParams

#: Prefixes that make a result text an error (the original's rule).
ERROR_PREFIXES = ("Error:", "Declined:", "Cancelled.")

#: The UI question bridge: takes the validated questions, returns the answers list, or
#: None / [] when the user dismissed the questions (or the turn was cancelled).
AskUser = Callable[[list[dict[str, Any]]], "list[Any] | None"]


def is_error_text(text: str) -> bool:
    """True when a tool result text counts as an error (`Error:`, `Declined:`, `Cancelled.`)."""
    return text.startswith(ERROR_PREFIXES)


class ToolError(InvalidParams):
    """A tool-level failure the model should see as ``Error: <message>``.

    Raised inside tool handlers and turned into a `ToolResult` by the registry; it never
    leaves `kward.tools`. `message` carries no ``Error:`` prefix.
    """


@dataclass
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
      of tool output: `kward.secrets.KnownSecrets.scrub_output`), or None.

    Construction raises `FileNotFoundError` when the workspace root does not exist.
    """

    workspace_root: Path
    read_paths: set[str] = field(default_factory=set)
    cancel: CancelToken = field(default_factory=CancelToken)
    ask_user: AskUser | None = None
    env: dict[str, str] = field(default_factory=dict)
    scrub: Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        self.workspace_root = Path(self.workspace_root).resolve(strict=True)


@dataclass(frozen=True)
class ToolResult:
    """One tool outcome.

    `content` is what the model sees. `is_error` follows the original's rule (see
    `is_error_text`) except for `Unknown tool: <name>`, which is an error too. `diff` is the
    unified diff of a write/edit (possibly truncated), `changed_files` the paths written
    (as the model gave them), `images` image parts (always empty for the built-in tools).
    """

    content: str
    is_error: bool = False
    diff: str | None = None
    changed_files: list[str] | None = None
    images: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def text(cls, content: str, **kw: Any) -> "ToolResult":
        """A result whose error flag is derived from the content prefix."""
        return cls(content=content, is_error=is_error_text(content), **kw)

    @classmethod
    def error(cls, message: str) -> "ToolResult":
        """``Error: <message>``."""
        return cls(content=f"Error: {message}", is_error=True)

    def scrubbed(self, scrub: Callable[[str], str] | None) -> "ToolResult":
        """This result with `scrub` applied to the text the model and the client see."""
        if scrub is None:
            return self
        diff = None if self.diff is None else scrub(self.diff)
        return replace(self, content=scrub(self.content), diff=diff)

    def to_payload(self) -> dict[str, Any]:
        """The RPC `toolResult.result` object: content, isError, images, diff?, changedFiles?."""
        out: dict[str, Any] = {"content": self.content, "isError": self.is_error, "images": list(self.images)}
        if self.diff is not None:
            out["diff"] = self.diff
        if self.changed_files:
            out["changedFiles"] = list(self.changed_files)
        return out


#: What the agent records when a tool call was interrupted by turn cancellation.
CANCELLED = "Cancelled."


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its wire name, description, JSON-schema parameters and handler.

    `handler(args, ctx)` runs on the turn's worker thread and returns a `ToolResult`; it
    may raise `ToolError` (shown as ``Error: ...``) or `kward.errors.Canceled`.
    `needs_ui` tools are advertised and runnable only when `ctx.ask_user` is set.
    """

    name: str
    description: str
    properties: Mapping[str, Any]
    required: tuple[str, ...]
    handler: Callable[["Args", ToolContext], ToolResult]
    needs_ui: bool = False

    def schema(self) -> dict[str, Any]:
        """The function-tool envelope, properties and required sorted."""
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

    def _get(self, key: str, required: bool) -> Any:
        value = self.data.get(key, _MISSING)
        if value is None:
            value = _MISSING
        if value is _MISSING and required:
            raise ToolError(f"{key} is required")
        return value

    def string(self, key: str, *, required: bool = True, default: str | None = None) -> str | None:
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
