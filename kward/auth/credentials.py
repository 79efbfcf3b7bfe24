"""Which credentials kward has, where they come from, and the changes a user makes to them.

`Credentials` reports which credentials exist (`status` -> `CredentialStatus`, `providers`
-> `ProviderCards`: sources, names and the store, never a secret), stores an API key
(`login_with_api_key` -> `ApiKeySaved`), removes stored credentials (`logout` ->
`LoggedOut`; environment ones stay and keep being reported), and reads and saves the
OpenAI login for the login flow and `TokenSource`. The RPC face shapes these values into
the `auth/*` results (`kward.rpc.wire.auth`).

Sources: the environment (`OPENAI_ACCESS_TOKEN`, `OPENROUTER_API_KEY`; read per call,
reported as ``environment``, never written anywhere) wins over what is stored (``stored``).
The store is chosen once, on first use (`stores.select_store`: that is when `keyring` is
imported), and reported as `credentialStore` (``keyring`` or ``file``).

Listeners (`add_listener`) are called with the provider id after every login or logout,
outside any lock, on the thread that made the change; the runtime uses this to re-select
the provider and refresh client config. A listener's exception is logged.

Secret watchers (`watch_secrets`) are called with every credential value read from or
written to the store that they have not been given before (a login, a refreshed token, a
key another process stored in the keyring and this one read), on the thread that read or
wrote it; the runtime feeds them to `kward.config.secrets.KnownSecrets`, so tool output and
frames are scrubbed of keyring-stored values too.

Thread contract: any thread. `openai_lock()` serializes read-modify-write of the OpenAI
login across threads (a reentrant lock) and processes (an flock on a sidecar of auth.json,
``.auth.json.lock``); `save_openai` and `logout("openai")` take it themselves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Iterator, Mapping, NamedTuple

from kward.auth.oauth import OAuthSettings, resolve_oauth_settings
from kward.auth.stores import (
    OPENAI_OAUTH,
    OPENROUTER_API_KEY,
    CredentialStore,
    FileStore,
    StoreChoice,
    select_store,
)
from kward.auth.tokens import OpenAITokens
from kward.config.store import ConfigStore, Paths
from kward.errors import InvalidParams
from kward.fsutil import file_lock

log = logging.getLogger(__name__)

OPENAI = "openai"
OPENROUTER = "openrouter"
PROVIDER_IDS = (OPENAI, OPENROUTER)
NAMES = {OPENAI: "OpenAI", OPENROUTER: "OpenRouter"}
MIN_API_KEY_CHARS = 8
MAX_API_KEY_CHARS = 1024
ENVIRONMENT = "environment"
STORED = "stored"


class CredentialStatus(NamedTuple):
    """Where each credential comes from (``environment``, ``stored`` or None: there is
    none) and the store in use: its name (``keyring`` or ``file``), what it holds where,
    and why it was chosen (or why it fell back)."""

    openai_oauth: str | None  # the stored OpenAI login: STORED or None
    openai_access_token: str | None  # OPENAI_ACCESS_TOKEN: ENVIRONMENT or None
    openrouter_api_key: str | None  # ENVIRONMENT wins over STORED
    store: str
    store_detail: str
    store_reason: str
    auth_file_mode: int | None = None  # auth.json's permission bits; None: no such file
    auth_file_problem: str | None = None  # why auth.json is not read (a symlink, a FIFO, too large, ...)


class ProviderCard(NamedTuple):
    """One provider as a UI shows it: `source` as in CredentialStatus, `stored` whether a
    stored credential exists (it can be logged out)."""

    id: str
    name: str
    auth_type: str  # ``oauth`` or ``api_key``
    source: str | None
    stored: bool
    uses_callback_server: bool
    store: str


class ProviderCards(NamedTuple):
    cards: tuple[ProviderCard, ...]
    store: str


class ApiKeySaved(NamedTuple):
    provider_id: str
    store: str
    message: str  # words for people


class LoggedOut(NamedTuple):
    """`removed`: a stored credential was deleted; `in_environment`: the provider's
    environment variable is set and stays in use."""

    provider_id: str
    removed: bool
    in_environment: bool
    message: str


def check_api_key(value: object) -> str:
    """The key to store (surrounding whitespace, e.g. a pasted newline, removed), or
    InvalidParams naming `apiKey`. The message never quotes the key."""
    if not isinstance(value, str):
        raise InvalidParams("Invalid params: 'apiKey' must be a string", data={"param": "apiKey"})
    key = value.strip()
    if not key:
        raise InvalidParams("Invalid params: 'apiKey' must be a non-empty string", data={"param": "apiKey"})
    if not MIN_API_KEY_CHARS <= len(key) <= MAX_API_KEY_CHARS:
        raise InvalidParams(f"Invalid params: 'apiKey' must be {MIN_API_KEY_CHARS} to {MAX_API_KEY_CHARS} "
                            f"characters long", data={"param": "apiKey"})
    if not all(33 <= ord(c) <= 126 for c in key):
        raise InvalidParams("Invalid params: 'apiKey' must be printable ASCII without spaces, tabs or newlines",
                            data={"param": "apiKey"})
    return key


def check_provider_id(value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in allowed:
        raise InvalidParams(f"Invalid params: 'providerId' must be one of {', '.join(allowed)}",
                            data={"param": "providerId"})
    return value.strip().lower()


class _LoginLock:
    """A reentrant thread lock plus an flock taken by the outermost holder only (a second
    flock on the same file from this process would wait for itself)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()
        self._depth = 0
        self._held: contextlib.ExitStack | None = None

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                stack = contextlib.ExitStack()
                stack.enter_context(file_lock(self.path))
                self._held = stack
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._held is not None:
                    held, self._held = self._held, None
                    held.close()


