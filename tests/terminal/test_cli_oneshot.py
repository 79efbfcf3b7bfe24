"""One-shot mode through the real `kward` process: `kward PROMPT...`, `kward -- PROMPT`,
a piped prompt. Only the answer on stdout, the rest on stderr, no session kept, and the
exit status tells success (0), failure (1, one line) and Ctrl-C (130)."""

import subprocess
import sys

import pytest

from lib import fake_openrouter as fo
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_openrouter import FakeOpenRouter
from lib.scripts import delay, model_error, reasoning, text, tool


@pytest.mark.slow
def test_the_answer_alone_goes_to_stdout_and_the_tools_to_stderr(cli):
    (cli.ws / "notes.txt").write_text("one\ntwo\n")
    cli.script([[reasoning("Looking first."), text("Reading."), tool("read_file", path="notes.txt")],
                [tool("edit_file", path="notes.txt", edits=[{"old_text": "two", "new_text": "2\n3"}])],
                [text("Edited "), text("the notes.")]])
    proc = cli.run("fix", "the", "notes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "Edited the notes.\n"  # the text before a tool call is not the answer
    err = proc.stderr.decode()
    assert "Looking first." in err and "Reading." in err
    assert "read notes.txt  ok" in err and "edit notes.txt  ok +2 -1" in err
    assert "\x1b[" not in err  # not a terminal: no colours
    assert (cli.ws / "notes.txt").read_text() == "one\n2\n3\n"
    assert cli.session_files() == []  # one-shot prompts keep no session


@pytest.mark.slow
def test_the_prompt_is_the_arguments_joined_or_the_rest_after_double_dash(cli):
    cli.script([[text("ok")]], loop=True)
    assert cli.run("--", "help", "--me").stdout == b"ok\n"  # a command name and an option, as prompt
    proc = cli.run("--", "-v")
    assert (proc.returncode, proc.stdout) == (0, b"ok\n")


@pytest.mark.slow
def test_a_piped_prompt_is_read_from_stdin(cli):
    cli.script([[text("piped answer")]])
    proc = cli.run(input="what is\nthis?\n")
    assert (proc.returncode, proc.stdout) == (0, b"piped answer\n"), proc.stderr
    assert cli.session_files() == []
    demo = cli.run(input="what is\nthis?\n", env={"KWARD_SCRIPT": ""})  # the demo repeats the question
    assert demo.returncode == 0 and "The user asked: what is this?" in demo.stderr.decode()


def test_an_empty_piped_prompt_is_a_usage_error(cli):
    proc = cli.run(input="  \n")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith("kward: no prompt: standard input was empty")


@pytest.mark.slow
def test_a_failed_turn_exits_1_with_one_line(cli):
    cli.script([[text("partial "), model_error("the model broke", kind="server", status=500)]])
    proc = cli.run("go")
    assert proc.returncode == 1
    assert proc.stdout == b"partial \n"
    lines = proc.stderr.decode().splitlines()
    assert lines[-1].startswith("kward: ") and "the model broke" in lines[-1]
    assert [line for line in lines if line.startswith("kward:")] == [lines[-1]]
    assert cli.session_files() == []


@pytest.mark.slow
def test_not_logged_in_exits_1_with_the_reason(cli):
    with FakeOpenRouter() as fake:  # nothing may reach the real endpoint
        env = {"KWARD_PROVIDER": "codex", "KWARD_CODEX_BASE_URL": fake.base_url}
        proc = cli.run("hello", env=env)
    assert proc.returncode == 1 and proc.stdout == b""
    reasons = [line for line in proc.stderr.decode().splitlines() if not line.startswith("kward: warning: ")]
    assert len(reasons) == 1 and reasons[0].startswith("kward: ") and "log" in reasons[0].lower()


@pytest.mark.slow
def test_a_provider_error_exits_1_and_model_applies_to_this_run_only(cli):
    with FakeOpenRouter() as fake:
        env = {"KWARD_OPENROUTER_BASE_URL": fake.base_url, "OPENROUTER_API_KEY": "sk-or-v1-test0123456789",
               "KWARD_RETRY_DELAYS": ""}
        fake.script("chat", fo.text(["Hi ", "there"]), fo.http_error(500, "upstream exploded"))
        ok = cli.run("--model", "openrouter/acme/model-1", "hello", env=env)
        failed = cli.run("--model=openrouter/acme/model-1", "again", env=env)
        requests = fake.requests("chat")
    assert (ok.returncode, ok.stdout) == (0, b"Hi there\n"), ok.stderr
    assert [r.json["model"] for r in requests] == ["acme/model-1", "acme/model-1"]
    assert failed.returncode == 1 and failed.stdout == b""
    reasons = [line for line in failed.stderr.decode().splitlines() if not line.startswith("kward: warning: ")]
    assert len(reasons) == 1 and reasons[0].startswith("kward: ") and "upstream exploded" in reasons[0]
    assert not (cli.config_dir / "config.json").exists()  # --model wrote nothing


@pytest.mark.slow
def test_ctrl_c_cancels_the_turn_and_exits_130(cli):
    cli.script([[reasoning("tick "), text("partial "), delay(30), text("never")]])
    run = cli.start("wait")
    run.wait_for(b"tick", "err")  # (stdout holds the text until its message ends)
    run.interrupt()
    assert run.finish() == 130
    assert b"never" not in run.out and b"canceling" in run.err
    assert cli.session_files() == []


@pytest.mark.slow
def test_sigterm_ends_the_turn_cleanly(cli):
    cli.script([[reasoning("tick "), text("partial "), delay(30), text("never")]])
    run = cli.start("wait")
    run.wait_for(b"tick", "err")  # (stdout holds the text until its message ends)
    run.proc.terminate()
    assert run.finish() == 143
    assert b"never" not in run.out and b"Traceback" not in run.err
    assert cli.session_files() == []


@pytest.mark.slow
def test_reasoning_is_dim_on_stderr_when_colours_are_forced(cli):
    cli.script([[reasoning("deep thought"), text("answer")]], loop=True)
    forced = cli.run("q", env={"FORCE_COLOR": "1"})
    assert "\x1b[2mdeep thought\x1b[0m" in forced.stderr.decode() and forced.stdout == b"answer\n"
    assert "\x1b[" not in cli.run("q", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stderr.decode()
    assert "\x1b[2m" in cli.run("q", env={"KWARD_COLOR": "always", "NO_COLOR": "1"}).stderr.decode()
    assert "\x1b[" not in cli.run("q", env={"KWARD_COLOR": "never", "FORCE_COLOR": "1"}).stderr.decode()


@pytest.mark.parametrize("args", [["--working-directory", "{ws}"], ["--working-directory={ws}"]])
@pytest.mark.slow
def test_working_directory_changes_where_the_turn_works(cli, args):
    other = cli.home / "elsewhere"
    other.mkdir()
    (other / "marker.txt").write_text("here")
    cli.script([[tool("read_file", path="marker.txt")], [text("done")]])
    proc = cli.run(*[a.format(ws=other) for a in args], "read", "it", cwd=cli.ws)
    assert proc.returncode == 0 and "read marker.txt  ok" in proc.stderr.decode()


@pytest.mark.parametrize("provider, fix", [("codex", "run `kward login`, or set OPENAI_ACCESS_TOKEN"),
                                           ("openrouter", "run `kward login openrouter`, or set OPENROUTER_API_KEY")])
def test_a_turn_without_credentials_fails_in_the_terminals_words(cli, provider, fix):
    proc = cli.run("hi", env={"KWARD_PROVIDER": provider})
    assert proc.returncode == 1
    err = proc.stderr.decode()
    [line] = err.splitlines()
    assert line.startswith("kward: ") and fix in line
    assert "auth/" not in err and "a UI" not in err  # no protocol method names


@pytest.mark.parametrize("args", [("hi",), ("memory", "status"), ("auth", "status")])
def test_a_logged_warning_reads_as_kwards_own_in_every_mode(cli, args):
    # (`kward doctor` changes nothing, so it does not narrow the mode: test_terminal_config_trouble.py;
    # its own logging path is the next test)
    config = cli.config_dir / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("{}")
    config.chmod(0o644)
    cli.script([[text("ok")]])
    proc = cli.run(*args)
    err = proc.stderr.decode()
    assert f"kward: warning: {config} had mode 0644 (wider than 0600); kward set it to 0600\n" in err, err
    assert "WARNING" not in err and "Traceback" not in err


def test_a_warning_logged_in_doctor_reads_as_kwards_own():
    code = ("import logging\nfrom kward import diagnostics\ndiagnostics.log_to_stderr_only()  # (what doctor does)\n"
            "logging.getLogger('kward.x').warning('%s is odd', 'this')\nlogging.getLogger('kward.x').info('not shown')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "kward: warning: this is odd\n")
