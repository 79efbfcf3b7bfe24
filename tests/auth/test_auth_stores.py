"""Credential stores: the 0600 file store, the keyring store (an in-memory backend set
through keyring's API, never the real keyring), the fallback, and the choice between them."""

import json
import os
import stat
import time

import keyring
import pytest
from keyring.backends import chainer, fail, null

from kward.auth.stores import (OPENAI_OAUTH, OPENROUTER_API_KEY, FileStore, KeyringStore, select_store,
                               timestamp)
from kward.config.store import ConfigStore, resolve_paths
from lib.auth_helpers import use_keyring
from lib.keyring_backend import MemoryKeyring

RECORD = {"auth_mode": "openai_oauth", "tokens": {"access_token": "at-secret-0001", "refresh_token": "rt-secret-0001",
                                                  "id_token": None, "account_id": "acct"},
          "account_id": "acct", "saved_at": "2026-01-01T00:00:00.000Z", "expires_at": 1900000000}


def setup(env=None):
    paths = resolve_paths(env or os.environ)
    config = ConfigStore(paths)
    return paths, config


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_conftest_forces_the_fail_backend():
    assert isinstance(keyring.get_keyring(), fail.Keyring)


def test_file_store_writes_0600_files_in_a_0700_directory(isolated_home):
    paths, config = setup()
    config.update({"model": "m"})
    store = FileStore(paths, config)
    store.set(OPENAI_OAUTH, RECORD)
    store.set(OPENROUTER_API_KEY, "sk-or-v1-secret")
    assert json.loads(paths.auth_file.read_text()) == RECORD
    assert config.load() == {"model": "m", "openrouter_api_key": "sk-or-v1-secret"}  # other keys kept
    assert mode(paths.auth_file) == 0o600 and mode(paths.config_file) == 0o600
    assert mode(paths.config_dir) == 0o700
    assert store.get(OPENAI_OAUTH) == RECORD and store.get(OPENROUTER_API_KEY) == "sk-or-v1-secret"
    assert [p.name for p in paths.config_dir.iterdir() if p.name.endswith(".tmp")] == []  # atomic replace
    assert store.delete(OPENAI_OAUTH) is True and store.delete(OPENAI_OAUTH) is False
    assert store.delete(OPENROUTER_API_KEY) is True and store.delete(OPENROUTER_API_KEY) is False
    assert store.get(OPENAI_OAUTH) is None and store.get(OPENROUTER_API_KEY) is None
    assert config.load() == {"model": "m"}


