"""`kward doctor`'s sandbox line through the real process: in force with a working bwrap,
a fail line (exit 1) naming why when it is configured and bwrap is missing from the PATH,
and when the configured value cannot be used."""

import json

import pytest

from lib.cli_helpers import cli  # noqa: F401 (fixture)
from lib.sandbox_helpers import usable  # noqa: F401 (fixture)


def _lines(proc) -> dict[str, tuple[str, str]]:
    """check name -> (status, detail) of a doctor report (as test_cli_commands reads it)."""
    out: dict[str, tuple[str, str]] = {}
    for line in proc.stdout.decode().splitlines():
        out.setdefault(line[6:18].strip(), (line[:4].strip(), line[19:]))
    return out


def _configure(cli, **security):
    cli.config_dir.mkdir(mode=0o700)
    config = cli.config_dir / "config.json"
    config.write_text(json.dumps({"security": security}))
    config.chmod(0o600)


@pytest.mark.usefixtures("usable")
def test_in_force(cli):
    _configure(cli, sandbox="workspace-write", sandboxNetwork=False)
    proc = cli.run("doctor")
    assert _lines(proc)["sandbox"] == ("ok", "workspace-write in force: shell commands run under bwrap (no network)")


def test_configured_without_bwrap(cli, tmp_path):
    _configure(cli, sandbox="workspace-write")
    proc = cli.run("doctor", env={"PATH": str(tmp_path)})
    assert proc.returncode == 1
    assert _lines(proc)["sandbox"] == ("fail", "workspace-write configured but not in force: commands are refused: "
                                               "bwrap (bubblewrap) is not installed (not found on PATH)")


def test_an_unusable_value(cli):
    _configure(cli, sandbox="on")
    proc = cli.run("doctor")
    report = _lines(proc)
    assert proc.returncode == 1 and report["config"][0] == "fail" and "security.sandbox" in report["config"][1]
    assert report["sandbox"][0] == "fail" and "must be one of off, workspace-write, not 'on'" in report["sandbox"][1]
