"""`kward doctor` lists each MCP server of config `mcp.servers` with its state."""

from lib.cli_helpers import cli  # noqa: F401 (fixture)
from lib.config_files import write_config
from lib.fake_mcp import TOOLS, stdio_command


def test_doctor_lists_each_server_and_fails_on_one_that_cannot_run(cli, tmp_path):  # noqa: F811
    write_config(cli.config_dir, {"mcp": {"servers": {
        "fake": stdio_command(tmp_path / "j.jsonl"),
        "gone": {"command": str(tmp_path / "no-such-server")},
        "off": {"command": "x", "enabled": False},
    }}, "web_search": {"enabled": False}})
    (cli.config_dir / "config.json").chmod(0o600)
    cli.config_dir.chmod(0o700)
    proc = cli.run("doctor", timeout=60)
    lines = [line.split(None, 2) for line in proc.stdout.decode().splitlines()]
    mcp = [(status, detail) for status, check, detail in lines if check == "mcp"]
    assert mcp[0] == ("ok", f"fake (stdio): ready, {len(TOOLS)} tools")
    assert mcp[1][0] == "fail" and mcp[1][1].startswith("gone (stdio): could not start ")
    assert mcp[2] == ("ok", "off (stdio): switched off (enabled: false)")
    assert any(line[:2] == ["ok", "web"] and "switched off (web_search.enabled: false)" in line[2] for line in lines)
    assert proc.returncode == 1  # (a failed check)
    assert b"could not start" not in proc.stderr  # shown once, by its line
