"""`kward rpc --connect unix://PATH` and `kward rpc --attach [unix://PATH]`: a stdio client of a
listening server, for a UI that can only start `kward rpc` and talk to its stdin/stdout.

The bridge relays frames both ways, their bodies unchanged (read with the protocol's frame
reader, written with its encoder: one frame per write, so the two directions never tear a
frame). `--attach` first starts a listening server when none answers at the path (its
own session and process group, stdio on /dev/null, exiting after its idle time), then
bridges, so the backend outlives the UI's window: a UI that goes away (its stdin ends, or
it kills the bridge) leaves the server and its turns running, and the next bridge
attaches to them.

Exit status: 0 when the UI's input ended, the bridge was told to stop (SIGTERM, SIGINT,
SIGHUP), or the server went away after answering a `shutdown` the UI sent; 1 with one
line on stderr when the server cannot be reached or goes away otherwise.

Threads: the main thread relays the server's frames to stdout (and is where signals
land); the ``kward-bridge-up`` thread relays stdin to the socket. Both end when either
side does; the up thread is a daemon (a blocked read of stdin cannot be interrupted).
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import BinaryIO

from kward.rpc.framing import FrameFault, FrameReader, encode_frame

START_WAIT = 15.0  # seconds a started server gets to accept
MAX_FRAME = 1 << 30


class BridgeError(Exception):
    """The server cannot be reached (the message says why)."""


def connect(path: str) -> socket.socket:
    from kward.rpc.listen import connect as connect_unix

    try:
        return connect_unix(path, timeout=5.0)
    except FileNotFoundError:
        raise BridgeError(f"no kward server listens on {path} (start one with kward rpc --listen)") from None
    except ConnectionRefusedError:
        raise BridgeError(f"no kward server answers on {path} (a stale socket)") from None
    except OSError as exc:
        raise BridgeError(f"cannot connect to {path}: {exc.strerror or exc}") from None


def start_server(path: str, rpc_args: list[str], idle_exit: float | None = None) -> None:
    """Start `kward rpc --listen unix://PATH [--idle-exit S]` in the background (this
    process's own command line, as Python was started, up to `rpc_args`) and wait until it
    accepts."""
    argv = list(getattr(sys, "orig_argv", []) or [sys.executable, "-m", "kward", "rpc", *rpc_args])
    tail = ["rpc", *rpc_args]
    cut = len(argv) - len(tail)
    prefix = argv[:cut] if cut >= 1 and argv[cut:] == tail else [sys.executable, "-m", "kward"]
    command = [sys.executable, *prefix[1:], "rpc", "--listen", f"unix://{path}",
               *(["--idle-exit", repr(idle_exit)] if idle_exit is not None else [])]
    with open(os.devnull, "r+b") as devnull:
        subprocess.Popen(command, stdin=devnull, stdout=devnull, stderr=devnull, start_new_session=True,
                         close_fds=True)
    deadline = time.monotonic() + START_WAIT
    pause = threading.Event()
    while True:
        try:
            connect(path).close()
            return
        except BridgeError:
            if time.monotonic() > deadline:
                raise BridgeError(f"started a kward server for {path}, but it did not answer in {START_WAIT:g} s "
                                  f"(see ~/.kward/logs/kward.log)") from None
            pause.wait(0.02)


class Bridge:
    def __init__(self, sock: socket.socket, stdin: BinaryIO, stdout: BinaryIO):
        self.sock = sock
        self.stdin = stdin
        self.stdout = stdout
        self.input_ended = threading.Event()
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._shutdown_ids: set[str] = set()
        self.shutdown_answered = False

    def stop(self) -> None:
        """Signal-safe enough: wake the relay by shutting the socket down."""
        self.stopped.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _up(self) -> None:
        frames = FrameReader(self.stdin, MAX_FRAME)
        while True:
            try:
                body = frames.read()
            except OSError:  # stdin broke: the UI is gone, as at its end
                body = None
            if body is None:
                break
            if isinstance(body, FrameFault):  # (a broken frame of the UI's: dropped)
                continue
            self._note_shutdown(body)
            try:
                self.sock.sendall(encode_frame(body))
            except OSError:  # the server went away: the relay down ends and says so
                return
        self.input_ended.set()
        try:
            self.sock.shutdown(socket.SHUT_WR)  # the server sees the UI's end of input
        except OSError:
            pass

    def _note_shutdown(self, body: bytes) -> None:
        if b'"shutdown"' not in body:
            return
        try:
            message = json.loads(body)
        except ValueError:
            return
        if isinstance(message, dict) and message.get("method") == "shutdown" and "id" in message:
            with self._lock:
                self._shutdown_ids.add(json.dumps(message["id"]))

    def _answered_shutdown(self, body: bytes) -> None:
        with self._lock:
            if not self._shutdown_ids:
                return
        try:
            message = json.loads(body)
        except ValueError:
            return
        if isinstance(message, dict) and "result" in message:
            with self._lock:
                if json.dumps(message.get("id")) in self._shutdown_ids:
                    self.shutdown_answered = True

    def run(self) -> int:
        up = threading.Thread(target=self._up, name="kward-bridge-up", daemon=True)
        up.start()
        frames = FrameReader(self.sock.makefile("rb"), MAX_FRAME)
        try:
            while True:
                body = frames.read()
                if body is None or isinstance(body, FrameFault):
                    break
                self._answered_shutdown(body)
                data = memoryview(encode_frame(body))
                while data:
                    written = self.stdout.write(data)
                    data = data[written if written is not None else len(data):]
        except OSError:
            pass
        try:
            self.stdout.flush()
        except OSError:
            pass
        self.sock.close()
        if self.stopped.is_set() or self.input_ended.is_set() or self.shutdown_answered:
            return 0
        return 1


def _socket_path(address: str, option: str) -> str | None:
    """The socket path `address` names (``unix://`` alone: the default one), or None after
    saying on stderr why there is none."""
    from kward.config.store import resolve_paths
    from kward.rpc.listen import AddressError, parse_address

    try:
        where = parse_address(address or "unix://", resolve_paths(os.environ).config_dir)
    except AddressError as exc:
        sys.stderr.write(f"kward rpc: {exc}\n")
        return None
    if where.path is None:
        sys.stderr.write(f"kward rpc: {option} needs a unix:// address\n")
    return where.path


def status(address: str) -> int:
    """`kward rpc --status [ADDRESS]`: one line; 0 when a server listens there, else 1."""
    from kward.client.socket_transport import server_status

    path = _socket_path(address, "--status")
    if path is None:
        return 1
    listening, line = server_status(path)
    (sys.stdout if listening else sys.stderr).write(("" if listening else "kward rpc: ") + line + "\n")
    return 0 if listening else 1


def run(address: str, *, attach: bool, rpc_args: list[str], idle_exit: float | None = None) -> int:
    """The bridge's `kward rpc` (see the module doc)."""
    path = _socket_path(address, "--attach" if attach else "--connect")
    if path is None:
        return 1
    try:
        try:
            sock = connect(path)
        except BridgeError:
            if not attach:
                raise
            start_server(path, rpc_args, idle_exit)
            sock = connect(path)
    except BridgeError as exc:
        sys.stderr.write(f"kward rpc: {exc}\n")
        return 1
    stdin = io.BufferedReader(io.FileIO(os.dup(0), "rb"), buffer_size=256 * 1024)
    stdout = io.FileIO(os.dup(1), "wb")
    bridge = Bridge(sock, stdin, stdout)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: bridge.stop())
    code = bridge.run()
    if code:
        sys.stderr.write(f"kward rpc: the kward server at {path} went away\n")
    return code
