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

from kward.errors import ConfigError, InvalidParams
from kward.fsutil import atomic_write_bytes, file_lock

EFFORTS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")  # max: the model's highest level
PROVIDERS = ("codex", "openrouter", "openai-compatible", "scripted")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

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


def _url(v: Any) -> str | None:
    if not isinstance(v, str) or not v.startswith(("http://", "https://")):
        return "must be an http:// or https:// URL"
    return None


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _int_range(lo: int, hi: int) -> Check:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            return f"must be an integer from {lo} to {hi}"
        return None

    return check


def _delays(v: Any) -> str | None:
    ok = isinstance(v, list) and len(v) <= 20 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 3600 for x in v
    )
    return None if ok else "must be a list of at most 20 numbers of seconds (0 to 3600)"


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
    "provider": _choice(PROVIDERS),
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
    "codex_base_url": _url,
    "openrouter_base_url": _url,
    "openai_compat_base_url": _url,
    "openai_auth_issuer": _url,
    "retry_delays": _delays,
    "stream_idle_timeout": lambda v: None if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.05 <= v <= 3600
    else "must be a number of seconds from 0.05 to 3600",
    "scripted_script": _str,
    "log_level": _choice(LOG_LEVELS),
    "rpc": _obj({
        "workers": _int_range(1, 1024),
        "max_frame_bytes": _int_range(1024, 1 << 34),
        "max_input_chars": _int_range(1, 1 << 30),
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


def validate_values(values: Mapping[str, Any]) -> None:
    """Raise InvalidParams (reason invalid_config) naming the first known key whose value
    has the wrong type."""
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
        """The current config (a fresh copy). Missing file = {}; invalid = ConfigError."""
        with self._lock:
            return json.loads(json.dumps(self._load_locked()))

    def _load_locked(self) -> dict[str, Any]:
        path = self.paths.config_file
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._cache_key, self._cache = None, {}
            return self._cache
        except OSError as exc:
            raise ConfigError(f"Cannot read Kward config: {path}: {exc.strerror}", data={"path": str(path)})
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if key == self._cache_key:
            return self._cache
        try:
            raw = path.read_bytes()
            data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant) if raw.strip() else {}
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            detail = f" ({exc.msg} at line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
            raise ConfigError(f"Invalid Kward config JSON: {path}{detail}", data={"path": str(path)}) from None
        if not isinstance(data, dict):
            raise ConfigError(f"Invalid Kward config JSON: {path} (the top level must be an object)",
                              data={"path": str(path)})
        self._cache_key, self._cache = key, data
        return data

    def update(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `values` into config.json (a None value removes the key); return the result.

        Known keys are type-checked first; on any error nothing is written.
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


def _env_int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int | None:
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be from {lo} to {hi}, got {value}")
    return value


def resolve_settings(config: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> Settings:
    """Combine env and config into Settings. A bad environment value raises ConfigError
    (the user just set it); a bad config.json value is ignored with a warning, so a
    hand-edited file never stops the server."""
    warnings: list[str] = []

    def checked(key: str, value: Any) -> Any:
        problem = SCHEMA[key](value) if value is not None else None
        if problem:
            warnings.append(f"config.json: ignoring {key}: {problem}")
            return None
        return value

    rpc = checked("rpc", config.get("rpc")) or {}
    level = env.get("KWARD_LOG_LEVEL")
    if level:
        level = level.upper()
        if level not in LOG_LEVELS:
            raise ConfigError(f"KWARD_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    else:
        level = checked("log_level", config.get("log_level"))
        level = level.upper() if level else None
    return Settings(
        log_level=level,
        rpc_workers=_env_int(env, "KWARD_RPC_WORKERS", 1, 1024) or rpc.get("workers") or DEFAULT_WORKERS,
        max_frame_bytes=_env_int(env, "KWARD_MAX_FRAME_BYTES", 1024, 1 << 34)
        or rpc.get("max_frame_bytes") or DEFAULT_MAX_FRAME_BYTES,
        max_input_chars=_env_int(env, "KWARD_MAX_INPUT_CHARS", 1, 1 << 30)
        or rpc.get("max_input_chars") or DEFAULT_MAX_INPUT_CHARS,
        warnings=tuple(warnings),
    )
