"""Config paths, atomic 0600 writes, validation, settings."""

import json
import stat
import subprocess
import sys
import threading

import pytest

from kward.config.store import ConfigStore, resolve_paths
from kward.config.settings import resolve_settings
from kward.errors import ConfigError, InvalidParams


def test_paths_default_and_overrides(tmp_path):
    p = resolve_paths({"HOME": str(tmp_path)})
    assert p.config_dir == tmp_path / ".kward" and p.config_file == tmp_path / ".kward" / "config.json"
    assert p.auth_file == tmp_path / ".kward" / "auth.json" and p.sessions_dir == tmp_path / ".kward" / "sessions"
    p = resolve_paths({"HOME": str(tmp_path), "KWARD_CONFIG_PATH": str(tmp_path / "c" / "my.json"),
                       "KWARD_AUTH_PATH": str(tmp_path / "a.json")})
    assert p.config_dir == tmp_path / "c" and p.config_file.name == "my.json" and p.auth_file == tmp_path / "a.json"


def test_missing_config_is_empty_and_creates_nothing(tmp_path):
    store = ConfigStore(resolve_paths({"HOME": str(tmp_path)}))
    assert store.load() == {}
    assert not (tmp_path / ".kward").exists()



def test_a_wide_mode_is_narrowed_when_read_unless_the_store_only_looks(tmp_path, caplog):
    paths = resolve_paths({"KWARD_CONFIG_PATH": str(tmp_path / "config.json")})
    paths.config_file.write_text('{"a": 1}')
    paths.config_file.chmod(0o644)
    assert ConfigStore(paths, narrow_mode=False).load() == {"a": 1}
    assert stat.S_IMODE(paths.config_file.stat().st_mode) == 0o644 and "had mode" not in caplog.text
    assert ConfigStore(paths).load() == {"a": 1}
    assert stat.S_IMODE(paths.config_file.stat().st_mode) == 0o600 and "had mode 0644" in caplog.text

def test_update_writes_private_files_atomically(tmp_path):
    store = ConfigStore(resolve_paths({"HOME": str(tmp_path)}))
    out = store.update({"openrouter_api_key": "sk-secret-value", "rpc": {"workers": 4}, "custom": [1, 2]})
    assert out["openrouter_api_key"] == "sk-secret-value"
    cfg_dir = tmp_path / ".kward"
    assert stat.S_IMODE(cfg_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((cfg_dir / "config.json").stat().st_mode) == 0o600
    assert json.loads((cfg_dir / "config.json").read_text())["custom"] == [1, 2]
    store.update({"custom": None, "model": "m"})
    assert store.load() == {"openrouter_api_key": "sk-secret-value", "rpc": {"workers": 4}, "model": "m"}
    assert [p.name for p in cfg_dir.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("values", [
    {"provider": "nope"}, {"rpc": {"workers": 0}}, {"rpc": "x"}, {"retry_delays": ["a"]},
    {"codex_base_url": "ftp://x"}, {"logging": {"enabled": "yes"}}, {"reasoning_effort": "huge"},
])
def test_update_type_checks_known_keys_and_writes_nothing(tmp_path, values):
    store = ConfigStore(resolve_paths({"HOME": str(tmp_path)}))
    store.update({"model": "keep"})
    before = (tmp_path / ".kward" / "config.json").read_bytes()
    with pytest.raises(InvalidParams) as info:
        store.update(values)
    assert info.value.reason == "invalid_config" and next(iter(values)) in info.value.message
    assert (tmp_path / ".kward" / "config.json").read_bytes() == before


def test_invalid_json_names_the_file(tmp_path):
    paths = resolve_paths({"HOME": str(tmp_path)})
    paths.config_dir.mkdir()
    paths.config_file.write_text('{"a": 1,,}')
    with pytest.raises(ConfigError) as info:
        ConfigStore(paths).load()
    assert str(paths.config_file) in info.value.message and info.value.reason == "invalid_config"
    paths.config_file.write_text("[1, 2]")
    with pytest.raises(ConfigError):
        ConfigStore(paths).load()


def test_reload_sees_other_writers(tmp_path):
    paths = resolve_paths({"HOME": str(tmp_path)})
    a, b = ConfigStore(paths), ConfigStore(paths)
    a.update({"model": "one"})
    assert b.load()["model"] == "one"
    a.update({"model": "two-longer"})
    assert b.load()["model"] == "two-longer"


@pytest.mark.slow
def test_concurrent_updates_from_threads_and_processes_lose_nothing(tmp_path):
    paths = resolve_paths({"HOME": str(tmp_path)})
    store = ConfigStore(paths)
    code = ("import sys; from kward.config.store import ConfigStore, resolve_paths; "
            "s = ConfigStore(resolve_paths({'HOME': sys.argv[1]})); "
            "[s.update({f'p{sys.argv[2]}_{i}': i}) for i in range(20)]")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(n)]) for n in range(3)]
    threads = [threading.Thread(target=lambda n=n: [store.update({f"t{n}_{i}": i}) for i in range(20)])
               for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.wait(30) == 0 for p in procs)
    assert len(ConfigStore(paths).load()) == 120


