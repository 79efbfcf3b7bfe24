"""Credential stores: the OS keyring when a usable backend exists, else 0600 files.

Two named credentials (the same the original kward keeps):

- `OPENAI_OAUTH`: the OpenAI login, a dict in the auth.json format
  ``{auth_mode: "openai_oauth", tokens: {access_token, refresh_token, id_token, account_id},
  account_id, saved_at, expires_at}`` (`kward.auth.tokens.OpenAITokens` reads and writes it);
- `OPENROUTER_API_KEY`: a string.

`FileStore` keeps the login as the whole of auth.json (`KWARD_AUTH_PATH`), replaced
atomically with mode 0600 in a 0700 directory, and the key as `openrouter_api_key` inside
config.json, written through `ConfigStore.update` (locked and atomic), as the original does.

`KeyringStore` keeps each credential as JSON under service ``kward``, user name = the
credential's name. Every keyring call is wrapped: a failure (a locked keyring, no D-Bus,
anything) switches the store to its `FileStore` fallback for the rest of the process, so a
login never ends up half in one place and half in the other. Reads also look at the files
(credentials saved before the keyring was usable, or by a process that fell back): for the
login the newer `saved_at` wins, for the key the keyring. A keyring write is read back and
then the file copy is removed, so a credential lives in one place.

`select_store` chooses once, the way keyring chooses its backend, and says why
(`StoreChoice.reason`): keyring's `fail` and `null` backends, a chainer with no backends and
any exception from `keyring.get_keyring()` mean "no usable keyring". `keyring` is imported
there, never at module import.

Thread contract: stores may be used from any thread. `KeyringStore` serializes its backend
calls under its own lock (some backends are not thread-safe); `FileStore` relies on atomic
replaces and `ConfigStore`'s locks. Read-modify-write of the login across threads and
processes is the caller's job (`Credentials.openai_lock`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import zipimport
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Protocol, TypeVar, Union

import kward
from kward.config.store import ConfigStore, Paths
from kward.fsutil import atomic_write_bytes, file_problem, read_private
from kward.limits import AUTH_FILE_BYTES

if TYPE_CHECKING:  # pragma: no cover
    from keyring.backend import KeyringBackend

log = logging.getLogger(__name__)
_T = TypeVar("_T")
#: What a store keeps under a credential's name: the OpenAI login as its auth.json record
#: (`OPENAI_OAUTH`), the OpenRouter key as a string (`OPENROUTER_API_KEY`).
Credential = Union[dict[str, object], str]

OPENAI_OAUTH = "openai_oauth"
OPENROUTER_API_KEY = "openrouter_api_key"
CREDENTIALS = (OPENAI_OAUTH, OPENROUTER_API_KEY)
SERVICE = "kward"


def timestamp(value: object) -> float | None:
    """Unix seconds from a number or an ISO-8601 string (`saved_at`, `expires_at`), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _check_name(credential: str) -> None:
    if credential not in CREDENTIALS:
        raise ValueError(f"unknown credential {credential!r}")


class AuthFileState(NamedTuple):
    """auth.json as `auth/status` reports it: its permission bits (None: there is no
    file, or not one kward reads) and why kward does not read it (None: it can)."""

    mode: int | None
    problem: str | None


class CredentialStore(Protocol):
    """get/set/delete of named credentials (see the module docstring). `name` is
    ``keyring`` or ``file`` (where credentials are kept now); `degraded` says why a keyring
    was given up for this process (None: it was not); `describe()` is a sentence for status
    reports. Values never appear in logs or exception messages."""

    @property
    def name(self) -> str: ...

    @property
    def degraded(self) -> str | None: ...

    def get(self, credential: str) -> Credential | None: ...

    def set(self, credential: str, value: Credential) -> None: ...

    def delete(self, credential: str) -> bool:
        """Remove a stored credential; True when there was one."""
        ...

    def describe(self) -> str: ...


