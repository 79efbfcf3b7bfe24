"""The credentials kward holds, and the scrub that keeps their values out of the conversation.

Known secrets are the credential values this process could use (docs/protocol.md,
"Redaction"):

- environment: `OPENAI_ACCESS_TOKEN`, `OPENROUTER_API_KEY` and any `KWARD_*` variable named
  like a secret (`_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`, `_CREDENTIALS`), the variables a
  child process never inherits (`kward.tools.process.child_environment`);
- config.json: every string under a secret-looking key at any depth (`openrouter_api_key`,
  `openai_compat_api_key`, ...; `kward.redact.is_secret_key`), and in other strings the
  fragments the redaction patterns find that look like tokens themselves (`token_shaped`);
- the stored login (auth.json): every string under a secret-looking key (access, refresh
  and id tokens);
- whatever the credential store hands over (`learn`: the runtime passes every value the
  `AuthService` reads or writes, OS keyring included) and what a loader returns
  (`add_loader`: run at every `scrub_output`, so a tool cannot print a keyring-stored
  value this process never read).

Values are stripped; those shorter than `MIN_SECRET_CHARS` are ignored (a short value would
replace ordinary words). A value once known stays known for the life of the process: an old
key may still sit in a file or in the scrollback of a command.

- `KnownSecrets.scrub_output(text)` is for tool output, before it reaches the model, the
  session file, the client or an export: every known value and every JWT-shaped token
  (three base64url segments, the first starting `eyJ`) becomes ``[REDACTED]``. It checks the
  sources first (two stats; a tool call is rare next to streamed events).
- `KnownSecrets.snapshot()` is for the hot path (every outgoing frame): the current
  immutable `Snapshot`, re-checked at most every `ttl` seconds. `Snapshot.scrub` replaces
  known values only; conversation content is otherwise left exactly as it is.

Thread contract: any thread. `_lock` (reentrant, since the log formatter uses it too)
serialises refreshes (stats and file reads); readers take the current `Snapshot` (one
attribute read) without locking.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple

from kward.config.store import ConfigStore
from kward.credential_env import is_credential_variable
from kward.errors import ConfigError, FilesystemError
from kward.fsutil import read_private
from kward.limits import AUTH_FILE_BYTES
from kward.redact import REDACTED, is_secret_key, masks, secret_fragments

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

log = logging.getLogger(__name__)

MIN_SECRET_CHARS = 8
MIN_FRAGMENT_CHARS = 16  # a secret-looking fragment of a string under another key
TTL_SECONDS = 1.0

def token_shaped(fragment: str) -> bool:
    """Whether a fragment the redaction patterns found looks like a credential itself: a
    whole ``sk-...`` key or JWT, or at least `MIN_FRAGMENT_CHARS` characters without
    spaces holding letters and digits (not a word of prose such as "authentication")."""
    m = masks()
    if m.sk_key.fullmatch(fragment) or m.jwt.fullmatch(fragment):
        return True
    return (len(fragment) >= MIN_FRAGMENT_CHARS and not any(c.isspace() for c in fragment)
            and any(c.isalpha() for c in fragment) and any(c.isdigit() for c in fragment))


def secret_strings(value: Any, secret: bool = False, _depth: int = 0) -> Iterable[str]:
    """Every string of a JSON-like value that sits under a secret-looking key, and in every
    other string what the redaction patterns take for a secret (`redact.secret_fragments`:
    an ``sk-...`` key under a key that says nothing, a ``Bearer`` header in a list) when it
    is `token_shaped`: prose that merely mentions a password or a bearer teaches nothing."""
    if _depth > 64:  # a hostile file nested deeper holds nothing kward would use
        return
    if isinstance(value, str):
        if secret:
            yield value
        else:
            yield from (f for f in secret_fragments(value) if token_shaped(f))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from secret_strings(v, secret or (isinstance(k, str) and is_secret_key(k)), _depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from secret_strings(v, secret, _depth + 1)


def _needles(value: str) -> set[bytes]:
    """How `value` appears inside an encoded JSON string (UTF-8 and ASCII-escaped forms)."""
    return {json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8"),
            json.dumps(value)[1:-1].encode("ascii")}


class Snapshot(NamedTuple):
    """The known secret values at one moment (longest first) and their JSON encodings."""

    values: tuple[str, ...] = ()
    needles: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> "Snapshot":
        ordered = tuple(sorted(set(values), key=lambda v: (-len(v), v)))
        return cls(ordered, tuple(sorted({n for v in ordered for n in _needles(v)}, key=len, reverse=True)))

    def scrub(self, text: str) -> str:
        """`text` with every known value replaced by ``[REDACTED]``."""
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def found_in(self, data: bytes) -> bool:
        """Whether encoded JSON `data` may hold a known value (cheap; no false negatives)."""
        for needle in self.needles:
            if needle in data:
                return True
        return False

    def scrub_value(self, value: Any) -> Any:
        """A copy of a JSON-like value with `scrub` applied to every string, keys included."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(k) if isinstance(k, str) else k: self.scrub_value(v) for k, v in value.items()}
        if isinstance(value, list) or isinstance(value, tuple):
            return [self.scrub_value(v) for v in value]
        return value


