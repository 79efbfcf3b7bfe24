"""The `kward` command line: `kward rpc` for UI clients, plus version and help.

`kward rpc` (the sole command that UI clients start) takes a fast path that imports only
what serving the protocol needs.
"""

from __future__ import annotations

import os
import sys

from kward import __version__

HELP = f"""usage: kward <command> [options]

kward {__version__}: a coding agent. UI clients drive it over JSON-RPC.

commands:
  rpc              serve the JSON-RPC protocol on stdin/stdout
  help             show this help
  version          print the version

options:
  -h, --help       show this help
  -v, --version    print the version

See kward(1) for the protocol, files and environment variables.
"""


COMMAND_HELP = {
    "version": "usage: kward version\n\nPrint the version (also: kward --version, kward -v).\n",
    "help": "usage: kward help [command]\n\nShow the commands, or the help of one command.\n",
}


def _help_for(command: str) -> int:
    if command == "rpc":
        from kward.rpc.main import USAGE

        sys.stdout.write(USAGE)
        return 0
    text = COMMAND_HELP.get(command)
    if text is None:
        sys.stderr.write(f"kward: no help for unknown command: {command}\n(run `kward help` for the commands)\n")
        return 2
    sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["rpc"]:
        from kward.rpc.main import run

        try:
            code = run(args[1:])
        except Exception as exc:  # a bug outside the server loop: one clear line, no traceback
            from kward.redact import redact_text

            sys.stderr.write(f"kward rpc: internal error: {type(exc).__name__}: {redact_text(str(exc))}\n")
            code = 1
        if argv is None:  # the real process: exit now, whatever a stuck thread is doing
            import logging

            logging.shutdown()
            sys.stderr.flush()
            os._exit(code)
        return code
    if args[:1] == ["help"] and len(args) > 1:
        return _help_for(args[1])
    if not args or args[0] in ("help", "-h", "--help"):
        sys.stdout.write(HELP)
        return 0 if args else 2
    if args[0] in ("version", "-v", "--version"):
        sys.stdout.write(f"kward {__version__}\n")
        return 0
    sys.stderr.write(f"kward: unknown command: {args[0]}\n(run `kward --help` for the commands)\n")
    return 2
