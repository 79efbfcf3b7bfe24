"""A test client that drives the real `kward rpc` subprocess over pipes.

A background thread parses every frame on the child's stdout (failing loudly on any byte
that is not a frame) and routes responses by id and notifications into a list that tests
wait on with conditions and timeouts, never sleeps.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]


def frame(obj: Any) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class RpcError(Exception):
    def __init__(self, error: dict):
        super().__init__(error.get("message"))
        self.error = error
        self.code = error.get("code")
        self.reason = (error.get("data") or {}).get("reason")


def kward_env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        "KWARD_CONFIG_PATH": str(home / ".kward" / "config.json"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    })
    for key in ("OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY", "KWARD_PROVIDER", "KWARD_LOG_LEVEL"):
        env.pop(key, None)
    env.update(extra)
    return env


class FrameClient:
    """Speaks frames over a pair of binary streams (`to_server`, `from_server`)."""

    def __init__(self, to_server, from_server):
        self._to_server = to_server
        self._from_server = from_server
        self._cond = threading.Condition()
        self._responses: dict[Any, dict] = {}
        self.response_counts: collections.Counter[str] = collections.Counter()  # by json.dumps(id)
        self.notifications: list[dict] = []
        self.bodies: list[bytes] = []  # every frame body received, as sent
        self.null_id_errors: list[dict] = []
        self.protocol_errors: list[str] = []
        self.stdout_closed = False
        self._next_id = 0
        self._stderr_chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # --- io ---------------------------------------------------------------------------

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr_chunks).decode("utf-8", "replace")

    def _read_loop(self) -> None:
        out = self._from_server
        try:
            while True:
                header = b""
                while not header.endswith(b"\r\n\r\n"):
                    b = out.read(1)
                    if not b:
                        if header:
                            self.protocol_errors.append(f"EOF inside a header: {header!r}")
                        return
                    header += b
                    if len(header) > 200:
                        self.protocol_errors.append(f"not a frame on stdout: {header!r}")
                        return
                lines = header.decode("ascii").strip().split("\r\n")
                if len(lines) != 1 or not lines[0].startswith("Content-Length: "):
                    self.protocol_errors.append(f"bad frame header: {header!r}")
                    return
                n = int(lines[0].split(": ", 1)[1])
                body = out.read(n)
                if len(body) != n:
                    self.protocol_errors.append("EOF inside a body")
                    return
                self.bodies.append(body)
                try:
                    msg = json.loads(body.decode("utf-8"), parse_constant=_not_json)
                except ValueError:
                    self.protocol_errors.append(f"a frame body that is not UTF-8 JSON: {body[:200]!r}")
                    return
                if not isinstance(msg, dict):
                    self.protocol_errors.append(f"a frame body that is not an object: {body[:200]!r}")
                    return
                with self._cond:
                    if "id" in msg and ("result" in msg or "error" in msg):
                        if msg["id"] is None:
                            self.null_id_errors.append(msg)
                        else:
                            self._responses[json.dumps(msg["id"])] = msg
                            self.response_counts[json.dumps(msg["id"])] += 1
                    elif "method" in msg and "id" not in msg:
                        self.notifications.append(msg)
                    else:
                        self.protocol_errors.append(f"unexpected message: {msg!r}")
                    self._cond.notify_all()
        finally:
            with self._cond:
                self.stdout_closed = True
                self._cond.notify_all()

    def write(self, data: bytes) -> None:
        self._to_server.write(data)
        self._to_server.flush()

    def send(self, method: str, params: Any = None, *, id: Any = "auto", **extra: Any) -> Any:
        """Send a request (or a notification with id=None); returns the id used."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if id == "auto":
            self._next_id += 1
            id = self._next_id
        if id is not None:
            msg["id"] = id
        if params is not None:
            msg["params"] = params
        msg.update(extra)
        self.write(frame(msg))
        return id

    # --- waiting ----------------------------------------------------------------------

    def wait(self, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition",
             poll: float | None = None) -> Any:
        """Wait until `predicate()` is truthy, re-checking at every incoming frame, and every
        `poll` seconds for conditions no frame announces (a file written by a child)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"timed out waiting for {what}; stderr={self.stderr[-2000:]!r}")
                self._cond.wait(min(remaining, poll) if poll else remaining)

    def response(self, id: Any, timeout: float = 10.0) -> dict:
        key = json.dumps(id)
        return self.wait(lambda: self._responses.pop(key, None), timeout, f"response {id!r}")

    def request(self, method: str, params: Any = None, timeout: float = 10.0, **extra: Any) -> Any:
        """Send a request and return its result; raises RpcError on an error response."""
        msg = self.response(self.send(method, params, **extra), timeout)
        if "error" in msg:
            raise RpcError(msg["error"])
        return msg["result"]

    def error(self, method: str, params: Any = None, timeout: float = 10.0) -> RpcError:
        try:
            result = self.request(method, params, timeout)
        except RpcError as exc:
            return exc
        raise AssertionError(f"{method} succeeded unexpectedly: {result!r}")

    def wait_notification(self, predicate: Callable[[dict], bool], timeout: float = 10.0) -> dict:
        def find():
            for n in self.notifications:
                if predicate(n):
                    return n
            return None

        return self.wait(find, timeout, "notification")



class RpcClient(FrameClient):
    """One `kward rpc` child. Use as a context manager; `close()` ends it (EOF) and reaps it."""

    def __init__(self, home: Path, cwd: Path | None = None, env: dict[str, str] | None = None,
                 args: list[str] | None = None, argv: list[str] | None = None):
        self.home = home
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "kward", "rpc", *(args or [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(cwd or home), env=env or kward_env(home),
        )
        super().__init__(self.proc.stdin, self.proc.stdout)
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self._stderr_chunks.append(chunk)

    # --- lifecycle --------------------------------------------------------------------

    def close_stdin(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def wait_exit(self, timeout: float = 10.0) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        self._err_reader.join(timeout)
        return code

    def close(self) -> int:
        self.close_stdin()
        try:
            return self.wait_exit()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "RpcClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()
