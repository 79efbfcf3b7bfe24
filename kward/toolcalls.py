"""The canonical tool-name and argument normalization for RPC tool events and transcripts.

Clients (Tauren) show tool cards by normalized name and camelCase args:

- `normalize_tool_name`: read_file -> ``read``, edit_file -> ``edit``, write_file ->
  ``write``, run_shell_command -> ``bash``; every other name unchanged.
- `normalize_args(name, args)`: edit -> ``{path, edits: [{oldText, newText}]}``; write ->
  ``{path, content}``; bash -> ``{command, timeout}`` (timeout from `timeout` or
  `timeout_seconds`, default 30); any other tool -> keys camelCased recursively
  (``max_results`` -> ``maxResults``). Accepts raw or already-normalized names, and
  already-camelCased args (normalizing twice changes nothing).
- `decode_arguments(raw)`: the one decoder of the model's JSON argument text -> dict
  (``{}`` when empty; a dict passes through); `ArgumentsError` when it is not a JSON object.
  `parse_arguments(raw)` is its lenient form (``{}`` when invalid) for event payloads.
- `extract_diff(text)`: the unified diff inside a write/edit result text (from the first
  line starting with ``--- ``), or None.

Pure functions, safe from any thread. Below the tools (`kward.tools` re-exports these), so
that sessions, the session codec and the RPC face normalize calls without importing them.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Literal, NamedTuple

TOOL_NAME_MAP: dict[str, str] = {
    "read_file": "read",
    "edit_file": "edit",
    "write_file": "write",
    "run_shell_command": "bash",
}

#: The title clients show for each of kward's own tools (`metadata.displayName` of
#: `tools/list` entries and of tool events).
DISPLAY_NAMES: dict[str, str] = {
    "list_directory": "List",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "run_shell_command": "Bash",
    "search_files": "Search",
    "ask_user_question": "Question",
    "read_skill": "Skill",
    "web_search": "WebSearch",
}

MCP_PREFIX = "mcp__"  # of an MCP tool's name: mcp__<server>__<tool> (kward.mcp.names)
MAX_MCP_TOOLS = 4096  # MCP tools whose metadata is remembered (the oldest go first)


class ToolMetadata(NamedTuple):
    """Where a tool comes from (`builtin`: kward's own; `mcp`: a tool of an MCP server,
    with the server's name and the tool's name there) and the title clients group and
    show it by."""

    source: Literal["builtin", "mcp"]
    display_name: str
    server_name: str | None = None
    remote_name: str | None = None


_mcp_lock = threading.Lock()
_mcp_tools: dict[str, ToolMetadata] = {}  # by the model's name; under _mcp_lock


def remember_mcp_tool(name: str, server: str, remote: str, display: str) -> None:
    """Record what the MCP tool `name` is (kward.runtime.mcp, when servers list their
    tools), so that its events and tools/list entries say so. Any thread."""
    meta = ToolMetadata("mcp", display, server, remote)
    with _mcp_lock:
        _mcp_tools.pop(name, None)
        _mcp_tools[name] = meta
        while len(_mcp_tools) > MAX_MCP_TOOLS:
            del _mcp_tools[next(iter(_mcp_tools))]


DEFAULT_BASH_TIMEOUT = 30

_SNAKE = re.compile(r"_([a-z])")
_DIFF_START = re.compile(r"^--- ", re.M)


def normalize_tool_name(name: str) -> str:
    """The client-facing tool name (see the module doc)."""
    return TOOL_NAME_MAP.get(name, name)


def tool_metadata(name: str) -> ToolMetadata:
    """The metadata of the tool `name`: an MCP tool as `remember_mcp_tool` recorded it (one
    not recorded, e.g. in an older session, read from its name ``mcp__<server>__<tool>``);
    otherwise kward's own (a name no tool has, as a model may call: its own name as the
    title, since kward itself answers such a call)."""
    if name.startswith(MCP_PREFIX):
        with _mcp_lock:
            meta = _mcp_tools.get(name)
        if meta is not None:
            return meta
        server, sep, remote = name[len(MCP_PREFIX):].partition("__")
        if sep and server and remote:
            return ToolMetadata("mcp", remote, server, remote)
    return ToolMetadata("builtin", DISPLAY_NAMES.get(name, name))


def camelize_key(key: str) -> str:
    """``old_text`` -> ``oldText`` (an underscore before a lowercase letter is dropped)."""
    return _SNAKE.sub(lambda m: m.group(1).upper(), key)


def camelize(value: Any) -> Any:
    """A copy of `value` with every dict key camelCased, recursively through lists."""
    if isinstance(value, dict):
        return {camelize_key(str(k)): camelize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camelize(v) for v in value]
    return value


def _first(obj: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if obj.get(key) is not None:
            return obj[key]
    return None


def normalize_args(name: str, args: Any) -> dict[str, Any]:
    """Client-facing args of a tool call (see the module doc). `name` may be raw or normalized."""
    if not isinstance(args, dict):
        return {}
    kind = normalize_tool_name(name)
    if kind == "edit":
        out: dict[str, Any] = {}
        if args.get("path") is not None:
            out["path"] = args["path"]
        edits = []
        raw_edits = args.get("edits")
        for edit in raw_edits if isinstance(raw_edits, list) else []:
            if not isinstance(edit, dict):
                continue
            item = {}
            old = _first(edit, "oldText", "old_text")
            new = _first(edit, "newText", "new_text")
            if old is not None:
                item["oldText"] = old
            if new is not None:
                item["newText"] = new
            edits.append(item)
        if edits:
            out["edits"] = edits
        return out
    if kind == "write":
        return {k: args[k] for k in ("path", "content") if args.get(k) is not None}
    if kind == "bash":
        out = {}
        if args.get("command") is not None:
            out["command"] = args["command"]
        timeout = _first(args, "timeout", "timeout_seconds", "timeoutSeconds")
        out["timeout"] = DEFAULT_BASH_TIMEOUT if timeout is None else timeout
        return out
    return {camelize_key(str(k)): camelize(v) for k, v in args.items()}


class ArgumentsError(ValueError):
    """Tool-call arguments that are not a JSON object; `invalid_json` tells which way."""

    def __init__(self, message: str, *, invalid_json: bool):
        super().__init__(message)
        self.invalid_json = invalid_json


def decode_arguments(raw: Any) -> dict[str, Any]:
    """The model's argument JSON text as a dict: ``{}`` when None or blank, a dict as is;
    `ArgumentsError` when the text is not valid JSON or not an object."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, (str, bytes)) and not raw.strip()):
        return {}
    if not isinstance(raw, (str, bytes)):
        raise ArgumentsError("must be a JSON object", invalid_json=False)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ArgumentsError(str(exc), invalid_json=True) from None
    if not isinstance(value, dict):
        raise ArgumentsError("must be a JSON object", invalid_json=False)
    return value


def parse_arguments(raw: Any) -> dict[str, Any]:
    """`decode_arguments`, but ``{}`` when the arguments are not a JSON object."""
    try:
        return decode_arguments(raw)
    except ArgumentsError:
        return {}


def extract_diff(text: str) -> str | None:
    """The unified diff in a tool result text, from its first ``--- `` line; or None."""
    match = _DIFF_START.search(text or "")
    return text[match.start():] if match else None