def _stat_key(path: str | Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class KnownSecrets:
    """The credential values of one process (see the module docstring)."""

    def __init__(self, env: Mapping[str, str], config: ConfigStore, auth_file: str | Path, *,
                 ttl: float = TTL_SECONDS):
        self._env = env
        self._config = config
        self._auth_file = os.fspath(auth_file)
        self._ttl = ttl
        self._lock = threading.RLock()  # reentrant: a log record written during a refresh refreshes too
        self._known: set[str] = set()
        self._config_key: tuple[int, int, int] | None = None
        self._auth_key: tuple[int, int, int] | None = None
        self._checked = float("-inf")
        self._snapshot = Snapshot()
        self._loaders: list[Callable[[], Iterable[str]]] = []

    def snapshot(self) -> Snapshot:
        """The current secrets; the sources are checked when `ttl` seconds have passed."""
        if time.monotonic() - self._checked >= self._ttl:
            self.refresh()
        return self._snapshot

    def learn(self, values: Iterable[str]) -> None:
        """Add credential values now (any thread; the caller may hold its own locks)."""
        with self._lock:
            self._add({v for v in values if isinstance(v, str)})

    def add_loader(self, loader: Callable[[], Iterable[str]]) -> None:
        """Values `loader()` returns are learned at every `scrub_output`, which calls it
        outside any lock of this object (a loader may be slow, e.g. the OS keyring, and
        may log). Its exceptions are ignored."""
        with self._lock:
            self._loaders.append(loader)

    def _add(self, found: set[str]) -> None:
        fresh = {v.strip() for v in found} - self._known
        fresh = {v for v in fresh if len(v) >= MIN_SECRET_CHARS}
        if fresh:
            self._known |= fresh
            self._snapshot = Snapshot.of(self._known)

    def _run_loaders(self) -> None:
        for loader in list(self._loaders):
            try:
                self.learn(loader())
            except Exception:  # an unusable store holds nothing this process can use
                pass

    def refresh(self) -> Snapshot:
        """Check every source now: the environment, and a stat of config.json and
        auth.json (a file is read only when its stat changed)."""
        with self._lock:
            found = {v for k, v in self._env.items() if is_credential_variable(k) and isinstance(v, str)}
            key = _stat_key(self._config.paths.config_file)
            if key != self._config_key:
                self._config_key = key
                try:
                    found.update(secret_strings(self._config.load()))
                except (ConfigError, FilesystemError, OSError, RecursionError):
                    pass  # an unreadable config holds no key kward can use; earlier values stay known
            key = _stat_key(self._auth_file)
            if key != self._auth_key:
                self._auth_key = key
                found.update(self._read_auth())
            self._add(found)
            self._checked = time.monotonic()
            return self._snapshot

    def _read_auth(self) -> list[str]:
        try:
            data = json.loads(read_private(self._auth_file, AUTH_FILE_BYTES).data.decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return []
        return list(secret_strings(data))

    def scrub_output(self, text: str) -> str:
        """Tool output with every known value and every JWT-shaped token replaced."""
        if self._loaders:
            self._run_loaders()
        text = self.refresh().scrub(text)
        if "eyJ" in text:
            text = masks().jwt.sub(REDACTED, text)
        return text
