"""`Client.connect("unix://PATH")`: a client of a listening server (`kward rpc --listen`),
and the helpers a client that comes back after a crash or a reload uses.

A connection's end is this client's only: `close()` shuts its side of the socket (the
server sees the end of its input and ends the connection; the turns it started go on
unless `initialize` asked for ``closeBehavior: "cancelTurns"``), waits for the server to
close its side, then closes the socket. `catch_up(client, session_id, seen)` attaches to a
session and returns the events the client missed, turn by turn after the last sequence it
saw; events after the attach arrive as notifications, so with `seen` kept up to date a
client gets every event once (drop a notification whose sequence it already has).

Thread contract: as `Client`'s (the socket is written under its write lock).
"""

from __future__ import annotations

import os
import socket
import threading
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from kward.client.connection import Client
    from kward.rpc.shapes.envelopes import TurnEvent
    from kward.rpc.shapes.turns import SessionsAttachResult


def connect(cls: type[Client], address: str, *, config_dir: str | os.PathLike[str] | None = None,
            timeout: float = 5.0) -> Client:
    """A Client on the server listening at `address` (``unix://PATH``, or ``unix://`` for
    the default socket of `config_dir`, default the config directory of this process's
    environment). Raises OSError (no server, refused, timed out) or ValueError (an
    address that is not unix://)."""
    from kward.rpc.listen import AddressError, connect as connect_unix, parse_address

    if config_dir is None:
        from kward.config.store import resolve_paths

        config_dir = resolve_paths(os.environ).config_dir
    try:
        where = parse_address(address, config_dir)
    except AddressError as exc:
        raise ValueError(str(exc)) from None
    if where.path is None:
        raise ValueError("Client.connect takes a unix:// address (stdio servers: Client.spawn)")
    sock = connect_unix(where.path, timeout=timeout)
    gone = threading.Event()
    made: list[Client] = []

    def wait(seconds: float) -> int | None:
        """The server closed its side (the client's reader saw the end), or was stopped."""
        if made and not gone.is_set():
            made[0]._reader.join(seconds)
            if not made[0]._reader.is_alive():
                gone.set()
        return 0 if gone.wait(0 if made else seconds) else None

    def stop() -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        gone.set()

    def release() -> None:
        gone.set()
        sock.close()

    client = cls(_HalfCloser(sock), sock.makefile("rb", buffering=256 * 1024), wait_server=wait,  # type: ignore[arg-type]
                 stop_server=stop, release=release)
    made.append(client)
    client.socket = sock
    client.address = f"unix://{where.path}"
    return client


def reconnect(client: Client, *, wait: float = 10.0) -> Client:
    """A new Client on the address `client` was connected to, trying for up to `wait`
    seconds (a server being started again); `client` is closed first. Raises OSError when
    none answers in time. The new client is not initialized."""
    import time

    if client.address is None:
        raise ValueError("only a client made by Client.connect can reconnect")
    try:
        client.close(timeout=1.0)
    except OSError:
        pass
    deadline = time.monotonic() + wait
    pause = threading.Event()
    while True:
        try:
            return connect(type(client), client.address, timeout=max(0.1, min(2.0, deadline - time.monotonic())))
        except OSError:
            if time.monotonic() >= deadline:
                raise
            pause.wait(0.05)


class _HalfCloser:
    """The socket's writing side as a binary stream whose `close()` shuts only the writing
    half (the server then sees the end of its input and ends the connection)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock

    def write(self, data: bytes | memoryview) -> int:
        self._sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def default_address(config_dir: str | os.PathLike[str]) -> str:
    """The default socket's path of a config directory (`kward rpc --listen unix://`)."""
    from kward.rpc.listen import default_socket

    return default_socket(config_dir)


def server_status(path: str, timeout: float = 2.0) -> tuple[bool, str]:
    """(listening, one line) about the server at socket `path`: its pid, connections and
    active turns (`kward rpc --status`, `kward doctor`)."""
    from kward.client.connection import Client

    try:
        client = Client.connect(f"unix://{path}", timeout=timeout)
    except FileNotFoundError:
        return False, f"no kward server listens on {path} (start one with kward rpc --listen)"
    except ConnectionRefusedError:
        return False, f"no kward server answers on {path} (a stale socket)"
    except OSError as exc:
        return False, f"cannot connect to {path}: {exc.strerror or exc}"
    try:
        info: Any = client.request("$/ping", timeout=timeout)
    except Exception as exc:  # (an error answer, a timeout, the server gone)
        return False, f"the kward server at {path} did not answer: {exc}"
    finally:
        client.close(timeout=timeout)
    connections, turns = info.get("connections"), info.get("activeTurns")
    return True, (f"listening on {path}: pid {info.get('pid')}, {connections} connection"
                  f"{'' if connections == 1 else 's'}, {turns} active turn{'' if turns == 1 else 's'}")


def catch_up(client: Client, session_id: str, seen: Mapping[str, int] | None = None,
             timeout: float | None = 30.0) -> tuple[SessionsAttachResult, list[TurnEvent]]:
    """Attach to `session_id` and fetch what was missed: for each of its turns the events
    after `seen[turn id]` (the last sequence the client had; a turn not in `seen`: all its
    kept events). Returns the attach answer and those events, turn by turn in sequence."""
    attached: Any = client.request("sessions/attach", {"sessionId": session_id}, timeout=timeout)
    missed: list[Any] = []
    for turn in attached["turns"]:
        after = (seen or {}).get(turn["id"], 0)
        if turn["lastSequence"] > after:
            missed += client.turn_events(turn["id"], after, timeout=timeout)["events"]
    return attached, missed
