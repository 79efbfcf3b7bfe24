"""The `kward` command line.

    kward rpc                       the JSON-RPC backend UI clients start (fast path)
    kward [options] COMMAND ...     rpc, login, logout, auth status, doctor, help [command], version
    kward [options] PROMPT...       one-shot: answer once (also `-- PROMPT`; piped stdin is
                                    attached to the prompt, or is the prompt)
    kward [options]                 interactive, on a terminal

`kward rpc` (what UI clients start, many times a minute) takes a fast path that imports
only what serving the protocol needs: nothing of this module runs before it but
`_hide_credentials` (the credential variables out of the environment block,
`kward.credential_env`; stdlib only) and the argument check. Everything else is parsed here from two tables, `OPTIONS` and `COMMANDS`,
which also make `kward help` (with the slash commands of `kward.terminal.commands`) and
which tests/packaging/test_docs.py checks against the man page.

The grammar (`parse`, `parse_command`), as argparse would have it:

- Options may come anywhere before `--`: `kward "fix it" --model scripted` uses the model.
  After `--` everything is prompt text. An argument is an option when it starts with `-`
  and is not `-` alone, a negative number (`-5`, `-0.5`) or text with a space in it
  (`"-x is a flag"`); an unknown one is refused (exit 2, the message and the usage line
  on stderr), with the advice to put the prompt after `--` when a prompt came first.
- A first word naming a command runs it (`kward -- help me` asks the model); the words
  after it are the command's, with its own options (`COMMAND_OPTIONS`) and `-h`/`--help`
  (the command's help, nothing else done). Global options go before the command.
- `-h`/`--help` and `-v`/`--version` before any prompt word win over what follows (`kward
  -v x` prints the version); after a prompt word they are refused like an unknown option,
  with the `--` advice (obeyed, `explain grep -v` would drop the prompt).
- A command line that is nearly a command (`stauts`, `memroy list`) is refused
  with "did you mean" (exit 2, nothing started); `kward -- stauts` sends it to the model.
  So that real prompts still reach the model, all of this must hold (`near_command`,
  `takes_first`):
  - the first word is all lowercase ASCII letters, begins with the name's first letter,
    is neither a beginning of the name nor the name with letters added at the end (stat,
    memo, logo; doctors, logins, authz are words of their own), and is not in `NOT_TYPOS`
    (status, state(s), start(s), oauth, grpc, rc, pc, docstr, ctor, ...);
  - it is within the edit distance of `edit_distance` (an inserted, dropped or swapped
    letter counts one, a changed letter two: that is how real words differ from the
    names, docker/doctor, state/stats, layout/logout, while mistyped names drop, double
    or swap letters): at most 1 for names of up to 5 letters (help, auth, rpc, stats,
    login: `hello`, `run`, `fix`, `test`, `add`, `docs` match nothing), at most 2 for
    longer ones (doctor, logout, memory, version: `doctr`, `dcotor`, `memroy`);
  - it is alone before `--`, or the word after it is one the command takes first
    (`FIRST_ARGS`: a subcommand, `memroy list`, `stauts tokens`, `auht status`; a provider,
    `logni openrouter`; a command, `hlep doctor`), or an option (`doctr --help`):
    `doctr who` and `stauts of the build` are prompts.
- A value the user gave is quoted back as it is only when it is shaped like what is
  expected there (`looks_like_name`: the provider of `--model`, else "not a provider
  name"); other words quoted back (an option's name, an argument, a path) are masked by
  kward.redact and cut (`shown`), and a `--model` id that looks like a key is refused, so
  a key pasted in the wrong place never reaches the screen.
"""

from __future__ import annotations

import os
import sys

from kward import __version__

#: (flags, value name, summary); flags with a value accept `--flag VALUE` and `--flag=VALUE`.
OPTIONS = (
    ("--working-directory", "DIR", "work in DIR (kward changes to it before anything else)"),
    ("--model", "PROVIDER[/ID]", "use this provider (and model) for this run only"),
    ("--yes", "", "run the model's tool calls without asking (approval mode off for this run)"),
    ("-h, --help", "", "show this help and exit"),
    ("-v, --version", "", "print the version and exit"),
    ("--", "", "end of the options: the rest is the prompt"),
)
VALUE_OPTIONS = {flags: value for flags, value, _ in OPTIONS if value}
FLAG_OPTIONS = frozenset({"--yes"})  # kward's options without a value (beside help and version)

