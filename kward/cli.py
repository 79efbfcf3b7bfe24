"""The `kward` command line.

    kward rpc                       the JSON-RPC backend UI clients start (fast path)
    kward [options] COMMAND ...     rpc, login, logout, auth status, doctor, help [command], version
    kward [options] PROMPT...       one-shot: answer once (also `-- PROMPT`, or piped stdin)
    kward [options]                 interactive, on a terminal

`kward rpc` (what UI clients start, many times a minute) takes a fast path that imports
only what serving the protocol needs: nothing of this module runs before it but
`_hide_credentials` (the credential variables out of the environment block,
`kward.credential_env`; stdlib only) and the argument check. Everything else is parsed here from two tables, `OPTIONS` and `COMMANDS`,
which also make `kward help` (with the slash commands of `kward.terminal.commands`) and
which tests/packaging/test_docs.py checks against the man page. Options come before the command or
the prompt; a command name takes precedence over a prompt (`kward -- help me` asks the
model).
"""

from __future__ import annotations

import os
import sys

from kward import __version__

#: (flags, value name, summary); flags with a value accept `--flag VALUE` and `--flag=VALUE`.
OPTIONS = (
    ("--working-directory", "DIR", "work in DIR (kward changes to it before anything else)"),
    ("--model", "PROVIDER[/ID]", "use this provider (and model) for this run only"),
    ("-h, --help", "", "show this help and exit"),
    ("-v, --version", "", "print the version and exit"),
    ("--", "", "end of the options: the rest is the prompt"),
)
VALUE_OPTIONS = {flags: value for flags, value, _ in OPTIONS if value}

#: name -> (usage, summary, details)
COMMANDS = {
    "rpc": ("rpc", "serve the JSON-RPC protocol on stdin/stdout (for UI clients)", None),
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


class UsageError(Exception):
    pass


def help_text() -> str:
    from kward.terminal.commands import help_lines

    width = max(len(f"{flags} {value}".strip()) for flags, value, _ in OPTIONS)
    column = max(20, *(len(usage) for usage, _, _ in COMMANDS.values()))
    lines = [
        "usage: kward [options] [PROMPT... | command]",
        "",
        f"kward {__version__}: a coding agent. `kward` alone starts an interactive session on",
        "the terminal; `kward PROMPT...` (or a prompt piped on stdin) answers once, printing",
        "only the answer on stdout. UI clients drive kward over JSON-RPC with `kward rpc`.",
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
        "See kward(1) for the protocol, files and environment variables.",
    ]
    return "\n".join(lines) + "\n"


def _help_for(command: str) -> int:
    if command == "rpc":
        from kward.rpc.main import USAGE

        sys.stdout.write(USAGE)
        return 0
    if command not in COMMANDS:
        sys.stderr.write(f"kward: no help for unknown command: {command}\n(run `kward help` for the commands)\n")
        return 2
    usage, summary, details = COMMANDS[command]
    sys.stdout.write(f"usage: kward {usage}\n\n{summary[0].upper()}{summary[1:]}.\n"
                     + (f"\n{details}" if details else ""))
    return 0


def _rpc(args: list[str], real_process: bool) -> int:
    from kward.rpc.main import run

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


def parse(args: list[str]) -> tuple[dict[str, str], list[str], bool]:
    """(options, the rest, whether `--` ended the options). Raises UsageError; `-h` and
    `-v` come back as the options "help" and "version"."""
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return options, args[i + 1:], True
        if arg in ("-h", "--help"):
            options["help"] = ""
            return options, args[i + 1:], False
        if arg in ("-v", "--version"):
            options["version"] = ""
            return options, args[i + 1:], False
        name, eq, value = arg.partition("=")
        if name in VALUE_OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    raise UsageError(f"{name} needs a value ({VALUE_OPTIONS[name]})")
                i += 1
                value = args[i]
            if not value:
                raise UsageError(f"{name} needs a value ({VALUE_OPTIONS[name]})")
            options[name] = value
            i += 1
            continue
        if arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option: {arg}")
        break
    return options, args[i:], False


def model_env(spec: str) -> dict[str, str]:
    """The in-process server's environment settings for `--model PROVIDER[/ID]`."""
    provider, _, model = spec.partition("/")
    entry = MODEL_PROVIDERS.get(provider.strip().lower())
    if entry is None:
        raise UsageError(f"--model: unknown provider {provider!r} (use codex, openrouter, openai-compatible or "
                         "scripted, then /ID)")
    key, variable, config_key = entry
    env = {"KWARD_PROVIDER": key}
    if model:
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
        options, rest, dashdash = parse(args)
        overrides = model_env(options["--model"]) if "--model" in options else {}
        if "--working-directory" in options:
            _change_directory(options["--working-directory"])
    except UsageError as exc:
        sys.stderr.write(f"kward: {exc}\n(run `kward help` for the usage)\n")
        return 2
    if "help" in options:
        sys.stdout.write(help_text())
        return 0
    if "version" in options:
        sys.stdout.write(f"kward {__version__}\n")
        return 0
    if rest and not dashdash and rest[0] in COMMANDS:
        return _command(rest[0], rest[1:], overrides, real_process)
    from kward.terminal.host import EnvironmentProblem, Host, fail, terminal_env

    env = terminal_env(os.environ, overrides)
    cwd = os.getcwd()
    try:
        with Host(env):
            if rest:
                from kward.terminal import oneshot

                return oneshot.run(" ".join(rest), env, cwd)
            if not sys.stdin.isatty():
                from kward.terminal import oneshot

                prompt = oneshot.read_piped_prompt()
                if not prompt:
                    return fail("no prompt: standard input was empty (run `kward help` for the usage)", 2)
                return oneshot.run(prompt, env, cwd)
            from kward.terminal import interactive

            return interactive.run(env, cwd, model_override=options.get("--model"))
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
        sys.stderr.write(f"kward {name}: unexpected argument: {args[0]}\n(run `kward help {name}` for the usage)\n")
        return 2
    if name == "version":
        sys.stdout.write(f"kward {__version__}\n")
        return 0
    from kward.terminal import doctor
    from kward.terminal.host import terminal_env

    return doctor.run(terminal_env(os.environ, overrides), os.getcwd())


def _change_directory(path: str) -> None:
    target = os.path.expanduser(path)
    if not os.path.exists(target):
        raise UsageError(f"--working-directory: no such directory: {path}")
    if not os.path.isdir(target):
        raise UsageError(f"--working-directory: not a directory: {path}")
    try:
        os.chdir(target)
    except OSError as exc:
        raise UsageError(f"--working-directory: cannot enter {path}: {exc.strerror}") from None
