"""Settings: every value kward reads from the environment and config.json, resolved once.

`resolve_settings(config, env)` turns a config document and the environment into one
frozen `Settings`, a typed section per concern. The environment wins over config.json,
config.json over the default, and each value is checked by the one rule of its key
(`kward.config.rules.KEYS`, which config/update checks values with too).

- A bad environment value is a ConfigError naming the variable (`kward rpc` stops at start).
- A bad config.json value never stops anything. Most are ignored with a warning
  (`Settings.warnings`, shown by `initialize`) and the default applies; a bad model or
  reasoning key gives way to the next key of its provider. The values that decide where
  and how model requests go (`provider`, base URLs, retry delays, the stream idle timeout,
  the OAuth issuer: `Key.strict`) are kept as `problems` instead, raised as ConfigError by
  whatever needs them (`ProvidersSettings.check`): a request never goes silently to a
  default endpoint when the user configured another.

`LiveSettings` keeps the Settings of one config store current: re-resolved whenever the
content of config.json changes (config/update, runtime/updateSetting, another process, a
hand edit) and on `reload()`.

Pure data and pure functions, apart from `LiveSettings` (any thread; see its docstring).
"""

from __future__ import annotations

import json
import os
import threading
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, TypeVar

from kward.config import rules
from kward.errors import ConfigError
from kward.providers import specs
from kward.values import EMPTY

if TYPE_CHECKING:  # pragma: no cover
    from kward.config.store import ConfigStore

DEFAULT_RETRY_DELAYS: tuple[float, ...] = (1.0, 2.0)
DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_AUTH_ISSUER = "https://auth.openai.com"


class RpcSettings(NamedTuple):
    workers: int = 32
    max_frame_bytes: int = 64 * 1024 * 1024
    max_input_chars: int = 1_000_000


class ModelChoice(NamedTuple):
    """A provider's configured model (None: its default, for Scripted the script's own)
    and reasoning level (lower case, as requested; None: no reasoning)."""

    model: str | None
    effort: str | None


class Problem(NamedTuple):
    """A config.json value of a strict key that cannot be used."""

    key: str
    message: str

    def error(self) -> ConfigError:
        return ConfigError(self.message, data={"key": self.key})


class ProvidersSettings(NamedTuple):
    """What selection needs, for every provider of `kward.providers.specs` (by key)."""

    provider: str | None = None  # the `provider` setting; None: chosen by credentials
    provider_source: str | None = None  # "KWARD_PROVIDER" or "config provider"
    base_urls: Mapping[str, str | None] = EMPTY  # the default applied
    retry_delays: tuple[float, ...] = DEFAULT_RETRY_DELAYS
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT  # max silence between bytes of a response
    models: Mapping[str, ModelChoice] = EMPTY
    secrets: Mapping[str, str] = EMPTY  # credentials stored in config.json (never in repr)
    options: Mapping[str, Mapping[str, Any]] = EMPTY  # provider options by config key

    def model(self, key: str) -> ModelChoice:
        return self.models.get(key) or ModelChoice(None, None)

    def __repr__(self) -> str:
        shown = self._replace(secrets={key: "[REDACTED]" for key in self.secrets})
        return "ProvidersSettings(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, shown)) + ")"


class CompactionSettings(NamedTuple):
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    context_window: int | None = None  # None: the model's


class MemorySettings(NamedTuple):
    enabled: bool = False
    auto_summary: bool = False


class LoggingSettings(NamedTuple):
    """The opt-in telemetry records (not the diagnostic log: `Settings.log_level`)."""

    enabled: bool = False
    tokens: bool = False  # the categories (CATEGORY_FIELDS): the fields after `enabled`
    performance: bool = False
    tools: bool = False
    errors: bool = False

    @property
    def enabled_categories(self) -> tuple[str, ...]:
        """The categories switched on (none unless `enabled`)."""
        if self.enabled is not True:
            return ()
        return tuple(c for c in CATEGORY_FIELDS if getattr(self, c) is True)


