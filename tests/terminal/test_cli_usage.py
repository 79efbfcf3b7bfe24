"""A command line that helps, through the real `kward` process: `--help` of every command
(nothing else done), unknown options and missing values refused with the usage line,
"did you mean" for a mistyped command (and no false alarm on real prompts), options
after the prompt, `--`. Each refusal exits 2 (1 for `kward stats`, as the original) before anything starts: no config
directory, no session, the model never asked (the script would fail the turn)."""

import pytest

from kward import cli as cli_module
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_openrouter import FakeOpenRouter, text as or_text
from lib.scripts import model_error, text

NEVER_PLAYED = [[model_error("the model must not be asked")]]


def _refused(cli, proc, status: int = 2) -> list[str]:
    """The stderr lines of a refusal, after checking that nothing was started."""
    assert proc.returncode == status and proc.stdout == b"", proc.stderr
    assert not cli.config_dir.exists() and cli.session_files() == []
    return proc.stderr.decode().splitlines()


# --- --help of every command ------------------------------------------------------------

@pytest.mark.parametrize("args, first", [
    (["rpc", "--help"], "usage: kward rpc [--print-schema | --listen ADDRESS | --connect ADDRESS | --attach [ADDRESS] "
                        "| --status [ADDRESS]] [--idle-exit SECONDS]"),
    (["rpc", "-h"], "usage: kward rpc [--print-schema | --listen ADDRESS | --connect ADDRESS | --attach [ADDRESS] "
                    "| --status [ADDRESS]] [--idle-exit SECONDS]"),
    (["doctor", "--help"], "usage: kward doctor"),
    (["doctor", "-h"], "usage: kward doctor"),
    (["login", "--help"], "usage: kward login [openai|openrouter]"),
    (["login", "openrouter", "-h"], "usage: kward login [openai|openrouter]"),
    (["logout", "--help"], "usage: kward logout [provider]"),
    (["auth", "--help"], "usage: kward auth status"),
    (["auth", "status", "--help"], "usage: kward auth status"),
    (["memory", "--help"], "usage: kward memory [command]"),
    (["memory", "add", "--help"], "usage: kward memory [command]"),
    (["memory", "enable", "-h"], "usage: kward memory [command]"),
    (["stats", "--help"], "usage: kward stats tokens [range]"),
    (["stats", "tokens", "--help"], "usage: kward stats tokens [range]"),
    (["help", "--help"], "usage: kward help [command]"),
    (["version", "--help"], "usage: kward version"),
    (["--model", "scripted", "doctor", "--help"], "usage: kward doctor"),
])
def test_every_command_has_its_help_and_does_nothing_else(cli, args, first):
    cli.script(NEVER_PLAYED)
    proc = cli.run(*args, input="sk-or-v1-never-read-0123456789\n")
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    out = proc.stdout.decode()
    assert out.splitlines()[0] == first and len(out.splitlines()) > 2  # the usage, then the details
    assert not cli.config_dir.exists()  # no login started, no memory written, no server


def test_the_help_of_a_command_is_the_one_kward_help_prints(cli):
    assert cli.run("stats", "tokens", "--help").stdout == cli.run("help", "stats").stdout
    assert cli.run("memory", "add", "-h").stdout == cli.run("help", "memory").stdout


def test_a_help_flag_after_double_dash_is_text(cli):
    proc = cli.run("memory", "add", "--", "--help is", "a flag")
    assert proc.returncode == 0 and proc.stdout == b"Added soft memory soft_001.\n", proc.stderr
    assert "] --help is a flag" in cli.run("memory", "list").stdout.decode()


# --- unknown options and missing values --------------------------------------------------

