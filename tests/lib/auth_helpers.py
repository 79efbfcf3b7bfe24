"""Helpers for the auth tests: making a keyring backend (lib/keyring_backend.py's
MemoryKeyring) keyring's active one and restoring the old one, a browser stand-in, and
building an `AuthService` on temp dirs."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

import requests

from kward.auth.service import AuthService
from kward.config.store import ConfigStore, resolve_paths


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
