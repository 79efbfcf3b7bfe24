"""Temp files that killed processes left behind are removed, and only those:
`fsutil.remove_stale_files`, and `kward rpc` applying it to the config directory."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib.processes import dead_pid
from lib.rpc_client import RpcClient

from kward import fsutil


def age(path: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


@pytest.fixture
def directory(tmp_path):
    d = tmp_path / "dir"  # tmp_path also holds the isolated HOME
    d.mkdir()
    return d


@pytest.fixture
def live():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield proc.pid
    proc.stdin.close()
    proc.wait()


def test_the_pattern_matches_the_temp_files_atomic_writes_make(directory, monkeypatch):
    seen = []

    def failing_replace(src, dst):
        seen.append(Path(src).name)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fsutil.os, "replace", failing_replace)
    with pytest.raises(OSError):
        fsutil.atomic_write_bytes(directory / "config.json", b"{}")
    assert len(seen) == 1 and fsutil.ATOMIC_TEMP.match(seen[0])
    assert int(fsutil.ATOMIC_TEMP.match(seen[0]).group("pid")) == os.getpid()
    assert list(directory.iterdir()) == []  # the failed write cleaned up after itself


def test_only_old_files_of_processes_that_are_gone_are_removed(directory, live):
    gone = dead_pid()
    names = {
        "dead_old": f".config.json.{gone}.0123abcd.tmp",
        "dead_young": f".config.json.{gone}.0123abce.tmp",
        "live_old": f".config.json.{live}.0123abcf.tmp",
        "live_ancient": f".auth.json.{live}.01234567.tmp",
        "own_ancient": f".config.json.{os.getpid()}.89abcdef.tmp",
        "other_name": f"config.json.{gone}.0123abcd.tmp",
        "config": "config.json",
    }
    paths = {key: directory / name for key, name in names.items()}
    for path in paths.values():
        path.write_text("secret")
    for key in ("dead_old", "live_old", "other_name", "config"):
        age(paths[key], 120)
    age(paths["live_ancient"], 2 * 3600)
    age(paths["own_ancient"], 2 * 3600)
    assert fsutil.remove_stale_files(directory, fsutil.ATOMIC_TEMP) == 2
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        names[k] for k in ("dead_young", "live_old", "own_ancient", "other_name", "config"))
    # without an age limit a live process's file is never removed, however old
    (directory / names["live_ancient"]).write_text("x")
    age(directory / names["live_ancient"], 10 * 3600)
    assert fsutil.remove_stale_files(directory, fsutil.ATOMIC_TEMP, max_age=None) == 0


def test_any_pattern_with_a_pid_group_works_and_a_missing_directory_is_fine(directory):
    leftover = directory / f".s.jsonl.{dead_pid()}.abcd0123.creating"
    leftover.touch()
    age(leftover, 120)
    creating = re.compile(r"^\..+\.(?P<pid>\d+)\.[0-9a-f]{8}\.creating$")
    assert fsutil.remove_stale_files(directory, creating) == 1 and list(directory.iterdir()) == []
    assert fsutil.remove_stale_files(directory / "missing", creating) == 0


def test_kward_rpc_removes_the_config_copies_killed_processes_left(isolated_home, live):
    cfg_dir = isolated_home / ".kward"
    cfg_dir.mkdir()
    (cfg_dir / "config.json").write_text('{"model": "m"}')
    gone = dead_pid()
    stale = cfg_dir / f".config.json.{gone}.00ff00ff.tmp"
    kept = cfg_dir / f".config.json.{live}.00ff00fe.tmp"
    for path in (stale, kept):
        path.write_text('{"openrouter_api_key": "sk-or-v1-secret"}')
        age(path, 120)
    with RpcClient(isolated_home) as c:
        assert c.request("config/read")["config"] == {"model": "m"}
        assert not stale.exists() and kept.exists()
        assert c.close() == 0 and c.stderr == ""
