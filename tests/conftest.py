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
# web_search's default endpoint is on the internet: every kward a test starts (they inherit
# this environment) searches a closed loopback port instead, unless the test points it at a fake
os.environ["KWARD_WEB_SEARCH_URL"] = "http://127.0.0.1:9/mcp"

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point HOME and KWARD_CONFIG_PATH at temp dirs for every test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KWARD_CONFIG_PATH", str(home / ".kward" / "config.json"))
    return home


def pytest_sessionstart(session):
    """Byte-compile this checkout's `kward` package once, before any test. Hundreds of
    tests start `python -m kward` from the checkout (`lib.rpc_client.kward_argv`); each
    reads `kward/__pycache__/` (checked against the sources' mtime and size, as any import
    does), but with PYTHONDONTWRITEBYTECODE set none is ever written there, so every child
    would compile each module it imports again (~0.25 s of CPU a start). These are the
    files a run without that variable leaves behind (the directory is git-ignored);
    up-to-date ones are left as they are."""
    import compileall

    from lib.paths import REPO

    compileall.compile_dir(str(REPO / "kward"), quiet=2)


@pytest.fixture(autouse=True)
def schema_traffic():
    """Fail the test whose traffic with kward broke the published schema (lib.traffic)."""
    from lib import traffic

    traffic.take_violations()
    yield
    found = traffic.take_violations()
    if found:
        pytest.fail("messages that do not match docs/protocol.schema.json:\n  " + "\n  ".join(found[:20]),
                    pytrace=False)


def pytest_terminal_summary(terminalreporter):
    from lib import traffic

    if traffic.UNKNOWN and not traffic.STRICT:
        kinds = sorted(traffic.UNKNOWN)
        terminalreporter.write_line(f"schema: {sum(traffic.UNKNOWN.values())} messages of {len(kinds)} kinds have "
                                    f"no shape yet: {', '.join(kinds[:12])}{' ...' if len(kinds) > 12 else ''}")
