"""Bad environment settings behave one way (kward(1) ENVIRONMENT): `kward rpc` exits 2 at
start with one stderr line naming the variable and what it allows; good values, empty
ones and odd spellings of good ones start normally. And no message sends the user to a
command that does not exist."""

import re
import subprocess
from pathlib import Path

import pytest
from lib.rpc_client import RpcClient, kward_command, kward_env, spawn_kward

from kward import cli
from kward.config import rules

BAD = {
    "KWARD_PROVIDER": ("nonsense", "one of codex, openrouter, openai-compatible, scripted"),
    "KWARD_LOG_LEVEL": ("loud", "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    "KWARD_RPC_WORKERS": ("abc", "an integer from 1 to 1024"),
    "KWARD_MAX_FRAME_BYTES": ("10", "an integer from 1024 to 17179869184"),
    "KWARD_MAX_INPUT_CHARS": ("0", "an integer from 1 to 1073741824"),
    "KWARD_RETRY_DELAYS": ("x", "comma-separated seconds (at most 20, each 0 to 3600; empty for no retries)"),
    "KWARD_STREAM_IDLE_TIMEOUT": ("soon", "a number of seconds from 0.05 to 3600"),
    "KWARD_CODEX_BASE_URL": ("ftp://example.org", "an http:// or https:// URL"),
    "KWARD_OPENROUTER_BASE_URL": ("openrouter.ai/api/v1", "an http:// or https:// URL"),
    "KWARD_OPENAI_COMPAT_BASE_URL": ("http://", "an http:// or https:// URL"),
    "KWARD_OPENAI_AUTH_ISSUER": ("http://auth.example", "an https:// URL (http:// only for a loopback host: "
                                                        "127.0.0.0/8, ::1 or localhost)"),
    "KWARD_OAUTH_PORT": ("70000", "an integer from 0 to 65535"),
    "KWARD_WEB_SEARCH_URL": ("mcp.exa.ai/mcp", "an http:// or https:// URL"),
    **{name: ("maybe", "one of 1, true, yes, on, 0, false, no, off")
       for name in ("KWARD_LOGGING", "KWARD_LOGGING_TOKENS", "KWARD_LOGGING_PERFORMANCE", "KWARD_LOGGING_TOOLS",
                    "KWARD_LOGGING_ERRORS")},
}


def test_every_checked_variable_has_a_bad_value_here():
    assert sorted(BAD) == sorted(rules.ENV)


@pytest.mark.slow
def test_a_bad_variable_stops_kward_rpc_with_one_line_naming_it(isolated_home):
    procs = {name: spawn_kward(isolated_home, env=kward_env(isolated_home, **{name: value}))
             for name, (value, _) in BAD.items()}
    for name, proc in procs.items():
        out, err = proc.communicate(b"", timeout=30)
        value, allowed = BAD[name]
        assert (proc.returncode, out) == (2, b""), (name, err)
        assert err.decode() == f"kward rpc: {name} must be {allowed}, not {value!r}\n"
    assert not (isolated_home / ".kward").exists()  # stopped before touching anything


def test_more_than_twenty_retry_delays_or_a_negative_one_are_refused(isolated_home):
    for value in (",".join(["1"] * 21), "1,-1", "nan"):
        proc = subprocess.run(kward_command(), input=b"", capture_output=True, timeout=30,
                              cwd=str(isolated_home), env=kward_env(isolated_home, KWARD_RETRY_DELAYS=value))
        assert proc.returncode == 2 and proc.stderr.decode().startswith("kward rpc: KWARD_RETRY_DELAYS must be ")


def test_good_odd_and_empty_values_start_normally(isolated_home):
    env = kward_env(isolated_home, KWARD_PROVIDER=" Scripted ", KWARD_LOG_LEVEL="error", KWARD_RPC_WORKERS="4",
                    KWARD_MAX_FRAME_BYTES="", KWARD_MAX_INPUT_CHARS="2048", KWARD_RETRY_DELAYS="",
                    KWARD_STREAM_IDLE_TIMEOUT="0.5", KWARD_CODEX_BASE_URL="HTTPS://example.org/codex/",
                    KWARD_OPENROUTER_BASE_URL="http://127.0.0.1:9/api/v1", KWARD_OPENAI_COMPAT_BASE_URL="")
    with RpcClient(isolated_home, env=env) as c:
        init = c.request("initialize")
        rpc = init["capabilities"]["rpc"]
        assert "warnings" not in init and rpc["inputLimits"]["maxChars"] == 2048
        assert rpc["maxFrameBytes"] == 64 * 1024 * 1024  # empty: as if unset
        session = c.request("sessions/create", {"workspaceRoot": str(isolated_home)})
        state = c.request("runtime/state", {"sessionId": session["id"]})
        assert (state["defaultProvider"], state["providerReason"]) == ("Scripted", "KWARD_PROVIDER")
        assert c.close() == 0 and c.stderr == ""


def test_the_provider_rules_read_the_same_values():
    from kward.config.settings import resolve_settings

    s = resolve_settings({"codex_base_url": "http://c/", "stream_idle_timeout": 2},
                         {"KWARD_OPENROUTER_BASE_URL": "https://o/v1/", "KWARD_RETRY_DELAYS": " 0.5, 1 "}).providers
    assert (s.base_urls["codex"], s.base_urls["openrouter"], s.idle_timeout) == ("http://c", "https://o/v1", 2.0)
    assert s.retry_delays == (0.5, 1.0)
    assert resolve_settings({}, {"KWARD_RETRY_DELAYS": ""}).providers.retry_delays == ()


def test_no_message_names_a_command_kward_does_not_have():
    listed = cli.help_text().split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    commands = set(re.findall(r"(?m)^  (\w[\w-]*) ", listed))
    assert commands == set(cli.COMMANDS) and {"rpc", "help", "version", "doctor"} <= commands
    named = set()
    for path in (Path(cli.__file__).parent).rglob("*.py"):
        named |= set(re.findall(r"`kward ([a-z][\w-]*)", path.read_text()))
        named |= set(re.findall(r"(?i)\b(?:run|use|try) kward ([a-z][\w-]*)", path.read_text()))
    assert named and named <= commands, named - commands
