"""The commands and options of `kward` through the real process: version, help, doctor,
usage errors, --working-directory, --model, and the environment checks."""

import json
import subprocess
import sys

import pytest

from kward import __version__, cli as cli_module
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_openrouter import FakeOpenRouter
from lib.ports import free_port
from lib.rpc_client import frame


@pytest.mark.parametrize("args", [["--version"], ["-v"], ["version"], ["--working-directory", ".", "-v"]])
def test_version(cli, args):
    proc = cli.run(*args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"kward {__version__}\n".encode(), b"")


@pytest.mark.parametrize("args", [["help"], ["--help"], ["-h"]])
def test_help_lists_the_commands_options_and_slash_commands(cli, args):
    proc = cli.run(*args)
    assert proc.returncode == 0 and proc.stderr == b""
    out = proc.stdout.decode()
    assert out == cli_module.help_text()
    for name in cli_module.COMMANDS:
        assert f"\n  {cli_module.COMMANDS[name][0]} " in out
    for flag in ("--working-directory DIR", "--model PROVIDER[/ID]", "-h, --help", "-v, --version"):
        assert f"\n  {flag} " in out
    assert "\n  /resume [path] " in out and "\n  /exit " in out


def test_help_of_one_command(cli):
    assert cli.run("help", "doctor").stdout.decode().startswith("usage: kward doctor\n")
    assert cli.run("help", "rpc").stdout.decode().startswith("usage: kward rpc")
    unknown = cli.run("help", "frobnicate")
    assert unknown.returncode == 2 and b"no help for unknown command: frobnicate" in unknown.stderr


@pytest.mark.parametrize("args, message", [
    (["--frobnicate"], "unknown option: --frobnicate"),
    (["--model"], "--model needs a value"),
    (["--model="], "--model needs a value"),
    (["--model", "nowhere/x", "hi"], "--model: unknown provider 'nowhere'"),
    (["--model", "scripted/x", "hi"], "--model: a model for scripted cannot be chosen for one run"),
    (["--working-directory", "{home}/missing", "hi"], "--working-directory: no such directory"),
    (["--working-directory", "{home}/file", "hi"], "--working-directory: not a directory"),
    (["version", "now"], "unexpected argument: now"),
    (["doctor", "--all"], "kward doctor: unknown option: --all"),
    (["doctor", "now"], "unexpected argument: now"),
])
def test_usage_errors_exit_2_with_one_clear_line(cli, args, message):
    (cli.home / "file").write_text("")
    proc = cli.run(*[a.format(home=cli.home) for a in args])
    assert proc.returncode == 2 and proc.stdout == b""
    assert message in proc.stderr.decode().splitlines()[0], proc.stderr


@pytest.mark.parametrize("variable, value", [("KWARD_PROVIDER", "nonsense"), ("KWARD_COLOR", "sometimes"),
                                             ("KWARD_RETRY_DELAYS", "x")])
def test_a_bad_environment_variable_stops_the_terminal_modes_with_one_line(cli, variable, value):
    proc = cli.run("hello", env={variable: value})
    assert proc.returncode == 2 and proc.stdout == b""
    [line] = proc.stderr.decode().splitlines()
    assert line.startswith(f"kward: {variable} must be ")
    assert not cli.config_dir.exists()


def test_the_rpc_command_after_global_options(cli):
    proc = cli.run("--working-directory", str(cli.home), "rpc",
                   input=frame({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
    assert proc.returncode == 0 and proc.stderr == b""
    body = json.loads(proc.stdout.split(b"\r\n\r\n", 1)[1])
    assert body["result"]["serverVersion"] == __version__


def test_the_rpc_fast_path_imports_nothing_of_the_terminal():
    code = ("import sys, kward.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith('kward')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['kward', 'kward.cli']"


def _lines(proc) -> dict[str, tuple[str, str]]:
    """check name -> (status, detail) of a doctor report."""
    out = {}
    for line in proc.stdout.decode().splitlines():
        status, check, detail = line[:4].strip(), line[6:18].strip(), line[19:]
        out.setdefault(check, (status, detail))
    return out


def test_doctor_offline_with_the_scripted_provider(cli):
    proc = cli.run("doctor")
    assert proc.returncode == 0, proc.stdout
    report = _lines(proc)
    assert set(report) == {"kward", "environment", "config", "sandbox", "hooks", "mcp", "web search", "provider",
                           "credentials", "keyring", "endpoint", "config dir", "server"}
    assert report["hooks"] == ("ok", "none configured")
    assert report["mcp"] == ("ok", "no servers configured (mcp.servers)")
    assert report["web search"] == ("ok", "web_search asks http://127.0.0.1:9/mcp")  # (the tests' endpoint)
    assert report["sandbox"][0] == "ok" and report["sandbox"][1].startswith("off: shell commands are not confined")
    assert report["provider"] == ("ok", "Scripted, model scripted-demo")
    assert report["keyring"][0] == "warn" and "keyring.backends.fail.Keyring" in report["keyring"][1]
    assert report["endpoint"] == ("ok", "the Scripted provider works offline")
    assert report["config dir"][0] == "ok" and "can be created" in report["config dir"][1]
    assert not cli.config_dir.exists()  # the doctor creates nothing


@pytest.mark.slow
def test_doctor_checks_the_endpoint_in_use_and_names_credential_sources(cli):
    with FakeOpenRouter() as fake:
        env = {"KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": fake.base_url,
               "OPENROUTER_API_KEY": "sk-or-v1-doctor0123456789"}
        proc = cli.run("doctor", env=env)
        url = fake.base_url
    assert proc.returncode == 0, proc.stdout
    report = _lines(proc)
    assert report["endpoint"] == ("ok", f"OpenRouter {url} answers (HTTP 501)")  # the fake has no HEAD: any answer
    assert report["credentials"] == ("ok", "OPENROUTER_API_KEY (environment)")
    assert b"sk-or-v1-doctor" not in proc.stdout


@pytest.mark.slow
def test_doctor_fails_for_an_unreachable_endpoint_and_a_broken_config(cli):
    port = free_port()  # nothing listens there now
    cli.config_dir.mkdir()
    (cli.config_dir / "config.json").write_text('{"provider": "openrouter",')
    proc = cli.run("doctor", env={"KWARD_PROVIDER": "openrouter",
                                  "KWARD_OPENROUTER_BASE_URL": f"http://127.0.0.1:{port}/api/v1"})
    assert proc.returncode == 1
    report = _lines(proc)
    config = cli.config_dir / "config.json"
    assert report["config"] == ("fail", f"{config}: not valid JSON (line 1, column 27: Expecting property name "
                                        "enclosed in double quotes); fix or remove it")
    assert report["endpoint"][0] == "fail" and "unreachable" in report["endpoint"][1]
    assert report["credentials"][0] == "warn"


def test_doctor_reports_a_bad_environment_variable(cli):
    proc = cli.run("doctor", env={"KWARD_MAX_INPUT_CHARS": "0"})
    assert proc.returncode == 1
    assert _lines(proc)["environment"][0] == "fail"
