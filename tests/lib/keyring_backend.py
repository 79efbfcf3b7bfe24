"""Keyring backends for tests that run kward in a subprocess, selected through keyring's own
environment variable: ``PYTHON_KEYRING_BACKEND=lib.keyring_backend.MemoryKeyring`` with the
tests directory on PYTHONPATH (`keyring_env`). Never the real keyring.

`MemoryKeyring` keeps passwords in memory and, when `TEST_KEYRING_FILE` names a file, in
that JSON file too (read at every call, replaced atomically), so that several processes
and the test itself see one keyring. `LockedKeyring` reads like it but refuses every write
with KeyringLocked, as a locked desktop keyring does. In-process tests use MemoryKeyring
directly, set through keyring's API (`lib.auth_helpers.use_keyring`).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordDeleteError

from lib.paths import TESTS

BACKEND = "lib.keyring_backend.MemoryKeyring"


def keyring_env(env: dict[str, str], file: Path, backend: str = BACKEND) -> dict[str, str]:
    """`env` with the test keyring selected and kept in `file`."""
    return {**env, "PYTHON_KEYRING_BACKEND": backend, "TEST_KEYRING_FILE": str(file),
            "PYTHONPATH": os.pathsep.join([env.get("PYTHONPATH", ""), str(TESTS)]).strip(os.pathsep)}


def read_keyring(file: Path) -> dict[str, Any]:
    """What the test keyring holds: {"service:user": decoded value}."""
    if not file.exists():
        return {}
    return {k: json.loads(v) for k, v in json.loads(file.read_text()).items()}


class MemoryKeyring(KeyringBackend):
    """Passwords in a dict keyed (service, username) (`data`), and, when
    `TEST_KEYRING_FILE` names a file, in that JSON file too (read at every call, replaced
    atomically). `fail_on` names operations ("get", "set", "delete") that raise
    KeyringLocked, as a locked desktop keyring does; `calls` lists the operations asked."""

    priority = 1  # type: ignore[assignment]

    def __init__(self, fail_on: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.data: dict[tuple[str, str], str] = {}
        self.fail_on = set(fail_on)
        self.calls: list[str] = []
        self._lock = threading.Lock()
        self._file = os.environ.get("TEST_KEYRING_FILE")

    def _maybe_fail(self, op: str) -> None:
        self.calls.append(op)
        if op in self.fail_on:
            raise KeyringLocked("the test keyring is locked")

    def _load(self) -> dict[tuple[str, str], str]:
        if self._file and os.path.exists(self._file):
            with open(self._file, encoding="utf-8") as f:
                return {tuple(k.split(":", 1)): v for k, v in json.load(f).items()}  # type: ignore[misc]
        return dict(self.data)

    def _save(self, data: dict[tuple[str, str], str]) -> None:
        self.data = data
        if self._file:
            tmp = f"{self._file}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({f"{service}:{user}": v for (service, user), v in data.items()}, f)
            os.replace(tmp, self._file)

    def get_password(self, service: str, username: str) -> str | None:
        self._maybe_fail("get")
        with self._lock:
            return self._load().get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self._maybe_fail("set")
        with self._lock:
            data = self._load()
            data[(service, username)] = password
            self._save(data)

    def delete_password(self, service: str, username: str) -> None:
        self._maybe_fail("delete")
        with self._lock:
            data = self._load()
            if data.pop((service, username), None) is None:
                raise PasswordDeleteError("not found")
            self._save(data)


class LockedKeyring(MemoryKeyring):
    """Reads like MemoryKeyring; refuses every write."""

    def __init__(self) -> None:
        super().__init__(fail_on=("set",))