@pytest.mark.parametrize("args, message, usage", [
    (["--frob"], "kward: unknown option: --frob", "usage: kward [options] [PROMPT... | command]"),
    (["-x"], "kward: unknown option: -x", "usage: kward [options] [PROMPT... | command]"),
    (["doctor", "--frob"], "kward doctor: unknown option: --frob", "usage: kward doctor"),
    (["login", "-x"], "kward login: unknown option: -x", "usage: kward login [openai|openrouter]"),
    (["login", "openrouter", "--key=sk-or-v1-secret-0123456789"], "kward login: unknown option: --key",
     "usage: kward login [openai|openrouter]"),
    (["logout", "--all"], "kward logout: unknown option: --all", "usage: kward logout [provider]"),
    (["auth", "status", "--json"], "kward auth: unknown option: --json", "usage: kward auth status"),
    (["memory", "list", "--frob"], "kward memory: unknown option: --frob", "usage: kward memory [command]"),
    (["memory", "list", "--all=yes"], "kward memory: --all takes no value", "usage: kward memory [command]"),
    (["stats", "tokens", "--frob"], "kward stats: unknown option: --frob", "usage: kward stats tokens [range]"),
    (["stats", "tokens", "--bucket"], "kward stats: --bucket needs a value", "usage: kward stats tokens [range]"),
    (["help", "-x"], "kward help: unknown option: -x", "usage: kward help [command]"),
    (["version", "--frob"], "kward version: unknown option: --frob", "usage: kward version"),
    (["rpc", "--frob"], "kward rpc: unknown option: --frob", "usage: kward rpc"),
    (["--model"], "kward: --model needs a value (PROVIDER[/ID])", "usage: kward [options] [PROMPT... | command]"),
    (["fix", "it", "--working-directory"], "kward: --working-directory needs a value (DIR)",
     "usage: kward [options] [PROMPT... | command]"),
])
def test_an_unknown_option_or_a_missing_value_is_refused_with_the_usage(cli, args, message, usage):
    cli.script(NEVER_PLAYED)
    lines = _refused(cli, cli.run(*args), 1 if args[0] == "stats" else 2)  # (the original's status for stats)
    assert lines == [message, usage]
    assert "secret" not in "\n".join(lines)  # a value after `=` is never quoted back (it may be a key)


@pytest.mark.parametrize("args, option", [
    (["fix", "it", "-x"], "-x"),
    (["fix it", "--frob", "now"], "--frob"),
    (["--model", "scripted", "explain", "--verbose"], "--verbose"),
])
def test_an_unknown_option_after_the_prompt_says_to_put_the_prompt_after_double_dash(cli, args, option):
    cli.script(NEVER_PLAYED)
    [message, usage] = _refused(cli, cli.run(*args))
    assert message.startswith(f"kward: unknown option: {option} ") and "put the prompt after `--`" in message
    assert usage == cli_module.USAGE


# --- did you mean ---------------------------------------------------------------------

@pytest.mark.parametrize("options, words, suggestion", [
    ([], ["stauts"], "kward stats"),
    ([], ["doctr"], "kward doctor"),
    ([], ["logni"], "kward login"),
    ([], ["logni", "openrouter"], "kward login openrouter"),
    ([], ["memroy", "list"], "kward memory list"),
    (["--model", "scripted"], ["dcotor"], "kward doctor"),
    ([], ["hlep"], "kward help"),
    ([], ["hlep", "doctor"], "kward help doctor"),
    ([], ["stauts", "tokens"], "kward stats tokens"),
    ([], ["stauts", "tokens", "2", "days"], "kward stats tokens 2 days"),
    ([], ["memroy", "add", "buy", "milk"], "kward memory add buy milk"),
    ([], ["auht", "status"], "kward auth status"),
    ([], ["doctr", "--help"], "kward doctor --help"),
])
def test_a_mistyped_command_asks_did_you_mean_and_starts_nothing(cli, options, words, suggestion):
    cli.script(NEVER_PLAYED)
    lines = _refused(cli, cli.run(*options, *words, input="not read\n"))
    assert lines == [f"kward: unknown command '{words[0]}'; did you mean `{suggestion}`?",
                     f"(to send it to the model as a prompt: kward -- {' '.join(words)})"]


@pytest.mark.parametrize("args", [["--", "stauts"], ["hello"], ["run", "tests"], ["fix", "the", "build"],
                                  ["test"], ["add", "a", "test"], ["docs"], ["docker", "fails"], ["start"],
                                  ["state", "machine"], ["Stauts"], ["stauts!"]])
def test_real_prompts_and_double_dash_go_to_the_model(cli, args):
    cli.script([[text("answered")]])
    proc = cli.run(*args)
    assert (proc.returncode, proc.stdout) == (0, b"answered\n"), proc.stderr


@pytest.mark.parametrize("word, name", [("stauts", "stats"), ("sttas", "stats"), ("stast", "stats"),
                                        ("doctr", "doctor"), ("dcotor", "doctor"), ("docotr", "doctor"),
                                        ("logni", "login"), ("logn", "login"), ("memroy", "memory"),
                                        ("memry", "memory"), ("verison", "version"), ("logotu", "logout"),
                                        ("hepl", "help"), ("auht", "auth"), ("rcp", "rpc")])
def test_near_command_finds_dropped_doubled_and_swapped_letters(word, name):
    assert cli_module.near_command(word) == name


