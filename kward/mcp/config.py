"""MCP server configuration (config `mcp.servers`) and the names their tools get.

`parse_servers(value)` reads the `mcp.servers` object: by name, either a stdio server
(``{"command": str, "args": [str], "env": {str: str}, "cwd": str}``) or a Streamable
HTTP one (``{"url": "http(s)://...", "headers": {str: str}}``), each with optional
``enabled`` (false: configured but not started) and ``toolTimeoutSeconds`` (default 120).
An entry that cannot be used is kept as a `ServerConfig` whose `problem` says why, so
`mcp/status` and `kward doctor` show it instead of it vanishing; the other servers run.

`tool_name(server, tool)` is the model's name of one server's tool:
``mcp__<server>__<tool>`` with every character outside ``[A-Za-z0-9_-]`` replaced, at
most 64 characters (what every provider accepts); a name that had to be changed or cut,
or whose server's name holds ``__``, ends in a short hash of the original pair, so two
tools never share one.

Pure functions over plain data (stdlib only): any thread.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

__all__ = ["DEFAULT_TOOL_TIMEOUT", "ServerConfig", "parse_servers", "tool_name"]

DEFAULT_TOOL_TIMEOUT = 120.0
MAX_TOOL_TIMEOUT = 86400.0
MAX_SERVERS = 64
MAX_ARGS = 256
MAX_TEXT = 8192  # characters of one command, argument, variable, header or URL
MAX_NAME = 64
MAX_TOOL_NAME = 64
_KEYS = {"command", "args", "env", "cwd", "url", "headers", "enabled", "toolTimeoutSeconds", "type"}
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http"}
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_SAFE = frozenset(_ALNUM + "_-")
_TOKEN = frozenset(_ALNUM + "!#$%&'*+.^_`|~-")  # an HTTP header name's characters

Transport = Literal["stdio", "http"]


class ServerConfig(NamedTuple):  # (a NamedTuple: `kward rpc` reads these at start-up, and a dataclass costs 1 ms)
    """One configured MCP server. `command` is the argv of a stdio server (None for an
    HTTP one, whose `url` is set); `env` and `headers` are (name, value) pairs; `problem`
    is why the entry cannot be used (None: it can)."""

    name: str
    command: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    enabled: bool = True
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    problem: str | None = None

    @property
    def transport(self) -> Transport:
        return "http" if self.url is not None else "stdio"


class _Bad(ValueError):
    pass


def parse_servers(value: object) -> tuple[list[ServerConfig], list[str]]:
    """The servers of an `mcp.servers` value in config order, and one problem text per
    entry that cannot be used (that entry is still listed, with `problem` set). A value
    that is not an object is a problem and no server."""
    if not isinstance(value, dict):
        return [], ["mcp.servers must be an object of servers by name"]
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for index, (name, entry) in enumerate(value.items()):
        if index >= MAX_SERVERS:
            problems.append(f"more than {MAX_SERVERS} servers: the rest are ignored")
            break
        label = str(name)[:MAX_NAME] or "(empty)"
        try:
            servers.append(_server(name, entry))
        except _Bad as exc:
            problems.append(f"{label}: {exc}")
            servers.append(ServerConfig(name=label, problem=str(exc), enabled=_enabled_of(entry)))
    return servers, problems


def _enabled_of(entry: object) -> bool:
    return not (isinstance(entry, dict) and entry.get("enabled") is False)


def _server(name: object, entry: object) -> ServerConfig:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise _Bad(f"a server's name must be 1 to {MAX_NAME} characters")
    if any(ord(c) < 32 for c in name):
        raise _Bad("a server's name must not hold control characters")
    if not isinstance(entry, dict):
        raise _Bad("must be an object ({\"command\": ...} or {\"url\": ...})")
    unknown = sorted(str(k) for k in entry if k not in _KEYS)
    if unknown:
        raise _Bad("unknown key " + ", ".join(repr(k[:40]) for k in unknown[:3]))
    kind = entry.get("type")
    if kind is not None and kind not in _TYPES:
        raise _Bad("type must be stdio or http")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise _Bad("enabled must be true or false")
    timeout = entry.get("toolTimeoutSeconds", DEFAULT_TOOL_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or not 0 < timeout <= MAX_TOOL_TIMEOUT:
        raise _Bad(f"toolTimeoutSeconds must be a number above 0 and at most {MAX_TOOL_TIMEOUT:g}")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise _Bad("needs exactly one of command (a stdio server) or url (an HTTP server)")
    if kind is not None and _TYPES[kind] != ("http" if has_url else "stdio"):
        raise _Bad(f"type {kind} does not match {'url' if has_url else 'command'}")
    if has_url:
        for key in ("args", "env", "cwd"):
            if key in entry:
                raise _Bad(f"{key} is for a stdio server (command), not a url")
        return ServerConfig(name=name, url=_url(entry["url"]), headers=_pairs(entry.get("headers", {}), "headers"),
                            enabled=enabled, tool_timeout=float(timeout))
    if "headers" in entry:
        raise _Bad("headers are for an HTTP server (url), not a command")
    command = _text(entry["command"], "command")
    if not command.strip():
        raise _Bad("command must not be empty")
    args = entry.get("args", [])
    if not isinstance(args, list) or len(args) > MAX_ARGS:
        raise _Bad(f"args must be a list of at most {MAX_ARGS} strings")
    argv = (command, *(_text(a, "args") for a in args))
    cwd = entry.get("cwd")
    if cwd is not None:
        cwd = _text(cwd, "cwd")
    return ServerConfig(name=name, command=argv, env=_pairs(entry.get("env", {}), "env"), cwd=cwd,
                        enabled=enabled, tool_timeout=float(timeout))


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{what} must be {'strings' if what in ('args', 'env', 'headers') else 'a string'}")
    if len(value) > MAX_TEXT or "\0" in value:
        raise _Bad(f"{what}: at most {MAX_TEXT} characters, no NUL")
    return value


def _pairs(value: object, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or len(value) > 256:
        raise _Bad(f"{what} must be an object of strings")
    out = []
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str) or not key:
            raise _Bad(f"{what} must be an object of strings")
        _text(item, what)
        if what == "env" and ("=" in key or "\0" in key):
            raise _Bad("env names must not hold '=' or NUL")
        if what == "headers" and (not _TOKEN.issuperset(key) or "\r" in item or "\n" in item):
            raise _Bad(f"headers: {key[:40]!r} is not a usable header")
        out.append((key, item))
    return tuple(out)


def _url(value: object) -> str:
    url = _text(value, "url")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0] \
            or any(c.isspace() for c in url):
        raise _Bad("url must be an http:// or https:// URL")
    return url


def tool_name(server: str, tool: str) -> str:
    """The model's name of `server`'s tool `tool` (see the module doc)."""
    plain = f"mcp__{server}__{tool}"
    safe = "".join(c if c in _SAFE else "_" for c in plain)
    # (a "__" inside the server's name could make two pairs one name: a__b + c, a + b__c)
    if safe == plain and len(safe) <= MAX_TOOL_NAME and "__" not in server:
        return safe
    import hashlib  # (only for a name that must change: 2 ms at start-up otherwise)

    digest = hashlib.sha1(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe[:MAX_TOOL_NAME - 9]}_{digest}"

