"""`initialize` carries the handshake facts clients show or log (additions): `userAgent`,
`configDir` and `platform`, over the real `kward rpc`."""

from __future__ import annotations

import sys

from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from kward import __version__


def test_initialize_carries_user_agent_config_dir_and_platform(kward, isolated_home):
    k = kward()
    result = k.request("initialize", {"clientInfo": {"name": "test"}})
    python = ".".join(map(str, sys.version_info[:3]))
    assert result["platform"] == ({"os": "linux", "family": "unix"} if sys.platform.startswith("linux")
                                  else result["platform"])
    assert result["platform"]["family"] in ("unix", "windows")
    assert result["userAgent"] == f"kward/{__version__} ({result['platform']['os']}; Python {python})"
    assert result["configDir"] == str(isolated_home / ".kward")
    # the original's fields are still there
    assert (result["protocolVersion"], result["serverName"], result["serverVersion"]) == (1, "kward", __version__)


def test_config_dir_follows_kward_config_path(kward, isolated_home, tmp_path):
    elsewhere = tmp_path / "conf"
    k = kward(env={"KWARD_CONFIG_PATH": str(elsewhere / "config.json")})
    assert k.request("initialize", {})["configDir"] == str(elsewhere)