class FileStore(CredentialStore):
    """auth.json for the login, config.json for the OpenRouter key."""

    name = "file"
    degraded = None

    def __init__(self, paths: Paths, config: ConfigStore):
        self.paths = paths
        self.config = config

    @property
    def auth_file(self) -> Path:
        return self.paths.auth_file

    def describe(self) -> str:
        return f"files: {self.auth_file} (OpenAI login), {self.config.path} (OpenRouter key), mode 0600"

    def get(self, credential: str) -> Credential | None:
        _check_name(credential)
        if credential == OPENROUTER_API_KEY:
            value = self.config.load().get(OPENROUTER_API_KEY)
            return value if isinstance(value, str) and value.strip() else None
        try:
            raw = read_private(self.auth_file, AUTH_FILE_BYTES).data
        except FileNotFoundError:
            return None
        except OSError as exc:  # a symlink, FIFO, device, another user's or too large: never read
            log.warning("%s; ignoring it (remove it, or log in again to replace it)", file_problem(exc))
            return None
        try:
            data = json.loads(raw.decode("utf-8")) if raw.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            log.warning("%s is not valid JSON; ignoring it (log in again to replace it)", self.auth_file)
            return None
        return data if isinstance(data, dict) else None

    def auth_file_state(self) -> AuthFileState:
        """The mode of auth.json and what makes it unusable (`auth/status`), read now: one
        open and read (`read_private`, which narrows a wide mode), the mode from that
        descriptor; None for a file kward does not read (a link, a FIFO, too large ...)."""
        try:
            return AuthFileState(read_private(self.auth_file, AUTH_FILE_BYTES).mode, None)
        except FileNotFoundError:
            return AuthFileState(None, None)
        except OSError as exc:
            return AuthFileState(None, file_problem(exc))

    def set(self, credential: str, value: Credential) -> None:
        _check_name(credential)
        if credential == OPENROUTER_API_KEY:
            self.config.update({OPENROUTER_API_KEY: value})
            return
        data = (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        atomic_write_bytes(self.auth_file, data)

    def delete(self, credential: str) -> bool:
        _check_name(credential)
        if credential == OPENROUTER_API_KEY:
            if OPENROUTER_API_KEY not in self.config.load():
                return False
            self.config.update({OPENROUTER_API_KEY: None})
            return True
        try:
            os.unlink(self.auth_file)
        except FileNotFoundError:
            return False
        return True


def backend_label(backend: KeyringBackend) -> str:
    """``module.Class`` of a keyring backend; a chainer lists what it chains."""
    from keyring.backends.chainer import ChainerBackend

    cls = type(backend)
    label = f"{cls.__module__}.{cls.__name__}"
    chained = backend.backends if isinstance(backend, ChainerBackend) else None
    if chained:
        label += "(" + ", ".join(f"{type(b).__module__}.{type(b).__name__}" for b in chained) + ")"
    return label


class KeyringStore(CredentialStore):
    """The OS keyring, with a `FileStore` fallback (see the module docstring)."""

    def __init__(self, backend: KeyringBackend, fallback: FileStore):
        self.backend = backend
        self.fallback = fallback
        self.label = backend_label(backend)
        self._lock = threading.Lock()
        self._degraded: str | None = None

    @property
    def name(self) -> str:
        return "file" if self._degraded else "keyring"

    @property
    def degraded(self) -> str | None:
        """Why the keyring was given up for this process, or None while it works."""
        return self._degraded

    def describe(self) -> str:
        if self._degraded:
            return f"{self.fallback.describe()} (the OS keyring {self.label} failed: {self._degraded})"
        return f"OS keyring ({self.label}), service {SERVICE!r}"

    def _call(self, what: str, fn: Callable[..., _T], *args: str) -> tuple[bool, _T | None]:
        """(True, result) or (False, None) once the keyring has failed (now or before)."""
        with self._lock:
            if self._degraded:
                return False, None
            try:
                return True, fn(*args)
            except Exception as exc:  # KeyringLocked, InitError, NoKeyringError, D-Bus errors, ...
                self._degraded = f"{what} raised {type(exc).__name__}"
                log.warning("The OS keyring failed (%s); kward keeps credentials in 0600 files "
                            "for the rest of this process", self._degraded)
                return False, None

    @staticmethod
    def _decode(raw: str | None, credential: str) -> Credential | None:
        if not isinstance(raw, str) or not raw:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw  # a key stored by hand as plain text
        if credential == OPENAI_OAUTH:
            return value if isinstance(value, dict) else None
        return value if isinstance(value, str) and value.strip() else None

    def get(self, credential: str) -> Credential | None:
        _check_name(credential)
        ok, raw = self._call("get_password", self.backend.get_password, SERVICE, credential)
        kept = self._decode(raw, credential) if ok else None
        on_file = self.fallback.get(credential)
        if kept is None or on_file is None:
            return kept if kept is not None else on_file
        if isinstance(kept, dict) and isinstance(on_file, dict):  # the login: the newer copy wins
            newer = (timestamp(on_file.get("saved_at")) or 0.0) > (timestamp(kept.get("saved_at")) or 0.0)
            return on_file if newer else kept
        return kept

    def set(self, credential: str, value: Credential) -> None:
        _check_name(credential)
        encoded = json.dumps(value, ensure_ascii=False)
        ok, _ = self._call("set_password", self.backend.set_password, SERVICE, credential, encoded)
        if ok:
            ok, back = self._call("get_password", self.backend.get_password, SERVICE, credential)
            if ok and back != encoded:
                with self._lock:
                    self._degraded = "set_password did not keep the value"
                log.warning("The OS keyring did not keep a credential; kward keeps credentials in 0600 "
                            "files for the rest of this process")
                ok = False
        if ok:
            self.fallback.delete(credential)  # the file copy is older: one place only
        else:
            self.fallback.set(credential, value)

    def delete(self, credential: str) -> bool:
        _check_name(credential)
        removed = False
        ok, raw = self._call("get_password", self.backend.get_password, SERVICE, credential)
        if ok and raw is not None:
            from keyring.errors import PasswordDeleteError

            def delete() -> bool:
                try:
                    self.backend.delete_password(SERVICE, credential)
                except PasswordDeleteError:  # gone meanwhile
                    return False
                return True

            removed = bool(self._call("delete_password", delete)[1])
        return self.fallback.delete(credential) or removed


@dataclass(frozen=True)
class StoreChoice:
    """The store in use and why it was chosen (for `auth/status` and logs)."""

    store: CredentialStore
    reason: str

    @property
    def name(self) -> str:
        return self.store.name


def in_zipapp() -> bool:
    """Whether kward runs from a zipapp (kward.pyz), which carries only the pure-Python
    keyring backends: the Secret Service one needs a compiled library it leaves out. Either
    from the archive itself or from the tree it extracted into its cache, whose root holds
    the marker `.kward-pyz` (tools/zipapp_main.py)."""
    if isinstance(kward.__loader__, zipimport.zipimporter):
        return True
    root = os.path.dirname(os.path.dirname(os.path.abspath(kward.__file__)))
    return os.path.isfile(os.path.join(root, ".kward-pyz"))


def select_store(paths: Paths, config: ConfigStore, *, backend: KeyringBackend | None = None) -> StoreChoice:
    """Choose the keyring when it has a usable backend, else the file store. `backend`
    overrides `keyring.get_keyring()` (tests). Imports `keyring` (its backend detection is slow); call once."""
    files = FileStore(paths, config)
    started = time.monotonic()
    where = "; inside the zipapp only pure-Python keyring backends load" if in_zipapp() else ""
    try:
        import keyring
        from keyring.backends import chainer, fail, null

        chosen = backend if backend is not None else keyring.get_keyring()
    except Exception as exc:  # a broken keyring install or backend: never stop kward
        return StoreChoice(files, f"keyring is unavailable ({type(exc).__name__}{where}); using 0600 files")
    label = backend_label(chosen)
    if isinstance(chosen, (fail.Keyring, null.Keyring)):
        reason = f"no usable keyring backend ({label}{where}); using 0600 files"
    elif isinstance(chosen, chainer.ChainerBackend) and not chosen.backends:
        reason = f"the keyring chainer has no backends ({label}{where}); using 0600 files"
    else:
        choice = StoreChoice(KeyringStore(chosen, files), f"keyring backend {label}")
        log.debug("credential store: %s (%.0f ms)", choice.reason, (time.monotonic() - started) * 1000)
        return choice
    log.debug("credential store: %s", reason)
    return StoreChoice(files, reason)
