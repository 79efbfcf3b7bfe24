"""Helpers for the auth tests: an in-memory keyring backend (set through keyring's own API
and restored afterwards), a browser stand-in, and building an `AuthService` on temp dirs."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Iterator

import requests
from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordDeleteError

from kward.auth.service import AuthService
from kward.config.store import ConfigStore, resolve_paths


class MemoryKeyring(KeyringBackend):
    """A keyring that keeps passwords in a dict. `fail_on` names operations that raise
    KeyringLocked (as a locked desktop keyring does)."""

    priority = 1

    def __init__(self, fail_on: tuple[str, ...] = ()):
        super().__init__()
        self.data: dict[tuple[str, str], str] = {}
        self.fail_on = set(fail_on)
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def _maybe_fail(self, op: str) -> None:
        self.calls.append(op)
        if op in self.fail_on:
            raise KeyringLocked("the test keyring is locked")

    def get_password(self, service: str, username: str) -> str | None:
        self._maybe_fail("get")
        with self._lock:
            return self.data.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self._maybe_fail("set")
        with self._lock:
            self.data[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self._maybe_fail("delete")
        with self._lock:
            if self.data.pop((service, username), None) is None:
                raise PasswordDeleteError("not found")


@contextlib.contextmanager
def use_keyring(backend: Any) -> Iterator[Any]:
    """Make `backend` keyring's active backend (keyring.set_keyring), restoring the old one."""
    import keyring

    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def make_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def make_auth(env: dict[str, str] | None = None, **kw: Any) -> AuthService:
    env = make_env() if env is None else env
    paths = resolve_paths(env)
    return AuthService(paths, ConfigStore(paths), env, **kw)


def browser() -> requests.Session:
    """A session that ignores proxy settings (everything here is loopback)."""
    s = requests.Session()
    s.trust_env = False
    return s


def authorize(url: str) -> str:
    """GET the authorization URL without following the redirect; the Location (the
    callback URL the browser would open)."""
    with browser() as s:
        resp = s.get(url, allow_redirects=False, timeout=5)
    assert resp.status_code == 302, resp.text
    return resp.headers["Location"]


def open_in_browser(url: str) -> requests.Response:
    """What a browser does: GET the authorization URL and follow its redirect to the callback."""
    with browser() as s:
        return s.get(url, allow_redirects=True, timeout=10)