#: name -> (usage, summary, details)
COMMANDS = {
    "rpc": ("rpc [--print-schema | --listen ADDRESS | --connect ADDRESS | --attach [ADDRESS] | --status [ADDRESS]] "
            "[--idle-exit SECONDS]",
            "serve the JSON-RPC protocol on stdin/stdout (for UI clients), or on a Unix socket", None),
    "doctor": ("doctor", "check the config, credentials, keyring, endpoints and config directory",
               "Run checks and print one line each: ok, warn or fail. Exit status 1 when a check\n"
               "failed, else 0. Endpoints are tried with a HEAD request and a 2 s timeout.\n"),
    "login": ("login [openai|openrouter]", "log in to OpenAI in a browser (default), or store an OpenRouter key",
              "openai: prints the login address (and opens a browser when there is one), then waits\n"
              "for the browser to come back to kward, or for the callback address or code pasted\n"
              "on standard input. openrouter: reads the API key from a hidden prompt, or from\n"
              "standard input when it is not a terminal; never from the command line.\n"),
    "logout": ("logout [provider]", "remove the stored credentials of openai, openrouter or both",
               "Environment variables (OPENAI_ACCESS_TOKEN, OPENROUTER_API_KEY) stay in use.\n"),
    "auth": ("auth status", "show where each provider's credentials come from and are kept", None),
    "memory": ("memory [command]", "manage the memory (status, enable, add, core, list, forget and more)",
               "Commands: status (the default), enable, disable, auto-summary enable|disable, core TEXT (a\n"
               "global core memory), add TEXT (a soft memory of this workspace), list [--all], forget ID,\n"
               "promote ID, relax ID, inspect, why. Exit status 2 for a usage error, 1 when it failed.\n"),
    "stats": ("stats tokens [range]", "export token usage from the telemetry logs as CSV (--bucket, --output)",
              "usage: kward stats tokens [N minutes|hours|days|weeks|months|years] (default 1 week)\n"
              "                          [--bucket second|minute|hour|day|week|month|year] [--output PATH]\n"
              "Needs telemetry logging with the tokens category (logging.enabled and logging.tokens, or\n"
              "KWARD_LOGGING=1 KWARD_LOGGING_TOKENS=1). The bucket defaults to the range's unit. Exit\n"
              "status 1 for a usage error or when logging is off.\n"),
    "help": ("help [command]", "show this help, or the help of one command", None),
    "version": ("version", "print the version (also --version, -v)", None),
}

#: `--model` provider names -> (KWARD_PROVIDER value, the variable that sets its model or
#: None, its config key)
MODEL_PROVIDERS = {
    "codex": ("codex", "OPENAI_MODEL", "openai_model"),
    "openrouter": ("openrouter", "OPENROUTER_MODEL", "openrouter_model"),
    "openai-compatible": ("openai-compatible", None, "openai_compat_model"),
    "openaicompatible": ("openai-compatible", None, "openai_compat_model"),
    "scripted": ("scripted", None, "scripted_model"),
}


#: The options of each command beside `-h`/`--help` (flag -> whether it takes a value);
#: a command not named here takes none.
COMMAND_OPTIONS = {
    "memory": {"--all": False},
    "stats": {"--bucket": True, "--output": True},
}

#: The exit status of a usage error of these commands (2 for the others): `kward stats
#: tokens` keeps the original's 1.
USAGE_STATUS = {"stats": 1}

#: Words one or two edits away from a command's name that are words of their own, never
#: taken for a mistyped command (module docstring; some are also spared by the other rules).
NOT_TYPOS = frozenset({"status", "stat", "state", "states", "start", "starts", "oauth", "memo", "memoir", "logo",
                       "loin", "rc", "pc", "grpc", "docstr", "ctor", "dtor"})

#: The words a command takes first (module docstring): a mistyped command followed by one
#: of them is taken for the command; followed by any other word, for a prompt.
FIRST_ARGS = {
    "stats": frozenset({"tokens"}),
    "memory": frozenset({"status", "enable", "disable", "auto-summary", "core", "add", "list", "forget", "promote",
                         "relax", "inspect", "why", "summarize"}),
    "login": frozenset({"openai", "openrouter"}),
    "logout": frozenset({"openai", "openrouter"}),
    "auth": frozenset({"status"}),
    "help": frozenset(COMMANDS),
}

