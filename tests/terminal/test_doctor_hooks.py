"""`kward doctor`'s hooks line through the real process: none, the configured hooks by
event, and a fail line (exit 1) when a hooks list cannot be used."""

import json

from lib.cli_helpers import cli  # noqa: F401 (fixture)


def _lines(proc) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for line in proc.stdout.decode().splitlines():
        out.setdefault(line[6:18].strip(), (line[:4].strip(), line[19:]))
    return out


def _configure(cli, hooks):
    cli.config_dir.mkdir(mode=0o700)
    config = cli.config_dir / "config.json"
    config.write_text(json.dumps({"hooks": hooks}))
    config.chmod(0o600)


def test_none_configured(cli):
    proc = cli.run("doctor")
    assert _lines(proc)["hooks"] == ("ok", "none configured")


def test_the_configured_hooks_by_event(cli):
    _configure(cli, {"beforeTool": [{"command": "a"}, {"command": "b"}], "turnEnd": [{"command": "c"}]})
    proc = cli.run("doctor")
    assert _lines(proc)["hooks"] == ("ok", "3 configured (beforeTool 2, turnEnd 1), run unsandboxed, as you")


def test_a_list_that_cannot_be_used(cli):
    _configure(cli, {"afterTool": [{"command": "x", "tool": "("}]})
    proc = cli.run("doctor")
    report = _lines(proc)
    assert proc.returncode == 1 and report["hooks"][0] == "fail" and "every model turn fails" in report["hooks"][1]
    assert report["config"][0] == "fail" and "hooks" in report["config"][1], report["config"]