#: The telemetry categories (kward.telemetry), in the order of LoggingSettings' fields.
CATEGORY_FIELDS: tuple[str, ...] = LoggingSettings._fields[1:]  # tokens, performance, tools, errors


class ToolsSettings(NamedTuple):
    workspace_guardrails: bool = True


class PluginsSettings(NamedTuple):
    command_timeout_seconds: float = 30.0  # how long plugin code may run (a command, a load, a prompt context)


class SecuritySettings(NamedTuple):
    """`security.*` of config.json: the approval policy (`kward.agent.approval`) and the
    shell sandbox (`kward.sandbox`)."""

    approval_mode: str | None = None  # off, ask or readOnly; None: the face's default
    approval_timeout_seconds: float = 300.0
    sandbox: str = "off"  # security.sandbox: "off" or "workspace-write" (kward.sandbox)
    sandbox_network: bool = True  # security.sandboxNetwork


class HooksSettings(NamedTuple):
    """`hooks.<event>` of config.json: the command hooks of each event, in order
    (`kward.agent.hooks`). A value that cannot be used is a problem of its key, raised by
    the turn that would run it."""

    beforeTool: tuple[rules.HookSpec, ...] = ()  # noqa: N815 - named as the config keys
    afterTool: tuple[rules.HookSpec, ...] = ()  # noqa: N815
    userPromptSubmit: tuple[rules.HookSpec, ...] = ()  # noqa: N815
    turnEnd: tuple[rules.HookSpec, ...] = ()  # noqa: N815
    sessionStart: tuple[rules.HookSpec, ...] = ()  # noqa: N815

    def of(self, event: str) -> tuple[rules.HookSpec, ...]:
        hooks: tuple[rules.HookSpec, ...] = getattr(self, event)
        return hooks

    @property
    def total(self) -> int:
        return sum(len(hooks) for hooks in self)


class McpSettings(NamedTuple):
    """`mcp.servers` (`kward.mcp.ServerConfig`, in config order) and `web_search.*`: the
    MCP servers whose tools the model gets, and the web_search tool's endpoint."""

    servers: tuple[Any, ...] = ()
    web_search_enabled: bool = True
    web_search_url: str = rules.DEFAULT_WEB_SEARCH_URL


class AuthSettings(NamedTuple):
    issuer: str = DEFAULT_AUTH_ISSUER
    oauth_client_id: str | None = None
    oauth_port: int | None = None  # KWARD_OAUTH_PORT; None: the default callback port


class Settings(NamedTuple):
    """Every setting, resolved from environment (wins), config.json and defaults. Pure data."""

    log_level: str | None = None  # None = not set by the user (default WARNING, file only)
    rpc: RpcSettings = RpcSettings()
    providers: ProvidersSettings = ProvidersSettings()
    compaction: CompactionSettings = CompactionSettings()
    memory: MemorySettings = MemorySettings()
    logging: LoggingSettings = LoggingSettings()
    tools: ToolsSettings = ToolsSettings()
    plugins: PluginsSettings = PluginsSettings()
    auth: AuthSettings = AuthSettings()
    security: SecuritySettings = SecuritySettings()
    hooks: HooksSettings = HooksSettings()
    mcp: McpSettings = McpSettings()
    warnings: tuple[str, ...] = ()  # config values that were ignored, and why
    problems: Mapping[str, Problem] = EMPTY  # unusable values of strict keys, by key

    def check(self, *keys: str) -> None:
        """Raise the ConfigError of the first of `keys` whose config value is unusable."""
        for key in keys:
            if key in self.problems:
                raise self.problems[key].error()

    # the names the RPC server reads
    @property
    def rpc_workers(self) -> int:
        return self.rpc.workers

    @property
    def max_frame_bytes(self) -> int:
        return self.rpc.max_frame_bytes

    @property
    def max_input_chars(self) -> int:
        return self.rpc.max_input_chars