def test_settings_env_wins_and_bad_env_is_an_error():
    s = resolve_settings({"rpc": {"workers": 3}, "log_level": "info"}, {})
    assert s.rpc_workers == 3 and s.log_level == "INFO"
    s = resolve_settings({"rpc": {"workers": 3}}, {"KWARD_RPC_WORKERS": "5", "KWARD_LOG_LEVEL": "debug"})
    assert s.rpc_workers == 5 and s.log_level == "DEBUG"
    assert resolve_settings({}, {}).max_frame_bytes == 64 * 1024 * 1024
    with pytest.raises(ConfigError, match="^KWARD_RPC_WORKERS must be an integer from 1 to 1024, not 'many'$"):
        resolve_settings({}, {"KWARD_RPC_WORKERS": "many"})
    with pytest.raises(ConfigError, match="^KWARD_LOG_LEVEL must be one of DEBUG, "):
        resolve_settings({}, {"KWARD_LOG_LEVEL": "loud"})
    with pytest.raises(ConfigError, match="^KWARD_PROVIDER must be one of codex, "):  # the providers' too
        resolve_settings({}, {"KWARD_PROVIDER": "nonsense"})


def deep(depth):
    value = 1
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("values, key", [
    ({"notes": deep(64)}, "notes"),  # the config document would be 65 levels deep
    ({"notes": deep(900)}, "notes"),
    ({"model": "bad\ud800"}, "model"),
    ({"notes": ["ok", {"x\udcff": 1}]}, "notes"),
])
def test_update_refuses_deep_or_invalid_unicode_values_and_writes_nothing(tmp_path, values, key):
    store = ConfigStore(resolve_paths({"HOME": str(tmp_path)}))
    store.update({"model": "keep", "notes": deep(63)})  # 64 levels: the limit
    before = (tmp_path / ".kward" / "config.json").read_bytes()
    with pytest.raises(InvalidParams) as info:
        store.update(values)
    assert info.value.reason == "invalid_config" and info.value.data["key"].startswith(key)
    assert f"Invalid config value for {key}" in info.value.message
    assert (tmp_path / ".kward" / "config.json").read_bytes() == before
    assert store.load()["model"] == "keep"


@pytest.mark.parametrize("text, key", [
    (json.dumps({"model": "m", "odd": deep(200)}), "odd"),
    ('{"model": "\\ud800"}', "model"),
    ('{"\\udc00": 1}', "\\udc00"),
])
def test_an_odd_config_on_disk_is_invalid_config_naming_the_file(tmp_path, text, key):
    paths = resolve_paths({"HOME": str(tmp_path)})
    paths.config_dir.mkdir()
    paths.config_file.write_text(text)
    store = ConfigStore(paths)
    for action in (store.load, lambda: store.update({"model": "x"})):
        with pytest.raises(ConfigError) as info:
            action()
        assert info.value.reason == "invalid_config" and str(paths.config_file) in info.value.message
        assert info.value.data["key"].startswith(key)
    assert paths.config_file.read_text() == text


def test_an_unreadable_config_is_a_filesystem_error(tmp_path):
    from kward.errors import FilesystemError

    (tmp_path / "file").write_text("x")
    store = ConfigStore(resolve_paths({"HOME": str(tmp_path), "KWARD_CONFIG_PATH": str(tmp_path / "file" / "c.json")}))
    with pytest.raises(FilesystemError) as info:
        store.load()
    assert info.value.reason == "not_a_directory" and info.value.data["notADirectory"] == str(tmp_path / "file")