def test_file_store_honours_kward_auth_path(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere" / "login.json"
    monkeypatch.setenv("KWARD_AUTH_PATH", str(target))
    paths, config = setup()
    FileStore(paths, config).set(OPENAI_OAUTH, RECORD)
    assert json.loads(target.read_text()) == RECORD and mode(target) == 0o600 and mode(target.parent) == 0o700
    assert not (paths.config_dir / "auth.json").exists()


def test_file_store_ignores_a_broken_auth_file(isolated_home):
    paths, config = setup()
    paths.config_dir.mkdir(mode=0o700)
    paths.auth_file.write_text("{not json")
    assert FileStore(paths, config).get(OPENAI_OAUTH) is None
    paths.auth_file.write_text("[1, 2]")
    assert FileStore(paths, config).get(OPENAI_OAUTH) is None


def test_the_auth_file_state_comes_from_the_one_open(isolated_home, monkeypatch):
    paths, config = setup()
    store = FileStore(paths, config)
    store.set(OPENAI_OAUTH, RECORD)
    real_open = os.open

    def open_then_remove(path, *args, **kwargs):  # the file goes away once it is open
        fd = real_open(path, *args, **kwargs)
        if os.fspath(path) == os.fspath(paths.auth_file):
            os.unlink(path)
        return fd

    monkeypatch.setattr(os, "open", open_then_remove)
    state = store.auth_file_state()
    assert (state.mode, state.problem) == (0o600, None)
    assert not paths.auth_file.exists()


def test_unknown_credential_names_are_refused(isolated_home):
    with pytest.raises(ValueError):
        FileStore(*setup()).get("github")


def test_chooser_uses_files_without_a_usable_keyring(isolated_home):
    paths, config = setup()
    choice = select_store(paths, config)  # conftest: the fail backend
    assert choice.name == "file" and isinstance(choice.store, FileStore)
    assert "keyring.backends.fail.Keyring" in choice.reason
    assert select_store(paths, config, backend=null.Keyring()).name == "file"

    class EmptyChainer(chainer.ChainerBackend):
        backends = []

    choice = select_store(paths, config, backend=EmptyChainer())
    assert choice.name == "file" and "chainer" in choice.reason


def test_chooser_survives_get_keyring_raising(isolated_home, monkeypatch):
    def broken():
        raise RuntimeError("no D-Bus")

    monkeypatch.setattr(keyring, "get_keyring", broken)
    choice = select_store(*setup())
    assert choice.name == "file" and "RuntimeError" in choice.reason


def test_keyring_store_keeps_credentials_in_the_keyring_only(isolated_home):
    paths, config = setup()
    with use_keyring(MemoryKeyring()) as mem:
        choice = select_store(paths, config)
        assert choice.name == "keyring" and isinstance(choice.store, KeyringStore)
        assert "MemoryKeyring" in choice.reason and "MemoryKeyring" in choice.store.describe()
        store = choice.store
        store.set(OPENAI_OAUTH, RECORD)
        store.set(OPENROUTER_API_KEY, "sk-or-v1-secret")
        assert json.loads(mem.data[("kward", "openai_oauth")]) == RECORD
        assert json.loads(mem.data[("kward", "openrouter_api_key")]) == "sk-or-v1-secret"
        assert not paths.auth_file.exists() and "openrouter_api_key" not in config.load()
        assert store.get(OPENAI_OAUTH) == RECORD and store.get(OPENROUTER_API_KEY) == "sk-or-v1-secret"
        assert store.delete(OPENAI_OAUTH) is True and store.delete(OPENAI_OAUTH) is False
        assert store.get(OPENAI_OAUTH) is None and ("kward", "openai_oauth") not in mem.data
    assert isinstance(keyring.get_keyring(), fail.Keyring)  # restored


def test_keyring_store_reads_and_then_replaces_a_file_copy(isolated_home):
    paths, config = setup()
    files = FileStore(paths, config)
    files.set(OPENAI_OAUTH, RECORD)  # saved before the keyring was usable
    files.set(OPENROUTER_API_KEY, "sk-or-v1-old")
    store = KeyringStore(MemoryKeyring(), files)
    assert store.get(OPENAI_OAUTH) == RECORD and store.get(OPENROUTER_API_KEY) == "sk-or-v1-old"
    newer = dict(RECORD, saved_at="2026-02-01T00:00:00.000Z")
    store.set(OPENAI_OAUTH, newer)
    store.set(OPENROUTER_API_KEY, "sk-or-v1-new")
    assert not paths.auth_file.exists() and "openrouter_api_key" not in config.load()  # one place only
    assert store.get(OPENAI_OAUTH) == newer and store.get(OPENROUTER_API_KEY) == "sk-or-v1-new"


def test_the_newer_login_wins_between_keyring_and_file(isolated_home):
    paths, config = setup()
    files = FileStore(paths, config)
    store = KeyringStore(MemoryKeyring(), files)
    store.set(OPENAI_OAUTH, RECORD)
    newer = dict(RECORD, saved_at="2026-03-01T00:00:00.000Z", account_id="from-file")
    files.set(OPENAI_OAUTH, newer)  # a process that had fallen back to the file wrote later
    assert store.get(OPENAI_OAUTH) == newer
    files.set(OPENAI_OAUTH, dict(RECORD, saved_at="2025-01-01T00:00:00.000Z"))
    assert store.get(OPENAI_OAUTH) == RECORD


@pytest.mark.parametrize("failing", ["set", "get"])
def test_a_failing_keyring_falls_back_to_files_for_the_process(isolated_home, failing):
    paths, config = setup()
    mem = MemoryKeyring(fail_on=(failing,))
    store = KeyringStore(mem, FileStore(paths, config))
    assert store.name == "keyring"
    store.set(OPENAI_OAUTH, RECORD)
    assert store.name == "file" and "KeyringLocked" in (store.degraded or "")
    assert "KeyringLocked" in store.describe() and str(paths.auth_file) in store.describe()
    assert json.loads(paths.auth_file.read_text()) == RECORD and mode(paths.auth_file) == 0o600
    if failing == "set":
        assert mem.data == {}
    calls = len(mem.calls)
    assert store.get(OPENAI_OAUTH) == RECORD and store.delete(OPENAI_OAUTH) is True
    assert len(mem.calls) == calls  # once failed, the keyring is left alone
    assert not paths.auth_file.exists()


def test_a_keyring_that_drops_values_is_detected(isolated_home):
    class Forgetful(MemoryKeyring):
        def set_password(self, service, username, password):
            self.calls.append("set")

    paths, config = setup()
    store = KeyringStore(Forgetful(), FileStore(paths, config))
    store.set(OPENROUTER_API_KEY, "sk-or-v1-kept")
    assert store.name == "file" and config.load()["openrouter_api_key"] == "sk-or-v1-kept"


def test_timestamps_in_both_forms():
    assert timestamp(1700000000) == 1700000000.0
    assert timestamp("2023-11-14T22:13:20Z") == 1700000000.0
    assert timestamp("2023-11-14T22:13:20.000+00:00") == 1700000000.0
    assert timestamp("soon") is None and timestamp(True) is None and timestamp(None) is None
    assert abs(timestamp(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())) - time.time()) < 5
