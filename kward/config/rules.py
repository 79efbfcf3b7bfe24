"""One validator per setting, shared by the environment variables and config.json.

A `Rule` turns a value into the one kward uses (or refuses it) and says what is allowed.
`KEYS` is the table of every config.json key kward reads, each with its rule and the
environment variable that overrides it; the providers' own keys (models, reasoning levels,
base URLs, credentials, options) come from `kward.providers.specs`. config/update
checks values with these rules (`kward.config.store.validate_values`), `kward.config.settings` resolves
them, and `ENV` names every environment variable whose value is checked:
`check_environment` runs those once when `kward rpc` starts, so a bad value stops the
process at once (exit status 2, one stderr line naming the variable) instead of being
ignored or failing some later request. Other variables (a model id, a script path, a
reasoning level: passed on as written) are not checked.

| variable                       | config key               | allowed |
|--------------------------------|--------------------------|---------|
| KWARD_PROVIDER                 | provider                 | codex, openrouter, openai-compatible, scripted |
| KWARD_LOG_LEVEL                | log_level                | DEBUG, INFO, WARNING, ERROR, CRITICAL |
| KWARD_RPC_WORKERS              | rpc.workers              | integer 1 to 1024 |
| KWARD_MAX_FRAME_BYTES          | rpc.max_frame_bytes      | integer 1024 to 2^34 |
| KWARD_MAX_INPUT_CHARS          | rpc.max_input_chars      | integer 1 to 2^30 |
| KWARD_RETRY_DELAYS             | retry_delays             | at most 20 delays of 0 to 3600 s |
| KWARD_STREAM_IDLE_TIMEOUT      | stream_idle_timeout      | 0.05 to 3600 s |
| KWARD_CODEX_BASE_URL           | codex_base_url           | http(s) URL |
| KWARD_OPENROUTER_BASE_URL      | openrouter_base_url      | http(s) URL |
| KWARD_OPENAI_COMPAT_BASE_URL   | openai_compat_base_url   | http(s) URL |
| KWARD_OPENAI_AUTH_ISSUER       | openai_auth_issuer       | https URL; http only to a loopback host (127.0.0.0/8, ::1, localhost) |
| KWARD_OAUTH_PORT               | -                        | integer 0 to 65535 (0: any free port) |
| KWARD_WEB_SEARCH_URL           | web_search.url           | http(s) URL |
| KWARD_LOGGING                  | logging.enabled          | 1, true, yes, on / 0, false, no, off |
| KWARD_LOGGING_TOKENS (_PERFORMANCE, _TOOLS, _ERRORS) | logging.tokens (...) | as KWARD_LOGGING |

An empty variable counts as unset, except `KWARD_RETRY_DELAYS=` (no retries).
Pure functions over plain data; any thread; standard library only (imported at start).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, NamedTuple, NoReturn

from kward.errors import ConfigError
from kward.providers import specs

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
EFFORTS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")  # max: the model's highest level
MAX_RETRY_DELAYS = 20
MAX_RETRY_DELAY_SECONDS = 3600.0


class Invalid(ValueError):
    """A value a rule refuses; the text is "must be <what is allowed>"."""


class Rule(NamedTuple):
    """`accept(value)` returns the value to use, or raises ValueError/TypeError.
    `from_text` turns an environment variable's text into a value for `accept`;
    `env_allowed` describes that text when it differs from `allowed`."""

    allowed: str
    accept: Callable[[Any], Any]
    from_text: Callable[[str], Any] = str
    env_allowed: str | None = None
    empty: Any = None  # the value of `VAR=` (None: as if unset)

    def normalize(self, value: Any) -> Any:
        """The value to use; Invalid ("must be ...") when refused."""
        try:
            return self.accept(value)
        except Invalid:  # a rule that says exactly what is wrong (`hooks`)
            raise
        except (ValueError, TypeError):
            raise Invalid(f"must be {self.allowed}") from None

    def from_env(self, name: str, raw: str) -> Any:
        """The value of variable `name`; ConfigError naming it when refused."""
        if raw.strip() == "":
            return self.empty
        try:
            return self.accept(self.from_text(raw.strip()))
        except (ValueError, TypeError):
            raise ConfigError(f"{name} must be {self.env_allowed or self.allowed}, not {shown(raw)}",
                              data={"variable": name}) from None


def shown(value: Any, limit: int = 60) -> str:
    """A refused value as a message quotes it: repr, shortened."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _fail() -> NoReturn:
    raise ValueError


APPROVAL_MODES = ("off", "ask", "readOnly")


def _approval_mode(v: Any) -> str:
    return v if isinstance(v, str) and v in APPROVAL_MODES else _fail()


