"""Config paths, config.json load/save, and the settings derived from config + environment.

Paths (DESIGN.md "Contracts"): the config directory is `~/.kward`, or the directory of
`KWARD_CONFIG_PATH` when set (that variable names the config *file*). `KWARD_AUTH_PATH`
overrides `auth.json`. Directories are created 0700, files written 0600, and every write is
atomic, so a crash or a concurrent process never sees a half-written config.

Thread contract: `ConfigStore` may be used from any thread; an internal lock serializes
loads and updates within the process and an flock on `<config dir>/.config.lock`
serializes read-modify-write across processes.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from kward import jsonshape, rules
from kward.errors import ConfigError, FilesystemError, InvalidParams
from kward.fsutil import atomic_write_bytes, file_lock

EFFORTS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")  # max: the model's highest level

DEFAULT_WORKERS = 32
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_INPUT_CHARS = 1_000_000


@dataclass(frozen=True)
class Paths:
    """Where kward keeps its files. Pure data; nothing is created by building one."""

    config_dir: Path
    config_file: Path
    auth_file: Path

    @property
    def sessions_dir(self) -> Path:
        return self.config_dir / "sessions"

    @property
    def logs_dir(self) -> Path:
        return self.config_dir / "logs"

    @property
    def memory_dir(self) -> Path:
        return self.config_dir / "memory"

    @property
    def cache_dir(self) -> Path:
        return self.config_dir / "cache"

    @property
    def prompts_dir(self) -> Path:
        return self.config_dir / "prompts"

    @property
    def skills_dir(self) -> Path:
        return self.config_dir / "skills"


def resolve_paths(env: Mapping[str, str] = os.environ) -> Paths:
    """Apply KWARD_CONFIG_PATH / KWARD_AUTH_PATH / HOME to find the config files."""
    custom = env.get("KWARD_CONFIG_PATH")
    if custom:
        config_file = Path(os.path.abspath(os.path.expanduser(custom)))
        config_dir = config_file.parent
    else:
        home = env.get("HOME") or os.path.expanduser("~")
        config_dir = Path(home) / ".kward"
        config_file = config_dir / "config.json"
    auth = env.get("KWARD_AUTH_PATH")
    auth_file = Path(os.path.abspath(os.path.expanduser(auth))) if auth else config_dir / "auth.json"
    return Paths(config_dir=config_dir, config_file=config_file, auth_file=auth_file)


# --- schema of known keys -------------------------------------------------------------

Check = Callable[[Any], "str | None"]


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) else "must be a string"


def _choice(options: tuple[str, ...]) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, str) or v.lower() not in {o.lower() for o in options}:
            return "must be one of " + ", ".join(options)
        return None

    return check


def _rule(rule: rules.Rule) -> Check:
    """A schema check from the rule the environment variable shares."""
    def check(v: Any) -> str | None:
        try:
            rule.normalize(v)
        except rules.Invalid as exc:
            return str(exc)
        return None

    return check


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _int_range(lo: int, hi: int) -> Check:
    return _rule(rules.integer(lo, hi))


def _obj(fields: dict[str, Check]) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return "must be an object"
        for key, sub in fields.items():
            if key in v and v[key] is not None:
                problem = sub(v[key])
                if problem:
                    return f"{key} {problem}"
        return None

    return check


_EFFORT = _choice(EFFORTS)
SCHEMA: dict[str, Check] = {
    "provider": _rule(rules.PROVIDER),
    "model": _str,
    "openai_model": _str,
    "openrouter_model": _str,
    "openai_compat_model": _str,
    "scripted_model": _str,
    "reasoning_effort": _EFFORT,
    "openai_reasoning_effort": _EFFORT,
    "openrouter_reasoning_effort": _EFFORT,
    "thinking_level": _EFFORT,
    "openrouter_api_key": _str,
    "openai_compat_api_key": _str,
    "openai_oauth_client_id": _str,
    "codex_base_url": _rule(rules.URL),
    "openrouter_base_url": _rule(rules.URL),
    "openai_compat_base_url": _rule(rules.URL),
    "openai_auth_issuer": _rule(rules.URL),
    "retry_delays": _rule(rules.RETRY_DELAYS),
    "stream_idle_timeout": _rule(rules.IDLE_TIMEOUT),
    "scripted_script": _str,
    "log_level": _rule(rules.LOG_LEVEL),
    "rpc": _obj({
        "workers": _rule(rules.WORKERS),
        "max_frame_bytes": _rule(rules.MAX_FRAME_BYTES),
        "max_input_chars": _rule(rules.MAX_INPUT_CHARS),
    }),
    "logging": _obj({k: _bool for k in ("enabled", "tokens", "performance", "tools", "errors")}),
    "memory": _obj({"enabled": _bool, "auto_summary": _bool}),
    "compaction": _obj({
        "enabled": _bool,
        "reserve_tokens": _int_range(0, 10_000_000),
        "keep_recent_tokens": _int_range(0, 10_000_000),
        "context_window": _int_range(1, 100_000_000),
    }),
    "sessions": _obj({"auto_resume": _bool}),
    "tools": _obj({"workspace_guardrails": _bool}),
}


def _shape_problem(values: Mapping[str, Any]) -> tuple[str, str] | None:
    """(key path, problem) when `values` (a config document, level 1) is nested more than
    `jsonshape.MAX_DEPTH` levels deep or holds an unpaired surrogate."""
    problem = jsonshape.find_problem(dict(values))
    return None if problem is None else (jsonshape.format_path(problem[0]), problem[1])


def validate_values(values: Mapping[str, Any]) -> None:
    """Raise InvalidParams (reason invalid_config) naming the first key whose value is too
    deep or not valid Unicode, or the first known key whose value has the wrong type."""
    shape = _shape_problem(values)
    if shape is not None:
        raise InvalidParams(f"Invalid config value for {shape[0]}: {shape[1]}", reason="invalid_config",
                            data={"key": shape[0]})
    for key, value in values.items():
        check = SCHEMA.get(key)
        if check is not None and value is not None:
            problem = check(value)
            if problem:
                raise InvalidParams(f"Invalid config value for {key}: {problem}", reason="invalid_config",
                                    data={"key": key})


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class ConfigStore:
    """Reads and writes config.json. See the module docstring for the thread contract."""

    def __init__(self, paths: Paths):
        self.paths = paths
        self._lock = threading.Lock()
        self._cache_key: tuple[int, int, int] | None = None
        self._cache: dict[str, Any] = {}

    @property
    def path(self) -> Path:
        return self.paths.config_file

    def load(self) -> dict[str, Any]:
        """The current config (a fresh copy). Missing file = {}; invalid = ConfigError;
        unreadable = FilesystemError (permission denied, a part of the path is a file, ...)."""
        with self._lock:
            return json.loads(json.dumps(self._load_locked()))

    def _load_locked(self) -> dict[str, Any]:
        path = self.paths.config_file
        try:
            st = os.stat(path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            if key == self._cache_key:
                return self._cache
            raw = path.read_bytes()
        except FileNotFoundError:
            self._cache_key, self._cache = None, {}
            return self._cache
        except OSError as exc:  # permission denied, a part of the path that is a file, ...
            raise FilesystemError.from_os_error(exc) from None
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant) if raw.strip() else {}
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            detail = f" ({exc.msg} at line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
            raise ConfigError(f"Invalid Kward config JSON: {path}{detail}", data={"path": str(path)}) from None
        if not isinstance(data, dict):
            raise ConfigError(f"Invalid Kward config JSON: {path} (the top level must be an object)",
                              data={"path": str(path)})
        shape = _shape_problem(data)
        if shape is not None:
            raise ConfigError(f"Invalid Kward config: {path}: {shape[0]} {shape[1]}",
                              data={"path": str(path), "key": shape[0]})
        self._cache_key, self._cache = key, data
        return data

    def update(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `values` into config.json (a None value removes the key); return the result.

        Values are checked first (nesting depth, valid Unicode, the types of known keys);
        on any error nothing is written.
        """
        validate_values(values)
        path = self.paths.config_file
        with self._lock, file_lock(path.parent / ".config.lock"):
            self._cache_key = None  # another process may have written since we cached
            current = dict(self._load_locked())
            for key, value in values.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            data = (json.dumps(current, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
            atomic_write_bytes(path, data)
            self._cache_key = None
            return json.loads(json.dumps(current))


@dataclass(frozen=True)
class Settings:
    """Process settings resolved from environment (wins) and config. Pure data."""

    log_level: str | None  # None = not set by the user (default WARNING, file only)
    rpc_workers: int
    max_frame_bytes: int
    max_input_chars: int
    warnings: tuple[str, ...] = ()  # config values that were ignored, and why


def resolve_settings(config: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> Settings:
    """Combine env and config into Settings. Every environment variable kward checks
    (`rules.ENV`, the providers' ones included) is checked here, once at start: a bad
    value raises ConfigError naming it (the user just set it). A bad config.json value is
    ignored with a warning, so a hand-edited file never stops the server."""
    rules.check_environment(env)
    warnings: list[str] = []

    def checked(key: str, value: Any) -> Any:
        problem = SCHEMA[key](value) if value is not None else None
        if problem:
            warnings.append(f"config.json: ignoring {key}: {problem}")
            return None
        return value

    rpc = checked("rpc", config.get("rpc")) or {}
    level = rules.env_value(env, "KWARD_LOG_LEVEL") or checked("log_level", config.get("log_level"))
    return Settings(
        log_level=level.upper() if level else None,
        rpc_workers=rules.env_value(env, "KWARD_RPC_WORKERS") or rpc.get("workers") or DEFAULT_WORKERS,
        max_frame_bytes=rules.env_value(env, "KWARD_MAX_FRAME_BYTES")
        or rpc.get("max_frame_bytes") or DEFAULT_MAX_FRAME_BYTES,
        max_input_chars=rules.env_value(env, "KWARD_MAX_INPUT_CHARS")
        or rpc.get("max_input_chars") or DEFAULT_MAX_INPUT_CHARS,
        warnings=tuple(warnings),
    )
