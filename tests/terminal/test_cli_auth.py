"""`kward login`, `kward logout` and `kward auth status` through real processes: the key on
stdin (never argv), the OpenAI login against the fake issuer with the callback URL pasted
on stdin or through the browser (the test plays it), and the stores (the 0600 files, the
test keyring backend)."""

import json
import stat
import subprocess

import pytest

from kward import cli as cli_module
from lib.auth_helpers import authorize, open_in_browser
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_oauth import FakeOAuth
from lib.keyring_backend import keyring_env, read_keyring

KEY = "sk-or-v1-cli0123456789abcdefgh"
NO_BROWSER = ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")


@pytest.fixture
def oauth(cli):
    with FakeOAuth() as server:
        for name in NO_BROWSER:
            cli.env.pop(name, None)
        cli.env.update({"KWARD_OPENAI_AUTH_ISSUER": server.issuer, "KWARD_OAUTH_PORT": "0"})
        cli.env.pop("KWARD_PROVIDER", None)
        yield server


def status_lines(proc) -> dict[str, str]:
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    return {line[:11].strip(): line[12:] for line in proc.stdout.decode().splitlines()}


def start_login(cli, *args):
    run = cli.start("login", *args, stdin=subprocess.PIPE)
    run.wait_for(b"here and press Enter.\n")
    url = next(line.strip() for line in run.out.decode().splitlines() if "/oauth/authorize?" in line)
    return run, url


@pytest.mark.slow
def test_auth_status_names_sources_and_the_store(cli, oauth):
    lines = status_lines(cli.run("auth", "status"))
    assert lines["OpenAI"] == "not configured (run `kward login`, or set OPENAI_ACCESS_TOKEN)"
    assert lines["OpenRouter"] == "not configured (run `kward login openrouter`, or set OPENROUTER_API_KEY)"
    assert lines["store"].startswith("file: files: ") and "mode 0600" in lines["store"]
    assert lines["keyring"] == "not used: no usable keyring backend (keyring.backends.fail.Keyring); using 0600 files"
    env = cli.run("auth", "status", env={"OPENROUTER_API_KEY": KEY})
    assert status_lines(env)["OpenRouter"] == "OPENROUTER_API_KEY (environment)" and KEY.encode() not in env.stdout


@pytest.mark.slow
def test_auth_status_says_when_the_login_file_is_not_read(cli, oauth):
    auth = cli.home / ".kward" / "auth.json"
    auth.parent.mkdir(exist_ok=True)
    auth.symlink_to("/dev/zero")
    proc = cli.run("auth", "status")
    assert b"is a symbolic link" in proc.stderr and b"ignoring it" in proc.stderr  # the warning of the read
    lines = status_lines(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, b""))
    assert lines["OpenAI"].startswith("not configured")
    assert lines["auth.json"] == f"not read: {auth}: is a symbolic link (kward does not follow links for its own files)"


@pytest.mark.slow
def test_login_openrouter_reads_the_key_from_stdin_then_status_and_logout(cli, oauth):
    proc = cli.run("login", "openrouter", input=KEY + "\n")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"Saved the OpenRouter API key in a 0600 file.\n", b"")
    config = cli.config_dir / "config.json"
    assert json.loads(config.read_text())["openrouter_api_key"] == KEY
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and stat.S_IMODE(cli.config_dir.stat().st_mode) == 0o700
    assert status_lines(cli.run("auth", "status"))["OpenRouter"] == "API key stored"
    out = cli.run("logout", "openrouter")
    assert (out.returncode, out.stdout) == (0, b"Removed the stored OpenRouter API key.\n")
    assert "openrouter_api_key" not in json.loads(config.read_text())
    both = cli.run("logout", env={"OPENAI_ACCESS_TOKEN": "env-token-0123456789"})
    assert both.returncode == 0 and both.stdout.decode().splitlines() == [
        "No stored OpenAI login to remove. OPENAI_ACCESS_TOKEN is still set in the environment and stays in use.",
        "No stored OpenRouter API key to remove."]