def _provider(v: Any) -> str:
    spec = specs.find(v)
    return spec.key if spec is not None else _fail()


def _log_level(v: Any) -> str:
    return v.upper() if isinstance(v, str) and v.upper() in LOG_LEVELS else _fail()


def _effort(v: Any) -> str:
    return v.lower() if isinstance(v, str) and v.lower() in EFFORTS else _fail()


def _text(v: Any) -> str:
    return v if isinstance(v, str) else _fail()


def _bool(v: Any) -> bool:
    return v if isinstance(v, bool) else _fail()


_FLAG_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False,
               "off": False}


def _flag_text(raw: str) -> bool:
    value = _FLAG_WORDS.get(raw.lower())
    return _fail() if value is None else value


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _fail()
    return float(v)


def integer(lo: int, hi: int) -> Rule:
    def accept(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            return _fail()
        return v

    return Rule(f"an integer from {lo} to {hi}", accept, int)


def seconds(lo: float, hi: float) -> Rule:
    def accept(v: Any) -> float:
        value = _number(v)
        return value if lo <= value <= hi else _fail()  # NaN fails too

    return Rule(f"a number of seconds from {lo:g} to {hi:g}", accept, float)


def _delays(v: Any) -> tuple[float, ...]:
    if not isinstance(v, (list, tuple)) or len(v) > MAX_RETRY_DELAYS:
        return _fail()
    values = tuple(_number(x) for x in v)
    return values if all(0 <= x <= MAX_RETRY_DELAY_SECONDS for x in values) else _fail()


def _delays_text(raw: str) -> list[float]:
    return [float(x) for x in raw.replace(" ", "").split(",") if x]


def _url(v: Any) -> str:
    if not isinstance(v, str) or any(c.isspace() for c in v):
        return _fail()
    scheme, sep, rest = v.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
        return _fail()
    return v.rstrip("/")


def loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or ``localhost`` (a name, so only the resolver's word for it)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    import ipaddress  # (only when an issuer is set: not on the start-up path)

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _issuer(v: Any) -> str:
    """An https:// URL, or http:// to a loopback host: the login's code and tokens go there."""
    url = _url(v)
    from urllib.parse import urlsplit  # (only when an issuer is set)

    parts = urlsplit(url)
    try:
        host = parts.hostname or ""
    except ValueError:
        return _fail()
    scheme = parts.scheme.lower()
    return url if scheme == "https" or (scheme == "http" and loopback_host(host)) else _fail()


PROVIDER = Rule("one of " + ", ".join(spec.key for spec in specs.PROVIDERS), _provider)
LOG_LEVEL = Rule("one of " + ", ".join(LOG_LEVELS), _log_level)
EFFORT = Rule("one of " + ", ".join(EFFORTS), _effort)
TEXT = Rule("a string", _text)
BOOL = Rule("true or false", _bool)
#: A switch set by config (literally true or false) or a variable (1/true/yes/on, 0/false/no/off).
FLAG = Rule("true or false", _bool, _flag_text, env_allowed="one of 1, true, yes, on, 0, false, no, off")
WORKERS = integer(1, 1024)
MAX_FRAME_BYTES = integer(1024, 1 << 34)
MAX_INPUT_CHARS = integer(1, 1 << 30)
RETRY_DELAYS = Rule(f"a list of at most {MAX_RETRY_DELAYS} numbers of seconds (0 to {MAX_RETRY_DELAY_SECONDS:g})",
                    _delays, _delays_text,
                    env_allowed=f"comma-separated seconds (at most {MAX_RETRY_DELAYS}, each 0 to "
                                f"{MAX_RETRY_DELAY_SECONDS:g}; empty for no retries)",
                    empty=())
IDLE_TIMEOUT = seconds(0.05, 3600)
URL = Rule("an http:// or https:// URL", _url)
ISSUER = Rule("an https:// URL (http:// only for a loopback host: 127.0.0.0/8, ::1 or localhost)", _issuer)
TOKENS = integer(0, 10_000_000)
PLUGIN_TIMEOUT = seconds(0.05, 3600)
SANDBOX_MODES = ("off", "workspace-write")  # kward.sandbox.MODES
SANDBOX = Rule("one of " + ", ".join(SANDBOX_MODES), lambda v: v if v in SANDBOX_MODES else _fail())
APPROVAL_MODE = Rule("one of " + ", ".join(APPROVAL_MODES), _approval_mode)
APPROVAL_TIMEOUT = seconds(0.05, 86400)
#: The events a command hook runs on (config `hooks.<event>`: `kward.agent.hooks`); the
#: first two concern one tool call and may match it (`tool`, `commandPattern`).
HOOK_EVENTS = ("beforeTool", "afterTool", "userPromptSubmit", "turnEnd", "sessionStart")
TOOL_HOOK_EVENTS = ("beforeTool", "afterTool")
MAX_HOOKS = 32  # per event
MAX_HOOK_COMMAND = 16 * 1024  # characters of one hook's command line
MAX_HOOK_PATTERN = 1024  # characters of one regular expression
HOOK_TIMEOUT = (0.05, 3600.0)
DEFAULT_HOOK_TIMEOUT = 60.0


class HookSpec(NamedTuple):
    """One configured hook: `hooks.<event>[position]` runs `command` (a /bin/sh command line)
    when `tool` (a regular expression searched in the tool's name) and `command_pattern`
    (searched in a shell call's command) match, each when given; within `timeout` seconds."""

    event: str
    position: int
    command: str
    tool: str | None = None
    command_pattern: str | None = None
    timeout: float = DEFAULT_HOOK_TIMEOUT

    @property
    def source(self) -> str:
        """Where it is configured: ``hooks.beforeTool[0]``."""
        return f"hooks.{self.event}[{self.position}]"


def _pattern(entry: dict[str, Any], name: str, where: str) -> str | None:
    value = entry.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_HOOK_PATTERN:
        raise Invalid(f"{where}.{name} is not a regular expression of 1 to {MAX_HOOK_PATTERN} characters")
    import re  # (only when hooks are configured)

    try:
        re.compile(value)
    except re.error as exc:
        raise Invalid(f"{where}.{name} is not a valid regular expression ({exc})") from None
    return value


def hook_rule(event: str) -> Rule:
    """The rule of `hooks.<event>`: a list of hook objects, each {command, tool?,
    commandPattern?, timeoutSeconds?} (the matchers only on the tool events); a tuple of
    `HookSpec`. An entry that cannot be used is refused, saying which and why."""
    matchers = event in TOOL_HOOK_EVENTS
    fields = {"command", "timeoutSeconds", *(("tool", "commandPattern") if matchers else ())}

    def accept(value: Any) -> tuple[HookSpec, ...]:
        try:
            return hooks(value)
        except Invalid as exc:  # (saying which entry and why)
            raise Invalid(f"must be a list of at most {MAX_HOOKS} hooks{f' ({exc})' if str(exc) else ''}") from None

    def hooks(value: Any) -> tuple[HookSpec, ...]:
        if not isinstance(value, list) or len(value) > MAX_HOOKS:
            raise Invalid("")
        specs_: list[HookSpec] = []
        for index, entry in enumerate(value):
            where = f"[{index}]"
            if not isinstance(entry, dict):
                raise Invalid(f"{where} is not an object with a command")
            unknown = sorted(set(entry) - fields)
            if unknown:
                allowed = ", ".join(sorted(fields))
                raise Invalid(f"{where} has {', '.join(map(str, unknown))}, which {event} hooks do not take "
                              f"(they take {allowed})")
            command = entry.get("command")
            if not isinstance(command, str) or not command.strip() or len(command) > MAX_HOOK_COMMAND:
                raise Invalid(f"{where}.command is not a shell command line of 1 to {MAX_HOOK_COMMAND} characters")
            timeout = entry.get("timeoutSeconds", DEFAULT_HOOK_TIMEOUT)
            lo, hi = HOOK_TIMEOUT
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not lo <= timeout <= hi:
                raise Invalid(f"{where}.timeoutSeconds is not a number of seconds from {lo:g} to {hi:g}")
            specs_.append(HookSpec(event, index, command, _pattern(entry, "tool", where),
                                   _pattern(entry, "commandPattern", where), float(timeout)))
        return tuple(specs_)

    return Rule(f"a list of at most {MAX_HOOKS} hooks", accept)


def _mcp_servers(v: Any) -> tuple[Any, ...]:
    """`mcp.servers`: the servers by name (`kward.mcp.parse_servers`); an entry that cannot
    be used is kept with its problem, so `mcp/status` and `kward doctor` name it."""
    if not isinstance(v, dict):
        raise Invalid("must be an object of MCP servers by name")
    from kward.mcp.config import parse_servers  # (only when servers are configured)

    servers, _problems = parse_servers(v)
    return tuple(servers)


MCP_SERVERS = Rule("an object of MCP servers by name", _mcp_servers)
DEFAULT_WEB_SEARCH_URL = "https://mcp.exa.ai/mcp"  # Exa's hosted MCP endpoint (no key needed)


#: The rule of each kind of `specs.Setting`.
KINDS: dict[str, Rule] = {"text": TEXT, "effort": EFFORT, "url": URL}


class Key(NamedTuple):
    """One config.json key kward reads. `path` is dotted inside a group ("rpc.workers": the
    group "rpc" must then be an object). `env` overrides it; when `env_checked` the
    variable's text is checked by `rule` at start, otherwise it is taken as written.
    `strict`: a bad config value makes whatever needs the setting fail with a ConfigError
    naming the key (it decides where or how model requests go); other bad values are
    ignored with a warning."""

    path: str
    rule: Rule
    env: str | None = None
    env_checked: bool = True
    strict: bool = False


def _table() -> dict[str, Key]:
    keys = [
        Key("provider", PROVIDER, "KWARD_PROVIDER", strict=True),
        Key("log_level", LOG_LEVEL, "KWARD_LOG_LEVEL"),
        Key("rpc.workers", WORKERS, "KWARD_RPC_WORKERS"),
        Key("rpc.max_frame_bytes", MAX_FRAME_BYTES, "KWARD_MAX_FRAME_BYTES"),
        Key("rpc.max_input_chars", MAX_INPUT_CHARS, "KWARD_MAX_INPUT_CHARS"),
        Key("retry_delays", RETRY_DELAYS, "KWARD_RETRY_DELAYS", strict=True),
        Key("stream_idle_timeout", IDLE_TIMEOUT, "KWARD_STREAM_IDLE_TIMEOUT", strict=True),
    ]
    for spec in specs.PROVIDERS:
        for s in (spec.base_url, *spec.model, *spec.effort, spec.secret, *spec.options):
            if s is not None and s.key is not None:
                keys.append(Key(s.key, KINDS[s.kind], s.env, env_checked=s.kind == "url", strict=s.kind == "url"))
    keys += [
        Key("openai_oauth_client_id", TEXT),
        Key("openai_auth_issuer", ISSUER, "KWARD_OPENAI_AUTH_ISSUER", strict=True),
        Key("logging.enabled", FLAG, "KWARD_LOGGING"),
        *(Key(f"logging.{name}", FLAG, f"KWARD_LOGGING_{name.upper()}")
          for name in ("tokens", "performance", "tools", "errors")),
        Key("memory.enabled", BOOL), Key("memory.auto_summary", BOOL),
        Key("compaction.enabled", BOOL), Key("compaction.reserve_tokens", TOKENS),
        Key("compaction.keep_recent_tokens", TOKENS), Key("compaction.context_window", integer(1, 100_000_000)),
        Key("sessions.auto_resume", BOOL),
        Key("tools.workspace_guardrails", BOOL),
        Key("plugins.command_timeout_seconds", PLUGIN_TIMEOUT),
        # how shell commands are confined: a bad value refuses every command (never unsandboxed)
        Key("security.sandbox", SANDBOX, strict=True), Key("security.sandboxNetwork", BOOL, strict=True),
        # strict: a bad approval setting never lets a tool run unasked (the turn fails instead)
        Key("security.approvalMode", APPROVAL_MODE, strict=True),
        Key("security.approvalTimeoutSeconds", APPROVAL_TIMEOUT, strict=True),
        # strict: a policy hook that cannot be used never lets a call run unchecked
        *(Key(f"hooks.{event}", hook_rule(event), strict=True) for event in HOOK_EVENTS),
        Key("mcp.servers", MCP_SERVERS),
        Key("web_search.enabled", BOOL), Key("web_search.url", URL, "KWARD_WEB_SEARCH_URL"),
    ]
    table: dict[str, Key] = {}
    for key in keys:
        table.setdefault(key.path, key)  # shared keys (`model`, `reasoning_effort`) appear once
    return table


#: Every config.json key kward reads, by path.
KEYS: dict[str, Key] = _table()
#: The groups of dotted keys: config values that must be objects.
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(p.split(".")[0] for p in KEYS if "." in p))
OAUTH_PORT = integer(0, 65535)
#: Every environment variable whose value kward checks (KWARD_OAUTH_PORT has no config key).
ENV: dict[str, Rule] = {**{k.env: k.rule for k in KEYS.values() if k.env and k.env_checked},
                        "KWARD_OAUTH_PORT": OAUTH_PORT}


def env_value(env: Mapping[str, str], name: str) -> Any:
    """The checked value of variable `name`, None when unset or empty."""
    raw = env.get(name)
    return None if raw is None else ENV[name].from_env(name, raw)


def check_environment(env: Mapping[str, str] = os.environ) -> None:
    """ConfigError naming the first variable of `ENV` whose value is refused."""
    for name in ENV:
        env_value(env, name)
