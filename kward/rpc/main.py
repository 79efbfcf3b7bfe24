"""`kward rpc`: claim stdio for the protocol, set up logging and signals, serve.

Runs on the main thread. Started with stdin on a terminal (a person, not a UI with pipes)
it first prints one line on stderr, `TERMINAL_NOTE`: what it speaks and where that is
documented. Before serving it checks the environment (`rules.ENV`: a bad value exits 2
with one stderr line naming the variable) and removes the temp files that killed
processes left in the config directory. stdin and stdout are duplicated to private
descriptors for the protocol and the originals are pointed at /dev/null, so neither a
stray `print`, a library writing to fd 1, nor a child process can touch the protocol
streams; `sys.stdout` becomes a logger (`diagnostics.StrayOutput`).

The cyclic garbage collector is off while the server is set up: the modules and objects
made then live as long as the process, and the collections their allocations trigger
would only walk them. They are moved to the collector's permanent generation
(`gc.freeze`) and the collector is turned back on before the first message is read.
"""

from __future__ import annotations

import gc
import io
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from kward import diagnostics
from kward.errors import ConfigError
from kward.fsutil import remove_stale_temps
from kward.processes import children as procs
from kward.redact import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.method_table import MethodTable
    from kward.rpc.server import RpcServer

USAGE = ("usage: kward rpc [--print-schema | --listen ADDRESS | --connect ADDRESS | --attach [ADDRESS] | --status "
         "[ADDRESS]] [--idle-exit SECONDS]\n\n"
         "Serve the kward JSON-RPC protocol on stdin/stdout (see kward(1)).\n"
         "  --print-schema         print the protocol's JSON Schema (docs/protocol.schema.json) and exit\n"
         "  --listen ADDRESS       serve on ADDRESS instead: stdio:// (the default), unix:// (the default\n"
         "                         socket under the config directory) or unix://PATH, for several clients\n"
         "  --idle-exit SECONDS    a listening server exits after this long with no client and no turn\n"
         "                         (default 600)\n"
         "  --connect ADDRESS      relay stdin/stdout to the server listening at ADDRESS (unix://...)\n"
         "  --attach [ADDRESS]     the same, starting that server first when none listens (default unix://;\n"
         "                         with --idle-exit, the server it starts exits after that long idle)\n"
         "  --status [ADDRESS]     whether a server listens at ADDRESS (default unix://): its pid,\n"
         "                         connections and active turns\n")
#: The one line `kward rpc` prints on stderr when stdin is a terminal (a person, not a UI).
TERMINAL_NOTE = ("kward rpc: this is the backend UI clients start: it speaks JSON-RPC 2.0 on stdin/stdout, "
                 "each message framed with a Content-Length header as in LSP (see `man kward`, section RPC MODE, "
                 "and docs/protocol.md); run `kward` alone for the terminal UI, Ctrl-D to quit\n")


def _claim_stdio() -> tuple[io.BufferedReader, io.FileIO]:
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = diagnostics.StrayOutput()
    return io.BufferedReader(io.FileIO(proto_in, "rb"), buffer_size=256 * 1024), io.FileIO(proto_out, "wb")


def run(argv: list[str], *, methods: "MethodTable | None" = None) -> int:
    """`kward rpc` with `argv` (after `rpc`); `methods` is the table served (default:
    kward.rpc.method_table.METHODS; a test serves its own)."""
    if argv in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if argv == ["--print-schema"]:
        from kward.rpc import schema

        sys.stdout.write(schema.dumps())
        return 0
    try:
        options = _options(argv)
    except ValueError as exc:
        sys.stderr.write(f"kward rpc: {exc}\n{USAGE}")
        return 2
    if "status" in options:
        from kward.rpc import bridge

        return bridge.status(options["status"])
    if "connect" in options or "attach" in options:
        from kward.rpc import bridge

        attach = "attach" in options
        return bridge.run(options.get("attach") or options.get("connect") or "unix://", attach=attach,
                          rpc_args=argv, idle_exit=options.get("idle_exit"))
    if options.get("listen", "stdio://") != "stdio://":
        return _listen(options["listen"], options.get("idle_exit"), methods)
    if "idle_exit" in options:
        sys.stderr.write(f"kward rpc: --idle-exit is for a listening server (--listen unix://...)\n{USAGE}")
        return 2
    if os.isatty(0):  # a person at a terminal, not a UI with pipes
        sys.stderr.write(TERMINAL_NOTE)
        sys.stderr.flush()
    collecting = gc.isenabled()
    gc.disable()  # (module docstring)
    try:
        server = _build(methods)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
    if server is None:
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: server.stop_now())
    procs.own_descendants()
    try:
        return server.serve()
    finally:  # every way out (shutdown, EOF, a signal): nothing a tool started outlives us
        procs.end_descendants()


