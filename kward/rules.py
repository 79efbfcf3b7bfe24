"""One validator per setting, shared by the environment variables and config.json.

A `Rule` turns a value into the one kward uses (or refuses it) and says what is allowed.
`ENV` names every environment variable whose value kward checks, with its rule;
`check_environment` runs them all once when `kward rpc` starts, so a bad value stops the
process at once (exit status 2, one stderr line naming the variable) instead of being
ignored or failing some later request. `setting()` reads one setting the way the
providers do at turn time: the variable when set, else the config key (a bad config value
is a ConfigError naming the key: config.json never stops the server).

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

An empty variable counts as unset, except `KWARD_RETRY_DELAYS=` (no retries).
Pure functions over plain data; any thread; standard library only (imported at start).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kward.errors import ConfigError

PROVIDERS = ("codex", "openrouter", "openai-compatible", "scripted")
PROVIDER_ALIASES = {"openaicompatible": "openai-compatible", "openai-compat": "openai-compatible"}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_RETRY_DELAYS = 20
MAX_RETRY_DELAY_SECONDS = 3600.0


class Invalid(ValueError):
    """A value a rule refuses; the text is "must be <what is allowed>"."""


@dataclass(frozen=True)
class Rule:
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


def _fail() -> Any:
    raise ValueError


def _provider(v: Any) -> str:
    if not isinstance(v, str):
        return _fail()
    key = v.strip().lower().replace("_", "-")
    key = PROVIDER_ALIASES.get(key, key)
    return key if key in PROVIDERS else _fail()


def _log_level(v: Any) -> str:
    return v.upper() if isinstance(v, str) and v.upper() in LOG_LEVELS else _fail()


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


PROVIDER = Rule("one of " + ", ".join(PROVIDERS), _provider)
LOG_LEVEL = Rule("one of " + ", ".join(LOG_LEVELS), _log_level)
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

#: Every environment variable whose value kward checks.
ENV: dict[str, Rule] = {
    "KWARD_PROVIDER": PROVIDER,
    "KWARD_LOG_LEVEL": LOG_LEVEL,
    "KWARD_RPC_WORKERS": WORKERS,
    "KWARD_MAX_FRAME_BYTES": MAX_FRAME_BYTES,
    "KWARD_MAX_INPUT_CHARS": MAX_INPUT_CHARS,
    "KWARD_RETRY_DELAYS": RETRY_DELAYS,
    "KWARD_STREAM_IDLE_TIMEOUT": IDLE_TIMEOUT,
    "KWARD_CODEX_BASE_URL": URL,
    "KWARD_OPENROUTER_BASE_URL": URL,
    "KWARD_OPENAI_COMPAT_BASE_URL": URL,
}


def env_value(env: Mapping[str, str], name: str) -> Any:
    """The checked value of variable `name`, None when unset or empty."""
    raw = env.get(name)
    return None if raw is None else ENV[name].from_env(name, raw)


def check_environment(env: Mapping[str, str] = os.environ) -> None:
    """ConfigError naming the first variable of `ENV` whose value is refused."""
    for name in ENV:
        env_value(env, name)


def setting(config: Mapping[str, Any], env: Mapping[str, str], env_name: str | None, key: str, rule: Rule) -> Any:
    """Variable `env_name` when set, else config `key` checked by `rule`, else None."""
    if env_name:
        value = env_value(env, env_name)
        if value is not None:
            return value
    raw = config.get(key)
    if raw is None:
        return None
    try:
        return rule.normalize(raw)
    except Invalid as exc:
        raise ConfigError(f"Invalid config value for {key}: {exc}, not {shown(raw)}", data={"key": key}) from None