@pytest.mark.parametrize("args, stdin, code, message", [
    (["login", "openrouter", KEY], "", 2, "never from the command line"),
    (["login", "github"], "", 2, "unknown provider"),
    (["logout", "nowhere"], "", 2, "unknown provider"),
    (["auth"], "", 2, "`kward auth status`"),
    (["auth", "list"], "", 2, "`kward auth status`"),
    (["login", "openrouter"], "", 1, "no API key given"),
    (["login", "openrouter"], "short\n", 1, "kward: the API key must be 8 to 1024 characters long"),
])
def test_bad_logins_say_why_and_store_nothing(cli, oauth, args, stdin, code, message):
    proc = cli.run(*args, input=stdin)
    assert proc.returncode == code and proc.stdout == b"" and message in proc.stderr.decode()
    assert b"apiKey" not in proc.stderr  # the terminal's words, not the wire's
    assert KEY.encode() not in proc.stderr and b"short" not in proc.stderr
    assert not (cli.config_dir / "config.json").exists()


def test_a_key_on_a_stdin_that_cannot_be_read_is_one_line(cli, oauth):
    with open(cli.home / "written", "wb") as write_only:  # `kward login openrouter 0>file`
        run = cli.start("login", "openrouter", stdin=write_only)
        assert run.finish() == 1
    assert run.out == b"" and run.err.decode().splitlines() == [
        "kward: standard input cannot be read (Bad file descriptor); type the key at the hidden prompt on a "
        "terminal, or pipe it"]
    proc = cli.run("login", "openrouter", input=b"sk-or-v1-\xff0123456789\n")
    assert proc.returncode == 1 and proc.stderr.decode().splitlines() == [
        "kward: the key on standard input is not UTF-8 text"]
    assert not (cli.config_dir / "config.json").exists()


@pytest.mark.slow
def test_login_with_the_callback_url_pasted_on_stdin(cli, oauth):
    run, url = start_login(cli)
    assert url.startswith(oauth.issuer + "/oauth/authorize?")
    foreign = authorize(url.replace("state=", "state=x"))  # the URL of another login attempt
    run.proc.stdin.write(foreign.encode() + b"\n")
    run.proc.stdin.flush()
    run.wait_for(b"does not match this login")
    run.proc.stdin.write(authorize(url).encode() + b"\n")
    run.proc.stdin.close()
    assert run.finish() == 0, run.err
    assert run.out.decode().endswith("Still waiting: paste again, or finish in the browser.\nLogged in to OpenAI.\n")
    assert run.err == b"" and oauth.grants() == ["authorization_code"]
    auth_file = cli.config_dir / "auth.json"
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert not any(token.encode() in run.out for token in oauth.issued)
    assert status_lines(cli.run("auth", "status"))["OpenAI"] == "login stored"
    assert cli.run("logout", "openai").stdout == b"Removed the stored OpenAI login.\n" and not auth_file.exists()


def test_login_through_the_browser(cli, oauth):
    run, url = start_login(cli, "openai")
    assert open_in_browser(url).status_code == 200  # the browser comes back to kward's listener
    assert run.finish() == 0, run.err
    assert run.out.decode().endswith("Logged in to OpenAI.\n") and run.err == b""
    assert json.loads((cli.config_dir / "auth.json").read_text())["auth_mode"] == "openai_oauth"


@pytest.mark.slow
def test_a_refused_login_exits_1_with_the_reason(cli, oauth):
    oauth.authorize_outcome = "denied"
    run, url = start_login(cli)
    assert open_in_browser(url).status_code == 400
    assert run.finish() == 1
    assert run.err.decode().startswith("kward: The authorization server refused the login (access_denied")
    assert not (cli.config_dir / "auth.json").exists()


@pytest.mark.slow
def test_the_keyring_store_through_the_cli(cli, oauth, tmp_path):
    ring = tmp_path / "keyring.json"
    env = keyring_env(cli.env, ring)
    proc = cli.run("login", "openrouter", input=KEY, env=env)
    assert proc.stdout == b"Saved the OpenRouter API key in the OS keyring.\n"
    assert read_keyring(ring) == {"kward:openrouter_api_key": KEY}
    lines = status_lines(cli.run("auth", "status", env=env))
    assert lines["OpenRouter"] == "API key stored" and "keyring" not in lines
    assert lines["store"] == "keyring: OS keyring (lib.keyring_backend.MemoryKeyring), service 'kward'"
    assert cli.run("logout", "openrouter", env=env).returncode == 0 and read_keyring(ring) == {}


def test_the_commands_are_in_the_help():
    for name, usage in (("login", "login [openai|openrouter]"), ("logout", "logout [provider]"),
                        ("auth", "auth status")):
        assert cli_module.COMMANDS[name][0] == usage and f"\n  {usage} " in cli_module.help_text()
