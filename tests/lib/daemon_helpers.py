"""A listening `kward rpc --listen unix://PATH` for tests, and clients on its socket.

`Daemon(home, ws, script=...)` starts the server as a child (the Scripted provider, its
stderr collected) and waits until its socket accepts; `connect()` gives a `SocketClient`:
the strict, recording test client (`lib.rpc_client.FrameClient`) over one connection, with
the helpers turn tests use (`session`, `start`, `wait_event`, `finish`). `stop()` sends
SIGTERM and reaps the child; its exit status and stderr are kept for the test to check.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from lib.rpc_client import FrameClient, kward_command, kward_env, spawn_kward
from lib.scripts import text, write_script
from lib.turn_events import turn_events, wait_event, wait_turn
from lib.waiting import wait_until


class SocketClient(FrameClient):
    """One connection to a listening kward."""

    def __init__(self, path: str, ws: Path | None = None):
        self.ws = ws
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self._gone = threading.Event()
        super().__init__(self.sock.makefile("wb", buffering=0), self.sock.makefile("rb"),  # type: ignore[arg-type]
                         wait_server=self._wait, stop_server=self.drop)

    def _wait(self, timeout: float) -> int | None:
        return 0 if self._gone.wait(timeout) else None

    def drop(self) -> None:
        """Go away at once, as a crashed UI does (no EOF courtesy)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._gone.set()

    def close(self, timeout: float = 5.0) -> int:  # type: ignore[override]
        self.drop()
        FrameClient.close(self, timeout)
        self.sock.close()
        return 0

    # --- what turn tests use --------------------------------------------------------

    def session(self, **params: Any) -> dict:
        return self.request("sessions/create", {"workspaceRoot": str(self.ws), **params})

    def start(self, session_id: str, input: str = "go", **params: Any) -> dict:
        return self.request("turns/start", {"sessionId": session_id, "input": input, **params})

    def wait_event(self, turn_id: str, type_: str, timeout: float = 20.0) -> dict:
        return wait_event(self, turn_id, type_, timeout)

    def finish(self, turn_id: str, timeout: float = 20.0) -> list[dict]:
        return wait_turn(self, turn_id, timeout)

    def events(self, turn_id: str | None = None) -> list[dict]:
        return turn_events(self, turn_id)


class Daemon:
    """`kward rpc --listen unix://<home>/kward.sock` running in workspace `ws`."""

    def __init__(self, home: Path, ws: Path, steps: list | None = None, *, idle_exit: float | None = None,
                 env: dict[str, str] | None = None, path: Path | None = None, extra: list[str] | None = None):
        self.home, self.ws = home, ws
        self.path = str(path or home / "run" / "kward.sock")
        script = write_script(home / "scripts", steps if steps is not None else [[text("ok")]])
        self.env = kward_env(home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script), **(env or {}))
        args = ["--listen", f"unix://{self.path}", *(["--idle-exit", str(idle_exit)] if idle_exit else []),
                *(extra or [])]
        self.proc = spawn_kward(home, cwd=ws, env=self.env, argv=kward_command(None, *args))
        self.clients: list[SocketClient] = []
        self._err: list[bytes] = []
        self._err_reader = threading.Thread(target=lambda: self._err.extend(iter(
            lambda: self.proc.stderr.read1(65536), b"")), daemon=True)
        self._err_reader.start()
        wait_until(lambda: self._accepts() or self.proc.poll() is not None, 20, "the socket to accept")
        assert self.proc.poll() is None, f"kward --listen exited: {self.stderr}"

    def _accepts(self) -> bool:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.path)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    @property
    def stderr(self) -> str:
        return b"".join(self._err).decode("utf-8", "replace")

    def connect(self) -> SocketClient:
        client = SocketClient(self.path, self.ws)
        self.clients.append(client)
        return client

    def wait_exit(self, timeout: float = 20.0) -> int:
        code = self.proc.wait(timeout)
        self._err_reader.join(timeout)
        return code

    def stop(self, timeout: float = 20.0) -> int:
        for client in self.clients:
            try:
                client.close()
            except Exception:  # (a test's broken client must not leave the server running)
                pass
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.wait_exit(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