def _options(argv: list[str]) -> dict[str, Any]:
    """``--listen ADDRESS``, ``--idle-exit SECONDS``, ``--connect ADDRESS`` and ``--attach
    [ADDRESS]`` (also as ``--name=value``), one way of serving at most."""
    options: dict[str, Any] = {}
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name not in ("--listen", "--idle-exit", "--connect", "--attach", "--status"):
            raise ValueError(f"unexpected argument: {arg}")
        if name in ("--attach", "--status") and not eq:
            value = args.pop(0) if args and not args[0].startswith("--") else ""
            options[name[2:]] = value
            continue
        if not eq:
            if not args:
                raise ValueError(f"{name} needs a value")
            value = args.pop(0)
        if name in ("--listen", "--connect", "--attach", "--status"):
            options[name[2:]] = value
        else:
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not 0 < seconds <= 30 * 86400 or seconds != seconds:
                raise ValueError(f"--idle-exit must be a number of seconds above 0 (at most 30 days), not {value!r}")
            options["idle_exit"] = seconds
    if len({"listen", "connect", "attach", "status"} & set(options)) > 1:
        raise ValueError("--listen, --connect, --attach and --status do not go together")
    if "idle_exit" in options and "status" in options:
        raise ValueError("--idle-exit is for a listening server (--listen, or the one --attach starts)")
    if "idle_exit" in options and "connect" in options:
        raise ValueError("--idle-exit is for a listening server (--listen, or the one --attach starts)")
    return options


def _listen(address: str, idle_exit: float | None, methods: "MethodTable | None") -> int:
    """`kward rpc --listen unix://...`: serve clients on a Unix socket until shutdown, a
    signal or `idle_exit` seconds without a client or a turn."""
    from kward.rpc import compose
    from kward.rpc.listen import AddressError, ListenError, default_socket, listen, parse_address

    diagnostics.hold_early_records()
    try:
        setup = compose.resolve(os.environ)
    except ConfigError as exc:
        sys.stderr.write(f"kward rpc: {redact_text(exc.message)}\n")
        return 2
    try:
        where = parse_address(address, setup.paths.config_dir)
        assert where.path is not None
        listener = listen(where.path, narrow_dir=where.path == default_socket(setup.paths.config_dir))
    except (AddressError, ListenError) as exc:
        sys.stderr.write(f"kward rpc: {exc.args[-1] if isinstance(exc, OSError) else exc}\n")
        return 1
    remove_stale_temps(setup.paths.config_dir)
    diagnostics.configure(setup.paths.logs_dir, setup.settings.log_level, rpc_mode=True, secrets=setup.secrets)
    sys.stdout = diagnostics.StrayOutput()
    daemon = compose.build_daemon(listener, where.path, setup, methods=methods, idle_exit=idle_exit)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: daemon.stop())
    procs.own_descendants()
    try:
        return daemon.serve()
    finally:
        procs.end_descendants()


def _build(methods: "MethodTable | None") -> "RpcServer | None":
    """The server over the claimed stdio, or None after reporting a bad environment."""
    from kward.rpc import compose

    diagnostics.hold_early_records()  # reading the config may warn before the log is set up
    try:
        setup = compose.resolve(os.environ)  # checks every KWARD_* value kward reads
    except ConfigError as exc:  # a bad environment variable: one line naming it, exit 2
        sys.stderr.write(f"kward rpc: {redact_text(exc.message)}\n")
        return None
    remove_stale_temps(setup.paths.config_dir)  # config.json copies a SIGKILL left
    diagnostics.configure(setup.paths.logs_dir, setup.settings.log_level, rpc_mode=True, secrets=setup.secrets)
    stdin, stdout = _claim_stdio()
    return compose.build_server(stdin, stdout, setup, methods=methods)