USAGE = "usage: kward [options] [PROMPT... | command]"
HELP_FLAGS = ("-h", "--help")


class UsageError(Exception):
    """The command line does not fit: `message` for the user; `command` the command it is
    about (None: kward's own options)."""

    def __init__(self, message: str, command: str | None = None):
        super().__init__(message)
        self.message = message
        self.command = command

    @property
    def status(self) -> int:
        """The exit status (USAGE_STATUS)."""
        return USAGE_STATUS.get(self.command or "", 2)

    def report(self) -> str:
        """What goes to stderr: the message, then the usage line of the command."""
        who = f"kward {self.command}" if self.command else "kward"
        return f"{who}: {self.message}\n{usage_line(self.command)}\n"


class Misspelled(Exception):
    """The first word is nearly a command's name (see the module docstring)."""

    def __init__(self, word: str, name: str, rest: list[str]):
        super().__init__(word)
        self.word, self.name, self.rest = word, name, rest

    def report(self) -> str:
        import shlex

        from kward.redact import redact_text

        meant = redact_text(shlex.join(["kward", self.name, *self.rest]))
        as_prompt = redact_text(shlex.join(["kward", "--", self.word, *self.rest]))
        return (f"kward: unknown command '{self.word}'; did you mean `{meant}`?\n"
                f"(to send it to the model as a prompt: {as_prompt})\n")


class CommandLine:
    """A parsed command line: kward's `options` (`help` and `version` for -h and -v), the
    `command` named (None: a prompt, or none), and its `args` (a command's arguments, or the
    words of the prompt). A plain class, not a dataclass: `kward rpc` imports this module
    before it answers `initialize`, and dataclasses would bring inspect, ast and more
    (tests/packaging/test_startup.py)."""

    __slots__ = ("options", "command", "args")

    def __init__(self, options: dict[str, str], command: str | None, args: list[str]):
        self.options, self.command, self.args = options, command, args

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CommandLine):
            return NotImplemented
        return (self.options, self.command, self.args) == (other.options, other.command, other.args)

    __hash__ = None  # type: ignore[assignment]  # (mutable, as the dataclass was)

    def __repr__(self) -> str:
        return f"CommandLine(options={self.options!r}, command={self.command!r}, args={self.args!r})"


def usage_line(command: str | None = None) -> str:
    if command is None:
        return USAGE
    if command == "rpc":
        return "usage: kward rpc"
    return f"usage: kward {COMMANDS[command][0]}"


def is_option(arg: str) -> bool:
    """Whether `arg` is meant as an option (module docstring): `-x`, `--frob`, `--model=x`;
    not `-`, `-5`, `-0.5` or `"-x is a flag"`."""
    if not arg.startswith("-") or arg == "-" or " " in arg:
        return False
    number = arg[1:].replace(".", "", 1)
    return not number.isdigit()


def _option_name(arg: str) -> str:
    """An unknown option as quoted back: its name, never a value after `=` (it could be a
    key), masked and cut (`shown`)."""
    return shown(arg.partition("=")[0])