@pytest.mark.parametrize("word", ["hello", "help", "run", "fix", "test", "tests", "add", "docs", "start", "state",
                                  "docker", "factor", "layout", "begin", "logic", "person", "auto", "held",
                                  "explain", "refactor", "review", "Stauts", "stauts2", "doc-tor", "sta ts",
                                  # the words the review found taken for commands
                                  "status", "stat", "states", "starts", "oauth", "memo", "logo", "rc", "pc", "grpc",
                                  "docstr", "ctor",
                                  # a beginning of a name, or a name with letters added, is a word of its own
                                  "vers", "docto", "memor", "doctors", "helps", "logins", "logouts", "versions",
                                  "authz", "authn", "rpcs",
                                  # another first letter
                                  "whelp", "aversion", "inversion", "dtor", "sauth"])
def test_near_command_leaves_real_words_alone(word):
    assert cli_module.near_command(word) is None


# ~300 words a one-word or a short prompt may begin with: none is taken for a command.
COMMON_WORDS = """
    a about add again all also and api apply are array assert async audit audio auto await awk back backoff bar
    baz be bash benchmark blame blog body bool branch bug bugs build bump but byte bytes cache can cargo cert change
    changelog char chart check checkout class clean cli client clock clone close closure cloud cmake code color
    commit compile compose config configure constant constructor continue copy count cpu crash create cron css csv
    ctor cursor data date debug decorator delete deploy design destructor dict diff dir directory do doc docker
    docs docstr docstring doctest doctype document does done draw dtor edit else error errors event example
    exception explain export express fetch file files find fix fixme fixture float flask folder font foo for
    format from function gc get getter git go gradle graph grep group grpc hack header hello help here hey hi
    home host how html icon idea if image import in index init install int into ipc is issue it iterator java job
    json key keys kubernetes lambda layout leak let lint linux list load lock log logging logic logo logs look
    loop mac make map maven memo memoir merge method migrate mock mode model module mongo move my mysql need
    network new next nginx no node not note notes now npm of ok okay on open optimize or pass password patch path
    pc perl pip plan please plot pointer port postgres print profile proxy pull push python query queue rc react
    read readme rebase redis redo refactor release remove rename render request reset response rest retry return
    revert review revision root ruby run rust save schedule schema scope search secret security seed server
    session set setter setup shell should show sort spec speed sql sqlite src stack stage start starts stash stat
    state states static status step stop string stub style summarize summary swap table tag task tasks test
    tests the theme this thread time timeout to todo token toml trace tree tuple type types undo unix update
    upgrade url use user users variable video vue wait warning what when where why windows with worker world
    write xml yaml yes yield you
"""


def test_common_words_get_no_suggestion():
    words = COMMON_WORDS.split()
    assert len(set(words)) >= 300
    assert {w: cli_module.near_command(w) for w in words if w not in cli_module.COMMANDS
            and cli_module.near_command(w)} == {}


@pytest.mark.parametrize("args", [["stat", "tokens"], ["oauth", "flow"], ["grpc", "vs", "rest"], ["memo"], ["logo"],
                                  ["status"], ["stauts", "of", "the", "build"], ["doctr", "who"],
                                  ["logni", "fails", "on", "ci"], ["memroy", "leak"], ["hlep", "me"]])
def test_a_near_word_with_words_the_command_does_not_take_goes_to_the_model(cli, args):
    cli.script([[text("answered")]])
    proc = cli.run(*args)
    assert (proc.returncode, proc.stdout) == (0, b"answered\n"), proc.stderr


def test_edit_distance_counts_a_changed_letter_twice():
    d = cli_module.edit_distance
    assert (d("stats", "stats"), d("stauts", "stats"), d("logni", "login"), d("doctr", "doctor")) == (0, 1, 1, 1)
    assert (d("state", "stats"), d("docker", "doctor"), d("hello", "help"), d("", "rpc")) == (2, 4, 3, 3)


# --- options after the prompt, `--`, `-` ----------------------------------------------

def test_an_option_after_the_prompt_is_an_option(cli):
    with FakeOpenRouter() as fake:
        fake.script("chat", or_text(["routed"]))
        env = {"KWARD_PROVIDER": "codex", "KWARD_OPENROUTER_BASE_URL": fake.base_url,
               "OPENROUTER_API_KEY": "sk-or-v1-test0123456789"}
        proc = cli.run("fix it", "--model", "openrouter/acme/model-1", "-", "-5", env=env)
        [request] = fake.requests("chat")
    assert (proc.returncode, proc.stdout) == (0, b"routed\n"), proc.stderr
    assert request.json["model"] == "acme/model-1"
    assert request.json["messages"][-1]["content"] == "fix it - -5"  # a lone `-` and a number are text


