"""Keyring backends for tests that run kward in a subprocess, selected through keyring's own
environment variable: ``PYTHON_KEYRING_BACKEND=lib.keyring_backend.MemoryKeyring`` with the
tests directory on PYTHONPATH (`keyring_env`). Never the real keyring.

`MemoryKeyring` keeps passwords in memory and, when `TEST_KEYRING_FILE` names a file, in
that JSON file too (read at every call, replaced atomically), so that several processes
and the test itself see one keyring. `LockedKeyring` reads like it but refuses every write
with KeyringLocked, as a locked desktop keyring does.
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
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()
        self._file = os.environ.get("TEST_KEYRING_FILE")

    def _load(self) -> dict[str, str]:
        if self._file and os.path.exists(self._file):
            with open(self._file, encoding="utf-8") as f:
                return json.load(f)
        return dict(self._data)

    def _save(self, data: dict[str, str]) -> None:
        self._data = data
        if self._file:
            tmp = f"{self._file}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self._file)

    def get_password(self, service: str, username: str) -> str | None:
        with self._lock:
            return self._load().get(f"{service}:{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        with self._lock:
            data = self._load()
            data[f"{service}:{username}"] = password
            self._save(data)

    def delete_password(self, service: str, username: str) -> None:
        with self._lock:
            data = self._load()
            if data.pop(f"{service}:{username}", None) is None:
                raise PasswordDeleteError("not found")
            self._save(data)


class LockedKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise KeyringLocked("the test keyring is locked")