_Section = TypeVar("_Section", bound=NamedTuple)


class _Reader:
    """The checked value of every key of `rules.KEYS` for one (config, env) pair, with the
    warnings and problems of the config values that were refused."""

    def __init__(self, config: Mapping[str, Any], env: Mapping[str, str]):
        self.config = config
        self.env = env
        self.warnings: list[str] = []
        self.problems: dict[str, Problem] = {}
        self.from_env: set[str] = set()
        self._bad_groups: set[str] = set()
        self.values = {path: self._read(path, key) for path, key in rules.KEYS.items()}

    def _raw(self, path: str) -> Any:
        group, dot, name = path.partition(".")
        if not dot:
            return self.config.get(path)
        value = self.config.get(group)
        if value is None:
            return None
        if not isinstance(value, dict):
            if group not in self._bad_groups:
                self._bad_groups.add(group)
                self.warnings.append(f"config.json: ignoring {group}: must be an object")
            return None
        return value.get(name)

    def _read(self, path: str, key: rules.Key) -> Any:
        """The variable's value when set (the config value is then not looked at), else
        the config value checked by the key's rule."""
        if key.env and key.env in self.env:
            if key.env_checked:
                value = rules.env_value(self.env, key.env)  # ConfigError naming the variable
            else:
                value = self.env[key.env].strip() or None  # taken as written
            if value is not None:
                self.from_env.add(path)
                return value
        raw = self._raw(path)
        if raw is None:
            return None
        try:
            return key.rule.normalize(raw)
        except rules.Invalid as exc:
            if key.strict:
                self.problems[path] = Problem(path, f"Invalid config value for {path}: {exc}, not {rules.shown(raw)}")
            else:
                self.warnings.append(f"config.json: ignoring {path}: {exc}")
            return None

    def first(self, settings: tuple[specs.Setting, ...]) -> Any:
        """The first set value of a provider's settings, in their order."""
        for s in settings:
            value = self.values.get(s.key) if s.key else None
            if value not in (None, ""):
                return value
        return None

    def section(self, defaults: _Section, group: str) -> _Section:
        """`defaults` with the keys of `group` that are set."""
        values = {name: self.values.get(f"{group}.{name}") for name in defaults._fields}
        return defaults._replace(**{k: v for k, v in values.items() if v is not None})


def _effort(value: Any, default: str | None) -> str | None:
    value = value if value is not None else default
    return None if not isinstance(value, str) or value.lower() == "off" else value.lower()


def _providers(r: _Reader) -> ProvidersSettings:
    provider = r.values["provider"]
    base_urls: dict[str, str | None] = {}
    models: dict[str, ModelChoice] = {}
    secrets: dict[str, str] = {}
    options: dict[str, Mapping[str, Any]] = {}
    for spec in specs.PROVIDERS:
        if spec.base_url is not None and spec.base_url.key is not None:
            base_urls[spec.key] = r.values[spec.base_url.key] or spec.default_base_url
        models[spec.key] = ModelChoice(r.first(spec.model) or spec.default_model,
                                       _effort(r.first(spec.effort), spec.default_effort))
        secret = spec.secret.key if spec.secret is not None else None
        if secret and secret not in r.from_env and r.values[secret]:
            secrets[spec.key] = r.values[secret]  # (a variable, when set, is read per request)
        options[spec.key] = MappingProxyType({s.key: r.values[s.key] for s in spec.options if s.key})
    delays = r.values["retry_delays"]
    return ProvidersSettings(
        provider=provider,
        provider_source=None if provider is None
        else "KWARD_PROVIDER" if "provider" in r.from_env else "config provider",
        base_urls=MappingProxyType(base_urls),
        retry_delays=DEFAULT_RETRY_DELAYS if delays is None else delays,
        idle_timeout=r.values["stream_idle_timeout"] or DEFAULT_IDLE_TIMEOUT,
        models=MappingProxyType(models), secrets=MappingProxyType(secrets), options=MappingProxyType(options))