def test_everything_after_double_dash_is_prompt_text(cli):
    with FakeOpenRouter() as fake:
        fake.script("chat", or_text(["ok"]))
        env = {"KWARD_OPENROUTER_BASE_URL": fake.base_url, "OPENROUTER_API_KEY": "sk-or-v1-test0123456789"}
        proc = cli.run("explain", "--model=openrouter/acme/m", "--", "--model", "-x", "doctor", env=env)
        [request] = fake.requests("chat")
    assert (proc.returncode, proc.stdout) == (0, b"ok\n"), proc.stderr
    assert request.json["model"] == "acme/m" and request.json["messages"][-1]["content"] == "explain --model -x doctor"


@pytest.mark.parametrize("arg, option", [("-", False), ("-5", False), ("-0.5", False), ("-.5", False),
                                         ("-x is a flag", False), ("x", False), ("-x", True), ("--frob", True),
                                         ("--model=a", True), ("-5x", True)])
def test_what_counts_as_an_option(arg, option):
    assert cli_module.is_option(arg) is option


# --- -h and -v after the prompt (review finding 5) ------------------------------------------

@pytest.mark.parametrize("args, flag", [
    (["explain", "grep", "-v"], "-v"),
    (["how", "do", "I", "use", "ls", "-h"], "-h"),
    (["what", "does", "--help", "print"], "--help"),
    (["fix", "--version"], "--version"),
    (["--model", "scripted", "explain", "-v"], "-v"),
])
def test_help_and_version_after_the_prompt_are_refused_with_the_double_dash_advice(cli, args, flag):
    cli.script(NEVER_PLAYED)
    [message, usage] = _refused(cli, cli.run(*args))
    assert message.startswith(f"kward: {flag} ") and "put the prompt after `--`: kward -- PROMPT..." in message
    assert usage == cli_module.USAGE


@pytest.mark.parametrize("args, first", [(["-v"], "kward "), (["--version", "x"], "kward "),
                                         (["-h"], "usage: kward"), (["--model", "scripted", "--help", "x"],
                                                                    "usage: kward")])
def test_help_and_version_before_any_prompt_word_work_as_before(cli, args, first):
    proc = cli.run(*args)
    assert proc.returncode == 0 and proc.stderr == b"" and proc.stdout.decode().startswith(first)


def test_help_and_version_after_double_dash_are_prompt_text(cli):
    cli.script([[text("answered")]])
    proc = cli.run("--", "explain", "grep", "-v")
    assert (proc.returncode, proc.stdout) == (0, b"answered\n"), proc.stderr


# --- values quoted back (review finding 2) --------------------------------------------------

OPENROUTER_KEY = "sk-or-v1-abcdef1234567890abcdef1234567890"
OPENAI_TOKEN = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXBhcnQ"


@pytest.mark.parametrize("secret", [OPENROUTER_KEY, OPENAI_TOKEN])
@pytest.mark.parametrize("args", [
    ["--model", "{s}", "hi"],
    ["--model={s}", "hi"],
    ["--model", "codex/{s}", "hi"],
    ["--model", "openrouter/{s}", "hi"],
    ["--working-directory", "/nonexistent/{s}", "hi"],
    ["--{s}"],
    ["-{s}"],
    ["fix", "--{s}"],
    ["doctor", "{s}"],
    ["doctor", "--{s}"],
    ["version", "{s}"],
    ["help", "{s}"],
    ["rpc", "{s}"],
    ["rpc", "--{s}"],
    ["memory", "list", "--{s}"],
])
def test_a_secret_given_on_the_command_line_is_never_quoted_back(cli, secret, args):
    cli.script(NEVER_PLAYED)
    proc = cli.run(*[a.format(s=secret) for a in args])
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"" and err, err
    assert secret not in err and secret[:16] not in err and "Traceback" not in err


def test_a_value_shaped_like_what_the_option_takes_is_quoted_back(cli):
    for value, shown in (("gpt-5.5", "'gpt-5.5'"), ("nowhere/x", "'nowhere'"), ("anthropic", "'anthropic'")):
        proc = cli.run("--model", value, "hi")
        assert proc.returncode == 2 and f"kward: --model: unknown provider {shown} " in proc.stderr.decode()
    proc = cli.run("--model", "ghp_0123456789abcdefghijABCDEFGHIJ", "hi")  # no known mask, but not a name
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "ghp_" not in err and err.startswith("kward: --model: not a provider name")
