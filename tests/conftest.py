"""Test isolation: no test may touch the real HOME, ~/.kward or the real keyring."""

import os
import sys
from pathlib import Path

import pytest

# Force keyring's fail backend before anything imports keyring.
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
for _var in ("OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY", "KWARD_PROVIDER", "KWARD_LOG_LEVEL",
             "KWARD_AUTH_PATH", "KWARD_SCRIPT", "KWARD_RPC_WORKERS", "KWARD_MAX_FRAME_BYTES"):
    os.environ.pop(_var, None)

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point HOME and KWARD_CONFIG_PATH at temp dirs for every test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KWARD_CONFIG_PATH", str(home / ".kward" / "config.json"))
    return home
