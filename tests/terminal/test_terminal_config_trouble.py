"""Config trouble is one clear line everywhere (issue 22, point 7): each problem of
config.json or the config directory, run through every terminal command as a real
subprocess (interactive mode on a pseudo-terminal), prints ONE line naming the file and
what to do, never a traceback. A problem that stops is `kward: PATH: ...` and exit status
2; one kward goes on with is `kward: warning: PATH: ...` and the command's own status.
`kward doctor` prints it as a failed check and runs the other checks (exit 1).

Permission problems also run as root: kward is started through a wrapper that drops the
capabilities which let root ignore file modes (as tests/rpc/test_rpc_errors_fs.py does);
another user's file is made with chown, which needs root (else a unit test covers it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from kward.terminal import config_check
from lib.cli_helpers import Cli, cli  # noqa: F401 - fixture
from lib.pty_term import PROMPT, PtyKward
from lib.rpc_client import kward_argv, spawn_kward
from lib.scripts import text

# Execs argv[1:] without root's file-mode overrides (exit 77 when they cannot be dropped).
DROP_OVERRIDES = textwrap.dedent("""
    import ctypes, os, sys
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                os._exit(77)
    os.execv(sys.argv[1], sys.argv[1:])
""")
WRAPPER = (sys.executable, "-c", DROP_OVERRIDES)
KEY = "sk-or-v1-0123456789abcdef0123"
DIR_FIX = "make it writable, or set KWARD_CONFIG_PATH to a config file in a directory you can write"

#: problem -> (what makes it, the line after `kward: `, "stop" or "warn")
PROBLEMS = {
    "directory": ("mkdir", "{cfg}: is a directory, not a file; remove or rename it (kward keeps its settings in that "
                           "file)", "stop"),
    "unreadable": ("chmod 000", "{cfg}: cannot be read (permission denied); make it readable (chmod 600 {cfg}) or "
                                "remove it", "stop"),
    "other owner": ("chown", "{cfg}: is owned by another user (uid 54321); remove it, or give it to yourself (chown)",
                    "stop"),
    "invalid JSON": ('{\n  "scripted_model": "m",\n  "openai_model":\n}\n',
                     "{cfg}: not valid JSON (line 4, column 1: Expecting value); fix or remove it", "stop"),
    "bad base URL": ({"codex_base_url": 3}, "{cfg}: codex_base_url must be an http:// or https:// URL, not 3; fix or "
                                            "remove it (kward does not guess where requests go)", "stop"),
    "read-only directory": ("chmod 500 dir", "{dir}: cannot be written (permission denied); " + DIR_FIX, "stop"),
    "wrong type": ({"openai_model": 3}, "warning: {cfg}: openai_model must be a string, so kward ignores it; fix or "
                                        "remove it", "warn"),
    "misspelled key": ({"openai_modle": "gpt-5.5"}, "warning: {cfg}: unknown key openai_modle (did you mean "
                                                    "openai_model?), kward ignores it; rename or remove it", "warn"),
}
NEEDS_MODES = ("unreadable", "read-only directory")

#: command -> (argv, stdin, the exit status when it goes on)
COMMANDS = {
    "login": (["login"], "", None),  # (an OpenAI login waits for the browser: only where it stops)
    "login openrouter": (["login", "openrouter"], KEY + "\n", 0),
    "logout": (["logout"], "", 0),
    "auth status": (["auth", "status"], "", 0),
    "memory": (["memory"], "", 0),
    "stats tokens": (["stats", "tokens"], "", 0),
    "one-shot": (["hello"], "", 0),
}


def make(cli: Cli, problem: str) -> None:
    how = PROBLEMS[problem][0]
    cfg = cli.config_dir / "config.json"
    cli.config_dir.mkdir(mode=0o700, exist_ok=True)
    if how == "mkdir":
        cfg.mkdir()
    elif isinstance(how, dict):
        cfg.write_text(json.dumps(how))
    elif how.startswith("{"):
        cfg.write_text(how)
    else:
        cfg.write_text('{"scripted_model": "m"}')
    if cfg.is_file():
        cfg.chmod(0o600)
    if how == "chmod 000":
        cfg.chmod(0)
    elif how == "chown":
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user (the unit test below covers it)")
        os.chown(cfg, 54321, -1)
    elif how == "chmod 500 dir":
        cli.config_dir.chmod(0o500)


def expected(cli: Cli, problem: str) -> str:
    line = PROBLEMS[problem][1].format(cfg=cli.config_dir / "config.json", dir=cli.config_dir)
    return f"kward: {line}"


def run(cli: Cli, problem: str, args: list[str], stdin: str, **env: str) -> subprocess.CompletedProcess:
    """`kward ARGS` (through the wrapper for a problem of file modes)."""
    wrapper = WRAPPER if problem in NEEDS_MODES else ()
    proc = spawn_kward(cli.home, cwd=cli.ws, env={**cli.env, **env}, argv=[*wrapper, *kward_argv(), *args])
    with proc:
        out, err = proc.communicate(stdin.encode(), timeout=30)
    if proc.returncode == 77 and wrapper:
        pytest.skip("root's file-mode overrides cannot be dropped here")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(autouse=True)
def restore_modes(cli):
    yield
    if cli.config_dir.exists():  # (so that the temp directory can be removed)
        cli.config_dir.chmod(0o700)
        cfg = cli.config_dir / "config.json"
        if cfg.is_file() and not cfg.is_symlink():
            cfg.chmod(0o600)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_each_config_problem_is_one_line_in_every_command(cli, problem, command):
    args, stdin, code = COMMANDS[command]
    severity = PROBLEMS[problem][2]
    if severity == "warn" and code is None:
        pytest.skip("an OpenAI login that goes on waits for a browser")
    cli.script([[text("hi")]])
    make(cli, problem)
    proc = run(cli, problem, args, stdin, KWARD_LOGGING="1", KWARD_LOGGING_TOKENS="1")
    err = proc.stderr.decode()
    assert "Traceback" not in err
    if severity == "stop":
        assert (proc.returncode, proc.stdout, err) == (2, b"", expected(cli, problem) + "\n")
    else:
        assert proc.returncode == code, err
        assert err.splitlines().count(expected(cli, problem)) == 1 and err.startswith(expected(cli, problem)), err
        assert [line for line in err.splitlines() if line.startswith("kward: warning:")] == [expected(cli, problem)]


@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_each_config_problem_is_one_line_in_interactive_mode(cli, problem):
    cli.script([[text("hi")]])
    make(cli, problem)
    env = {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}
    with PtyKward([], env, str(cli.ws), wrapper=WRAPPER if problem in NEEDS_MODES else ()) as k:
        if PROBLEMS[problem][2] == "stop":
            code = k.wait()
            if code == 77:
                pytest.skip("root's file-mode overrides cannot be dropped here")
            assert code == 2 and k.text.strip() == expected(cli, problem)
            return
        before = k.expect(PROMPT)
        assert before.count(expected(cli, problem)) == 1 and "Traceback" not in before
        assert before.index(expected(cli, problem)) < before.index("kward 0.")  # before the startup screen
        k.line("hello")
        assert "hi" in k.expect(PROMPT)
        k.send("\x04")
        assert k.wait() == 0


DOCTOR_CHECKS = {"kward", "environment", "config", "sandbox", "hooks", "mcp", "web search", "provider", "credentials",
                 "keyring", "endpoint", "config dir", "server"}


def doctor_lines(proc: subprocess.CompletedProcess) -> list[tuple[str, str, str]]:
    """(status, check, detail) of each line of a doctor report."""
    return [(line[:4].strip(), line[6:18].strip(), line[19:]) for line in proc.stdout.decode().splitlines()]


@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_doctor_reports_each_config_problem_as_a_failed_check_and_goes_on(cli, problem):
    cli.script([[text("hi")]])
    make(cli, problem)
    proc = run(cli, problem, ["doctor"], "")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.decode()
    lines = doctor_lines(proc)
    check = "config dir" if problem == "read-only directory" else "config"
    line = expected(cli, problem).removeprefix("kward: ").removeprefix("warning: ")
    assert ("fail", check, line) in lines
    assert {c for _, c, _ in lines} == DOCTOR_CHECKS  # every other check ran too
    assert [c for s, c, _ in lines if s == "fail"].count(check) == 1
    sandbox = next(line for line in lines if line[1] == "sandbox")
    assert sandbox[:2] == ("ok", "sandbox") or sandbox == (
        "warn", "sandbox", "cannot be told while config.json cannot be read (see the config line)")
    hooks = next(line for line in lines if line[1] == "hooks")
    assert hooks[:2] == ("ok", "hooks") or hooks == (
        "warn", "hooks", "cannot be told while config.json cannot be read (see the config line)")


def test_a_key_kward_does_not_read_is_only_a_doctor_note(cli):
    cli.script([[text("hi")]])
    make(cli, "wrong type")
    cfg = cli.config_dir / "config.json"
    cfg.write_text(json.dumps({"ui_layout": "wide"}))
    cfg.chmod(0o600)
    proc = cli.run("hello")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"hi\n", b"")
    report = doctor_lines(cli.run("doctor"))
    assert ("warn", "config", f"{cfg}: kward does not read the key ui_layout; remove it unless another program "
                              "uses it") in report
    assert not [line for line in report if line[0] == "fail"]



def test_doctor_reports_a_config_open_to_others_and_changes_nothing(cli):
    cli.script([[text("hi")]])
    cli.config_dir.mkdir(mode=0o700)
    cfg = cli.config_dir / "config.json"
    cfg.write_text('{"scripted_model": "scripted"}')
    cfg.chmod(0o644)
    before = sorted(os.listdir(cli.config_dir))
    proc = cli.run("doctor")
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr  # (a warning, no failure; nothing logged)
    assert ("warn", "config", f"{cfg}: has mode 0644, wider than 0600 (it may hold an API key); kward narrows it "
                              f"to 0600 when it runs (or: chmod 600 {cfg})") in doctor_lines(proc)
    assert cfg.stat().st_mode & 0o777 == 0o644  # doctor changed nothing
    assert sorted(os.listdir(cli.config_dir)) == before
    proc = cli.run("auth", "status")  # any other command narrows it
    assert proc.returncode == 0 and cfg.stat().st_mode & 0o777 == 0o600
    assert "kward set it to 0600" in proc.stderr.decode()
    assert ("ok", "config", f"{cfg} (1 settings)") in doctor_lines(cli.run("doctor"))

# --- the checks themselves ---------------------------------------------------------

def test_another_users_config_file_is_named_as_such(tmp_path, monkeypatch):
    cfg = tmp_path / "config.json"
    cfg.write_text("{}")
    monkeypatch.setattr("kward.fsutil.os.geteuid", lambda: os.getuid() + 1)  # the file is someone else's now
    [trouble] = [t for t in config_check.diagnose({"KWARD_CONFIG_PATH": str(cfg)}) if t.check == "config"]
    assert trouble.severity == "stop"
    assert trouble.line == f"{cfg}: is owned by another user (uid {os.getuid()}); remove it, or give it to " \
                           "yourself (chown)"


@pytest.mark.parametrize("values, line, severity", [
    ({"memory": {"enabeld": True}}, "unknown key memory.enabeld (did you mean memory.enabled?), kward ignores it; "
                                    "rename or remove it", "warn"),
    ({"memroy": {"enabled": True}}, "unknown key memroy (did you mean memory?), kward ignores it; rename or remove it",
     "warn"),
    ({"memory.enabled": True}, 'unknown key memory.enabled (did you mean "memory": {"enabled": ...}?), kward ignores '
                               "it; rename or remove it", "warn"),
    ({"logging": "on"}, "logging must be an object ({...}), so kward ignores it; fix or remove it", "warn"),
    ({"provider": "opnrouter"}, "provider must be one of codex, openrouter, openai-compatible, scripted, not "
                                "'opnrouter'; fix or remove it (kward does not guess where requests go)", "stop"),
    ({"openrouter_api_key": 12345678}, "openrouter_api_key must be a string, so kward ignores it; fix or remove it",
     "warn"),
    ([1, 2], "is not a JSON object ({...} at the top level); fix or remove it", "stop"),
])
def test_values_and_keys_in_words(tmp_path, values, line, severity):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(values))
    cfg.chmod(0o600)  # (a wider mode is a note of its own)
    [trouble] = [t for t in config_check.diagnose({"KWARD_CONFIG_PATH": str(cfg)}) if t.check == "config"]
    assert (trouble.line, trouble.severity) == (f"{cfg}: {line}", severity)


def test_a_value_its_variable_overrides_is_not_a_problem(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"provider": "nowhere", "log_level": "LOUD"}))
    cfg.chmod(0o600)
    env = {"KWARD_CONFIG_PATH": str(cfg), "KWARD_PROVIDER": "scripted", "KWARD_LOG_LEVEL": "INFO"}
    assert config_check.diagnose(env) == []


def test_a_config_directory_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    file_trouble, trouble = config_check.diagnose({"KWARD_CONFIG_PATH": str(blocker / "kward" / "config.json")})
    assert file_trouble.line == f"{blocker / 'kward' / 'config.json'}: cannot be reached: {blocker} is not a " \
                                "directory; fix the path (KWARD_CONFIG_PATH) or move that file away"
    assert (trouble.check, trouble.severity) == ("config dir", "stop")
    assert trouble.line == f"{blocker / 'kward'}: cannot be created ({blocker} is not a directory); {DIR_FIX}"
    assert config_check.diagnose({"KWARD_CONFIG_PATH": str(tmp_path / "new" / "config.json")}) == []
    assert not (tmp_path / "new").exists()  # nothing is created


def test_a_config_directory_on_a_read_only_file_system_says_so(tmp_path, monkeypatch):
    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(config_check.os, "access", lambda path, mode: False)
    monkeypatch.setattr(config_check.os, "statvfs", lambda path: ReadOnly())
    [trouble] = config_check.directory_troubles(config_check.resolve_paths({"KWARD_CONFIG_PATH":
                                                                            str(tmp_path / "config.json")}))
    assert trouble.line == f"{tmp_path}: cannot be written (read-only file system); {DIR_FIX}"