def _security(r: _Reader) -> SecuritySettings:
    timeout = r.values["security.approvalTimeoutSeconds"]
    return SecuritySettings(approval_mode=r.values["security.approvalMode"],
                            approval_timeout_seconds=300.0 if timeout is None else timeout,
                            sandbox=r.values["security.sandbox"] or "off",
                            sandbox_network=r.values["security.sandboxNetwork"] is not False)


def _hooks(r: _Reader) -> HooksSettings:
    """The hooks of each event; a key under `hooks` that is no event is ignored with a warning."""
    hooks = r.config.get("hooks")
    if isinstance(hooks, dict):
        for name in hooks:
            if name not in rules.HOOK_EVENTS:
                r.warnings.append(f"config.json: ignoring hooks.{name}: not a hook event (the events: "
                                  f"{', '.join(rules.HOOK_EVENTS)})")
    return r.section(HooksSettings(), "hooks")


def resolve_settings(config: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> Settings:
    """Combine env and config into Settings. Every environment variable kward checks
    (`rules.ENV`) is checked here: a bad value raises ConfigError naming it. Bad config
    values never raise (see the module docstring)."""
    rules.check_environment(env)
    r = _Reader(config, env)
    level = r.values["log_level"]
    return Settings(
        log_level=level.upper() if level else None,
        rpc=r.section(RpcSettings(), "rpc"),
        providers=_providers(r),
        compaction=r.section(CompactionSettings(), "compaction"),
        memory=r.section(MemorySettings(), "memory"),
        logging=r.section(LoggingSettings(), "logging"),
        tools=r.section(ToolsSettings(), "tools"),
        plugins=r.section(PluginsSettings(), "plugins"),
        auth=AuthSettings(issuer=r.values["openai_auth_issuer"] or DEFAULT_AUTH_ISSUER,
                          oauth_client_id=r.values["openai_oauth_client_id"] or None,
                          oauth_port=rules.env_value(env, "KWARD_OAUTH_PORT")),
        security=_security(r),
        hooks=_hooks(r),
        mcp=McpSettings(servers=r.values["mcp.servers"] or (),
                        web_search_enabled=r.values["web_search.enabled"] is not False,
                        web_search_url=r.values["web_search.url"] or rules.DEFAULT_WEB_SEARCH_URL),
        warnings=tuple(r.warnings),
        problems=MappingProxyType(dict(r.problems)),
    )


class LiveSettings:
    """The current Settings of a config store and an environment.

    `current()` costs one stat while config.json is unchanged (the same `ConfigStore.stamp`:
    the Settings of last time, not even the file's content is looked at, as the store's own
    cache does); after a change it reads the file and re-resolves only when its content
    changed (a rewrite with the same content keeps the same object). `reload()` resolves
    again regardless. Any thread: `_lock` guards the cached triple, resolution is pure and
    quick. Raises what `ConfigStore.load` raises for an unreadable or invalid file
    (ConfigError / FilesystemError)."""

    def __init__(self, config: "ConfigStore", env: Mapping[str, str] = os.environ):
        self.config = config
        self.env = env
        self._lock = threading.Lock()
        self._key: str | None = None
        self._stamp: object = None
        self._settings: Settings | None = None

    def current(self) -> Settings:
        stamp = self.config.stamp()  # (before the read: a change in between is seen next time)
        with self._lock:
            if self._settings is not None and stamp == self._stamp:
                return self._settings
        values = self.config.load()
        key = json.dumps(values, sort_keys=True)
        with self._lock:
            if self._settings is None or key != self._key:
                self._settings = resolve_settings(values, self.env)
                self._key = key
            self._stamp = stamp
            return self._settings

    def reload(self) -> Settings:
        with self._lock:
            self._settings = None
        return self.current()
