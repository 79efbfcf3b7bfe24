"""A lean protocol peer for the bench tools: a `kward rpc` child (or any program speaking
the same framing) driven over its pipes, with nothing but the standard library.

It relies on the wire protocol only (docs/protocol.md), never on kward's Python API, so the
same code drives old commits of the tree, the working tree and tools/floor_list.py alike.

- Every message read is stamped with `time.perf_counter()` the moment its frame is
  complete; reading is synchronous (`select` + `os.read`), no reader thread, so nothing
  hands a message over between threads before it is stamped or seen.
- Responses are matched by `id`, turn events by their `sessionId`/`turnId`; messages read
  while waiting for something else are kept (in order) for later waits.
- `close()` closes stdin (EOF: the server stops), reads stdout to its end and reaps the
  child with `os.wait4`, so its CPU time (user + sys) is known without counting other
  children; `kill()` ends a child that misbehaves. A Peer used as a context manager is
  always reaped.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

Message = dict[str, Any]

# Variables a caller's environment may hold that would change what kward does.
_DROPPED = ("PYTHONPATH", "PYTHONHOME", "OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY", "KWARD_PROVIDER",
            "KWARD_LOG_LEVEL", "KWARD_SCRIPT", "KWARD_CONFIG_PATH", "KWARD_AUTH_PATH", "KWARD_NO_WARMUP",
            "KWARD_RPC_WORKERS", "KWARD_MODEL", "OPENAI_MODEL", "PYTHONDONTWRITEBYTECODE")


class PeerError(RuntimeError):
    """The child did not answer as expected (timeout, end of output, an error response)."""


def clean_env(home: Path, config_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """An environment that knows nothing of the checkout or the user: HOME is `home`,
    the config dir `config_dir` (default `home/.kward`), keyring's fail backend (no
    credential store is touched), no provider keys."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    config_dir = config_dir or home / ".kward"
    env.update(HOME=str(home), KWARD_CONFIG_PATH=str(config_dir / "config.json"),
               PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    env.update(extra)
    return env


def frame(obj: Message) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request_frame(rid: int, method: str, params: dict | None = None) -> bytes:
    msg: Message = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return frame(msg)


class Peer:
    """One child process. `t_spawn` is taken right before it is started, `t_exit` right
    after it was reaped; `rusage` is its `resource.struct_rusage` once reaped."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path):
        self._stderr = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=env, cwd=cwd, bufsize=0)
        self.pid = self.proc.pid
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buf = bytearray()
        self._eof = False
        self.pending: list[tuple[float, Message]] = []
        self.next_id = 0
        self.t_exit: float | None = None
        self.rusage: Any = None

    # --- writing ---------------------------------------------------------------------

    def write(self, data: bytes) -> float:
        """Write all of `data` to the child's stdin; the time the write began."""
        t = time.perf_counter()
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view):]
        return t

    def send(self, method: str, params: dict | None = None) -> tuple[int, float]:
        """Write one request; (its id, the time it was written)."""
        self.next_id += 1
        return self.next_id, self.write(request_frame(self.next_id, method, params))

    # --- reading ---------------------------------------------------------------------

    def _parse(self) -> Message | None:
        """The next complete frame in the buffer, removed from it; None when incomplete."""
        buf = self._buf
        while buf[:2] == b"\r\n" or buf[:1] == b"\n":  # blank lines between frames
            del buf[:2 if buf[:1] == b"\r" else 1]
        found = [(i, n) for i, n in ((buf.find(b"\r\n\r\n"), 4), (buf.find(b"\n\n"), 2)) if i >= 0]
        if not found:
            return None
        end, sep = min(found)
        length = None
        for line in bytes(buf[:end]).splitlines():
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise PeerError(f"frame without Content-Length: {bytes(buf[:end])!r}")
        if len(buf) < end + sep + length:
            return None
        body = bytes(buf[end + sep:end + sep + length])
        del buf[:end + sep + length]
        return json.loads(body)

    def read(self, deadline: float) -> tuple[float, Message]:
        """The next message from the child and the time it was complete."""
        while True:
            msg = self._parse()
            if msg is not None:
                return time.perf_counter(), msg
            if self._eof:
                raise PeerError(f"the child's output ended{self._stderr_tail()}")
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self._out], [], [], left)[0]:
                raise PeerError("timed out waiting for the child")
            chunk = os.read(self._out, 1 << 16)
            if chunk:
                self._buf += chunk
            else:
                self._eof = True

    def wait(self, match: Callable[[Message], bool], timeout: float = 60) -> tuple[float, Message]:
        """The first message (kept from earlier reads, or read now) that `match` accepts,
        with its arrival time; the others are kept, in order."""
        for i, (t, msg) in enumerate(self.pending):
            if match(msg):
                del self.pending[i]
                return t, msg
        deadline = time.perf_counter() + timeout
        while True:
            t, msg = self.read(deadline)
            if match(msg):
                return t, msg
            self.pending.append((t, msg))

    def response(self, rid: int, timeout: float = 60) -> tuple[float, Any]:
        """(arrival time, result) of the response to request `rid`; PeerError for an error."""
        t, msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)
        if "error" in msg:
            raise PeerError(f"request {rid} failed: {msg['error'].get('message')}")
        return t, msg.get("result")

    def call(self, method: str, params: dict | None = None, timeout: float = 60) -> Any:
        rid, _ = self.send(method, params)
        return self.response(rid, timeout)[1]

    def turn_event(self, session_id: str, kind: str | None = None, timeout: float = 60) -> tuple[float, Message]:
        """The next `turn/event` notification of a session (of type `kind` when given)."""
        def match(m: Message) -> bool:
            p = m.get("params") or {}
            return (m.get("method") == "turn/event" and p.get("sessionId") == session_id
                    and (kind is None or p.get("type") == kind))
        return self.wait(match, timeout)

    def _stderr_tail(self) -> str:
        """The child's last stderr line (a traceback's exception), for error messages."""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return f"; its stderr ends: {lines[-1][-300:]}" if lines else ""

    # --- ending ----------------------------------------------------------------------

    def _reap(self) -> None:
        _, status, self.rusage = os.wait4(self.pid, 0)
        self.t_exit = time.perf_counter()
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        self._stderr.close()

    def close(self, timeout: float = 30) -> int:
        """EOF on stdin, read stdout to its end, reap; the exit code."""
        if self.t_exit is not None:
            return self.proc.returncode
        self.proc.stdin.close()
        deadline = time.perf_counter() + timeout
        try:
            while not self._eof:
                left = deadline - time.perf_counter()
                if left <= 0 or not select.select([self._out], [], [], left)[0]:
                    raise PeerError("the child did not end its output after EOF")
                chunk = os.read(self._out, 1 << 16)
                self._buf += chunk
                self._eof = not chunk
        except PeerError:
            self.kill()
            raise
        self._reap()
        return self.proc.returncode

    def kill(self) -> None:
        if self.t_exit is None:
            if not self.proc.stdin.closed:
                self.proc.stdin.close()
            os.kill(self.pid, signal.SIGKILL)  # not Popen.kill(): its poll() could reap the child before wait4
            self._reap()

    @property
    def cpu(self) -> float:
        """User + system CPU seconds of the reaped child."""
        return self.rusage.ru_utime + self.rusage.ru_stime

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.kill()