class Credentials:
    """See the module docstring."""

    def __init__(self, paths: Paths, config: ConfigStore, env: Mapping[str, str] = os.environ, *,
                 select: Callable[[Paths, ConfigStore], StoreChoice] = select_store):
        self.paths = paths
        self.config = config
        self.env = env
        self._select = select
        self._choice: StoreChoice | None = None
        self._choice_lock = threading.Lock()
        self._login_lock = _LoginLock(paths.auth_file.with_name(f".{paths.auth_file.name}.lock"))
        self._listeners: list[Callable[[str], None]] = []
        self._watchers: list[Callable[[list[str]], None]] = []
        self._seen: set[str] = set()
        self._seen_lock = threading.Lock()

    # --- the store ----------------------------------------------------------------------

    @property
    def choice(self) -> StoreChoice:
        """The store in use and why; chosen on first use, then kept for the process."""
        with self._choice_lock:
            if self._choice is None:
                self._choice = self._select(self.paths, self.config)
                log.info("credential store: %s", self._choice.reason)
            return self._choice

    @property
    def store(self) -> CredentialStore:
        return self.choice.store

    def oauth_settings(self) -> OAuthSettings:
        """The OpenAI OAuth settings from config.json and the environment, read now."""
        return resolve_oauth_settings(self.config.load(), self.env)

    def add_listener(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def watch_secrets(self, watcher: Callable[[list[str]], None]) -> None:
        self._watchers.append(watcher)

    def _learn(self, values: list[str]) -> None:
        """Pass values not seen before to the secret watchers."""
        if not self._watchers:
            return
        with self._seen_lock:
            fresh = [v for v in values if v and v not in self._seen]
            self._seen.update(fresh)
        if fresh:
            for watcher in list(self._watchers):
                try:
                    watcher(fresh)
                except Exception:
                    log.exception("a secret watcher failed")

    def changed(self, provider_id: str) -> None:
        """Tell the listeners that `provider_id`'s credentials changed."""
        for listener in list(self._listeners):
            try:
                listener(provider_id)
            except Exception:
                log.exception("a credentials listener failed")

    # --- OpenAI -------------------------------------------------------------------------

    def openai_env_token(self) -> str | None:
        token = self.env.get("OPENAI_ACCESS_TOKEN", "")
        return token.strip() or None if isinstance(token, str) else None

    def openai_lock(self) -> contextlib.AbstractContextManager[None]:
        return self._login_lock.hold()

    def stored_openai(self) -> OpenAITokens | None:
        tokens = OpenAITokens.from_record(self.store.get(OPENAI_OAUTH))
        if tokens is not None:
            self._learn(tokens.secret_values())
        return tokens

    def save_openai(self, tokens: OpenAITokens, *, notify: bool = True) -> None:
        """Store the login at once (atomically); then tell the listeners."""
        self._learn(tokens.secret_values())
        with self.openai_lock():
            self.store.set(OPENAI_OAUTH, tokens.to_record())
        if notify:
            self.changed(OPENAI)

    # --- OpenRouter ---------------------------------------------------------------------

    def openrouter_key(self) -> tuple[str, str] | None:
        """(key, source) with source ``environment`` or ``stored``, or None."""
        env = self.env.get("OPENROUTER_API_KEY", "")
        if isinstance(env, str) and env.strip():
            return env.strip(), ENVIRONMENT
        stored = self.stored_openrouter_key()
        return (stored, STORED) if stored else None

    def stored_openrouter_key(self) -> str | None:
        stored = self.store.get(OPENROUTER_API_KEY)
        if not isinstance(stored, str) or not stored.strip():
            return None
        self._learn([stored.strip()])
        return stored.strip()

    # --- what the methods return --------------------------------------------------------

    def _where(self) -> str:
        return "in the OS keyring" if self.store.name == "keyring" else "in a 0600 file"

    def login_with_api_key(self, provider_id: object, api_key: object) -> ApiKeySaved:
        """Store an API key (`auth/loginWithApiKey`). InvalidParams for a provider without
        API-key login or a malformed key; nothing is stored then."""
        provider = check_provider_id(provider_id, (OPENROUTER,))
        key = check_api_key(api_key)
        self._learn([key])
        self.store.set(OPENROUTER_API_KEY, key)
        message = f"Saved the OpenRouter API key {self._where()}."
        if self.env.get("OPENROUTER_API_KEY", "").strip():
            message += " OPENROUTER_API_KEY is set in the environment and takes precedence while it is."
        self.changed(provider)
        return ApiKeySaved(provider, self.store.name, message)

    def logout(self, provider_id: object) -> LoggedOut:
        """Remove stored credentials only (`auth/logoutProvider`); environment ones stay."""
        provider = check_provider_id(provider_id, PROVIDER_IDS)
        if provider == OPENAI:
            with self.openai_lock():
                removed = self.store.delete(OPENAI_OAUTH)
            variable, still = "OPENAI_ACCESS_TOKEN", self.openai_env_token() is not None
        else:
            removed = self.store.delete(OPENROUTER_API_KEY)
            variable, still = "OPENROUTER_API_KEY", bool(self.env.get("OPENROUTER_API_KEY", "").strip())
        what = "login" if provider == OPENAI else "API key"
        message = f"Removed the stored {NAMES[provider]} {what}." if removed else \
            f"No stored {NAMES[provider]} {what} to remove."
        if still:
            message += f" {variable} is still set in the environment and stays in use."
        if removed:
            self.changed(provider)
        return LoggedOut(provider, removed, still, message)

    def _facts(self) -> dict[str, bool]:
        """Which credentials exist, by provider and source (one read of each)."""
        return {"openai_env": self.openai_env_token() is not None,
                "openai_stored": self.stored_openai() is not None,
                "openrouter_env": bool(self.env.get("OPENROUTER_API_KEY", "").strip()),
                "openrouter_stored": self.stored_openrouter_key() is not None}

    @staticmethod
    def _source(env: bool, stored: bool) -> str | None:
        return ENVIRONMENT if env else STORED if stored else None

    def status(self) -> CredentialStatus:
        """Sources and the store (`auth/status`); never a secret."""
        f = self._facts()
        choice = self.choice
        degraded = choice.store.degraded  # a keyring that failed while in use
        reason = f"the OS keyring failed ({degraded}); using 0600 files for the rest of this process" \
            if degraded else choice.reason
        auth_file = FileStore(self.paths, self.config).auth_file_state()  # whichever store is in use
        return CredentialStatus(self._source(False, f["openai_stored"]), self._source(f["openai_env"], False),
                                self._source(f["openrouter_env"], f["openrouter_stored"]), choice.name,
                                choice.store.describe(), reason, auth_file.mode, auth_file.problem)

    def providers(self) -> ProviderCards:
        """The provider cards a UI shows (`auth/providers`, docs/protocol.md)."""
        f = self._facts()
        store = self.store.name

        def card(provider: str, auth_type: str, callback: bool) -> ProviderCard:
            env, stored = f[provider + "_env"], f[provider + "_stored"]
            return ProviderCard(provider, NAMES[provider], auth_type, self._source(env, stored), stored, callback,
                                store)

        return ProviderCards((card(OPENAI, "oauth", True), card(OPENROUTER, "api_key", False)), store)

    def secret_values(self) -> list[str]:
        """Every stored secret value (for the scrub of tool output and logs)."""
        values: list[str] = []
        tokens = self.stored_openai()
        if tokens is not None:
            values.extend(tokens.secret_values())
        key = self.stored_openrouter_key()
        if key:
            values.append(key)
        return values