def shown(value: str, limit: int = 40) -> str:
    """`value` (what the user typed) as a message may quote it: secret-looking parts
    masked (kward.redact: sk- keys, JWTs, ...), control characters as `?`, at most `limit`
    characters."""
    from kward.redact import redact_text

    text = "".join(c if c.isprintable() else "?" for c in redact_text(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def looks_like_name(value: str) -> bool:
    """Whether `value` is shaped like a name kward knows (a provider, a command), and so
    may be quoted back as it is: at most 24 characters of letters, digits, `.`, `_` and
    `-`, no run of more than 16 letters and digits (a key or token has longer ones), and
    nothing kward.redact would mask."""
    from kward.redact import redact_text

    if not value or len(value) > 24 or not value.isascii():
        return False
    runs = value.replace(".", " ").replace("_", " ").replace("-", " ").split()
    return (all(run.isalnum() and len(run) <= 16 for run in runs) and value[0].isalnum()
            and redact_text(value) == value)


def edit_distance(a: str, b: str) -> int:
    """The Damerau-Levenshtein distance (optimal string alignment) of `a` and `b`, where
    an insertion, a deletion or a swap of two adjacent letters costs 1 and a substitution
    costs 2 (module docstring)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (0 if a[i - 1] == b[j - 1] else 2))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def near_command(word: str) -> str | None:
    """The command `word` is nearly the name of, or None (module docstring: the rules of
    the word)."""
    if not (word.isascii() and word.isalpha() and word.islower()) or word in COMMANDS or word in NOT_TYPOS:
        return None
    best: tuple[int, str] | None = None
    for name in COMMANDS:
        if word[0] != name[0] or name.startswith(word) or word.startswith(name):
            continue
        distance = edit_distance(word, name)
        if distance <= (1 if len(name) <= 5 else 2) and (best is None or distance < best[0]):
            best = (distance, name)
    return best[1] if best else None


def takes_first(name: str, rest: list[str]) -> bool:
    """Whether the words after a mistyped `name` fit the command (module docstring): none
    before `--`, or the first is one the command takes first, or an option."""
    before = rest[:rest.index("--")] if "--" in rest else rest
    return not before or before[0] in FIRST_ARGS.get(name, ()) or is_option(before[0])


def help_text() -> str:
    from kward.terminal.commands import help_lines, key_lines

    width = max(len(f"{flags} {value}".strip()) for flags, value, _ in OPTIONS)
    column = max(20, *(len(usage) for usage, _, _ in COMMANDS.values()))
    lines = [
        "usage: kward [options] [PROMPT... | command]",
        "",
        f"kward {__version__}: a coding agent. `kward` alone starts an interactive session on",
        "the terminal; `kward PROMPT...` (or a prompt piped on stdin) answers once, printing",
        "only the final answer on stdout; text piped to `kward PROMPT...` is attached to the",
        "prompt. Options may follow the prompt (-h and -v only before it); after `--`",
        "everything is prompt text. UI clients drive kward over JSON-RPC with `kward rpc`.",
        "`kward COMMAND --help` shows the help of a command.",
        "",
        "commands:",
        *(f"  {usage:<{column}} {summary}" for usage, summary, _ in COMMANDS.values()),
        "",
        "options:",
        *(f"  {f'{flags} {value}'.strip():<{width}}  {summary}" for flags, value, summary in OPTIONS),
        "",
        "interactive commands:",
        *help_lines(column),
        "",
        "interactive keys:",
        *key_lines(column),
        "",
        "See kward(1) for the protocol, files and environment variables.",
    ]
    return "\n".join(lines) + "\n"


def _help_for(command: str) -> int:
    if command == "rpc":
        from kward.rpc.main import USAGE

        sys.stdout.write(USAGE)
        return 0
    if command not in COMMANDS:
        sys.stderr.write(f"kward: no help for unknown command: {shown(command)}\n(run `kward help` for the commands)\n")
        return 2
    usage, summary, details = COMMANDS[command]
    sys.stdout.write(f"usage: kward {usage}\n\n{summary[0].upper()}{summary[1:]}.\n"
                     + (f"\n{details}" if details else ""))
    return 0


def _rpc(args: list[str], real_process: bool) -> int:
    from kward.rpc.main import run

    serving = bool(args) and args[0].startswith(("--listen", "--idle-exit", "--connect", "--attach", "--status"))
    if args and args not in (["-h"], ["--help"], ["--print-schema"]) and not serving:
        what = f"unknown option: {_option_name(args[0])}" if is_option(args[0]) else f"unexpected argument: {shown(args[0])}"
        sys.stderr.write(f"kward rpc: {what}\n{usage_line('rpc')}\n")
        return 2
    try:
        code = run(args)
    except Exception as exc:  # a bug outside the server loop: one clear line, no traceback
        from kward.redact import redact_text

        sys.stderr.write(f"kward rpc: internal error: {type(exc).__name__}: {redact_text(str(exc))}\n")
        code = 1
    if real_process:  # the real process: exit now, whatever a stuck thread is doing
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    import logging  # (loaded by `kward rpc`, which this ends; `kward --version` needs none of it)

    logging.shutdown()  # flush the log
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def parse(args: list[str]) -> CommandLine:
    """kward's command line (module docstring). Raises UsageError or Misspelled."""
    options: dict[str, str] = {}
    words: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            words += args[i + 1:]
            break
        advice = " (to send it as text, put the prompt after `--`: kward -- PROMPT...)" if words else ""
        if arg in HELP_FLAGS or arg in ("-v", "--version"):
            if words:  # (obeyed, it would drop the prompt: `explain grep -v`)
                raise UsageError(f"{arg} is an option only before the prompt{advice}")
            options["help" if arg in HELP_FLAGS else "version"] = ""  # wins over anything after it
            break
        if arg in FLAG_OPTIONS:
            options[arg] = ""
        elif is_option(arg):
            name, eq, value = arg.partition("=")
            if name not in VALUE_OPTIONS:
                raise UsageError(f"unknown option: {_option_name(arg)}{advice}")
            if not eq:
                if i + 1 >= len(args):
                    raise UsageError(f"{name} needs a value ({VALUE_OPTIONS[name]})")
                i += 1
                value = args[i]
            if not value:
                raise UsageError(f"{name} needs a value ({VALUE_OPTIONS[name]})")
            options[name] = value
        elif words:
            words.append(arg)
        elif arg in COMMANDS:
            return CommandLine(options, arg, args[i + 1:])
        else:
            near = near_command(arg)
            if near is not None and takes_first(near, args[i + 1:]):
                raise Misspelled(arg, near, args[i + 1:])
            words.append(arg)
        i += 1
    return CommandLine(options, None, words)


def parse_command(command: str, args: list[str]) -> list[str] | None:
    """The arguments of `command` (its own options checked, a `--` taken out), or None
    when they ask for its help. Raises UsageError."""
    known = COMMAND_OPTIONS.get(command, {})
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return out + args[i + 1:]
        if arg in HELP_FLAGS:
            return None
        if is_option(arg):
            name, eq, value = arg.partition("=")
            if name not in known:
                raise UsageError(f"unknown option: {_option_name(arg)}", command)
            if known[name] and not eq:
                if i + 1 >= len(args):
                    raise UsageError(f"{name} needs a value", command)
                out.append(args[i])
                i += 1
            elif not known[name] and eq:
                raise UsageError(f"{name} takes no value", command)
        out.append(args[i])
        i += 1
    return out


def model_env(spec: str) -> dict[str, str]:
    """The in-process server's environment settings for `--model PROVIDER[/ID]`."""
    provider, _, model = spec.partition("/")
    entry = MODEL_PROVIDERS.get(provider.strip().lower())
    if entry is None:  # (a value not shaped like a name is not quoted: it may be a key pasted here)
        what = f"unknown provider {provider!r}" if looks_like_name(provider) else "not a provider name"
        raise UsageError(f"--model: {what} (use codex, openrouter, openai-compatible or scripted, then /ID)")
    key, variable, config_key = entry
    env = {"KWARD_PROVIDER": key}
    if model:
        from kward.redact import redact_text

        if redact_text(model) != model:  # an sk- key, a token: never sent as a model
            raise UsageError("--model: the model id looks like a key or a token, not a model id")
        if variable is None:
            raise UsageError(f"--model: a model for {key} cannot be chosen for one run; give only the provider, "
                             f"or set {config_key} in config.json")
        env[variable] = model
    return env


def main(argv: list[str] | None = None) -> int:
    """The console script (`argv` None: this process's arguments, and it ends the process)."""
    if argv is None:
        _hide_credentials()
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["rpc"]:
        return _rpc(args[1:], argv is None)
    try:
        code = _main(args, argv is None)
    except KeyboardInterrupt:  # Ctrl-C outside a turn (start-up, shutting down)
        sys.stderr.write("\n")
        code = 130
    except SystemExit as exc:  # SIGTERM/SIGHUP in a terminal mode (after its clean-up)
        if argv is not None:
            raise
        code = exc.code if isinstance(exc.code, int) else 1
    if argv is None:
        _exit_now(code)
    return code


def _hide_credentials() -> None:
    """Before anything else: kward's credential variables out of the environment block
    that tools' processes can read (/proc/<pid>/environ) and of the C environ; the values
    stay in os.environ (kward.credential_env)."""
    from kward.credential_env import hide_credentials

    hide_credentials()


def _main(args: list[str], real_process: bool) -> int:
    try:
        line = parse(args)
        command_args = parse_command(line.command, line.args) if line.command is not None else []
        overrides = model_env(line.options["--model"]) if "--model" in line.options else {}
        if "--working-directory" in line.options:
            _change_directory(line.options["--working-directory"])
    except (UsageError, Misspelled) as exc:
        sys.stderr.write(exc.report())
        return exc.status if isinstance(exc, UsageError) else 2
    if line.command is not None:
        if command_args is None:
            return _help_for(line.command)
        return _command(line.command, command_args, overrides, real_process)
    if "help" in line.options:
        sys.stdout.write(help_text())
        return 0
    if "version" in line.options:
        sys.stdout.write(f"kward {__version__}\n")
        return 0
    return _prompt(" ".join(line.args), line.options.get("--model"), overrides, yes="--yes" in line.options)


def _prompt(prompt: str, model: str | None, overrides: dict[str, str], *, yes: bool = False) -> int:
    """One-shot (a prompt, piped input, or both) or, on a terminal, interactive."""
    from kward.terminal import oneshot
    from kward.terminal.host import EnvironmentProblem, Host, fail, terminal_env

    stdin = sys.stdin  # (None when fd 0 is closed: no input)
    if stdin is None or not stdin.isatty():  # (a terminal is never read for attaching)
        try:
            piped = oneshot.read_piped(stdin.buffer) if stdin is not None else oneshot.Piped("", 0, readable=False)
        except oneshot.PipedInputError as exc:
            return fail(str(exc))
        if piped.cut:
            sys.stderr.write(f"kward: {oneshot.cut_note(piped)}\n")
        prompt = oneshot.with_piped(prompt, piped)
        if not prompt:
            why = "was empty" if piped.readable else "is not open for reading"
            return fail(f"no prompt: standard input {why} (run `kward help` for the usage)", 2)
    env = terminal_env(os.environ, overrides)
    cwd = os.getcwd()
    try:
        with Host(env):
            if prompt:
                return oneshot.run(prompt, env, cwd, yes=yes)
            from kward.terminal import interactive

            return interactive.run(env, cwd, model_override=model, yes=yes)
    except EnvironmentProblem as exc:
        return fail(str(exc), 2)


def _command(name: str, args: list[str], overrides: dict[str, str], real_process: bool) -> int:
    if name == "rpc":
        if overrides:
            os.environ.update(overrides)
        return _rpc(args, real_process)
    if name == "help":
        if args:
            return _help_for(args[0])
        sys.stdout.write(help_text())
        return 0
    if name in ("login", "logout", "auth"):
        from kward.terminal import auth
        from kward.terminal.host import terminal_env

        return auth.run(name, args, terminal_env(os.environ, overrides), os.getcwd())
    if name in ("memory", "stats"):
        from kward.terminal.host import EnvironmentProblem, Host, fail, terminal_env

        env = terminal_env(os.environ, overrides)
        try:
            with Host(env):
                if name == "memory":
                    from kward.terminal.memory_view import run_memory_command

                    return run_memory_command(args, env, os.getcwd())
                from kward.terminal.stats_view import run_stats_command

                return run_stats_command(args, env, os.getcwd())
        except EnvironmentProblem as exc:
            return fail(str(exc), 2)
    if args:
        sys.stderr.write(f"kward {name}: unexpected argument: {shown(args[0])}\n(run `kward help {name}` for the usage)\n")
        return 2
    if name == "version":
        sys.stdout.write(f"kward {__version__}\n")
        return 0
    from kward.terminal import doctor
    from kward.terminal.host import terminal_env

    return doctor.run(terminal_env(os.environ, overrides), os.getcwd())


def _change_directory(path: str) -> None:
    target, quoted = os.path.expanduser(path), shown(path, 200)
    if not os.path.exists(target):
        raise UsageError(f"--working-directory: no such directory: {quoted}")
    if not os.path.isdir(target):
        raise UsageError(f"--working-directory: not a directory: {quoted}")
    try:
        os.chdir(target)
    except OSError as exc:
        raise UsageError(f"--working-directory: cannot enter {quoted}: {exc.strerror}") from None
