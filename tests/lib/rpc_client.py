"""The test client of the kward protocol and the one launcher of `kward` for tests.

`RpcClient` is `kward.client.Client` (same frame reader, writer, threads and close) over a
`kward rpc` child started by `kward_command` (the checkout, an installed console script or
a zipapp), made strict and observable for tests: every byte the server writes must be a
well-formed frame (`Content-Length: N\\r\\n\\r\\n` and N bytes of JSON-object body, nothing
else), anything else lands in `protocol_errors`; every body, response (by id, counted) and
notification is recorded, and tests wait on them with conditions and timeouts, never
sleeps. `send`/`write` let tests choose ids and write raw bytes; `frame` is the one encoder
of well-formed frames (tests that write malformed frames on purpose build those by hand).

Threads: the client's reader thread records under `_cond` and wakes waiters; tests read the
recorded lists from their own thread (take `_cond` or copy with `list(...)`).
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
from typing import Any, BinaryIO, Callable

from kward import client as kward_client
from kward.rpc.framing import FrameFault, encode_frame
from lib.paths import REPO
from lib.traffic import Traffic



def frame(obj: Any) -> bytes:
    """One well-formed frame: of `obj` as JSON (ASCII, so lone surrogates survive), or of a
    body given as bytes."""
    return encode_frame(obj if isinstance(obj, bytes) else json.dumps(obj).encode("utf-8"))


def kward_argv(target: str | os.PathLike | None = None, *, python_flags: tuple[str, ...] = ()) -> list[str]:
    """The argv of the `kward` command, before its subcommand: None runs the checkout with
    this interpreter (`kward_env` puts the checkout on PYTHONPATH); a path ending in `.pyz`
    is a zipapp run by this interpreter without site-packages (`-S`); any other path is an
    installed `kward` console script. `python_flags` (such as ``("-X", "importtime")``) go
    to the interpreter, so they need the checkout or a zipapp."""
    if target is None:
        return [sys.executable, *python_flags, "-m", "kward"]
    if str(target).endswith(".pyz"):
        return [sys.executable, "-S", *python_flags, str(target)]
    if python_flags:
        raise ValueError("interpreter flags need the checkout or a zipapp, not a console script")
    return [str(target)]


def kward_command(target: str | os.PathLike | None = None, *args: str, python_flags: tuple[str, ...] = ()) -> list[str]:
    """The argv that starts `kward rpc` (then `args`) from `target` (see `kward_argv`). With
    `VIA_ATTACH` set in the environment (tests/rpc/test_attach_bridge.py runs a part of the
    suite so), a plain `kward rpc` of the checkout is `kward rpc --attach`: a bridge to the
    listening server of the test's config directory, started by the first one."""
    if not args and target is None and os.environ.get(VIA_ATTACH):
        args = ("--attach", "--idle-exit", os.environ[VIA_ATTACH])
    return [*kward_argv(target, python_flags=python_flags), "rpc", *args]


#: the variable that sends the tests' `kward rpc` through `--attach` (its value: the started
#: server's --idle-exit seconds)
VIA_ATTACH = "KWARD_TESTS_VIA_ATTACH"


def spawn_kward(home: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None,
                argv: list[str] | None = None, stdin: Any = subprocess.PIPE) -> "subprocess.Popen[bytes]":
    """The one launcher: `argv` (default `kward_command()`; the terminal CLI's tests pass
    `kward_argv()` and their arguments) with pipes on stdout and stderr and `stdin` (a pipe
    by default), run in `cwd` (default `home`) with `env` (default `kward_env(home)`). Tests
    that must not read its output as it comes (back-pressure) use the process as it is; the
    others talk to it through RpcClient (or, for the CLI, `lib.cli_helpers`)."""
    return subprocess.Popen(argv or kward_command(), stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=str(cwd or home), env=env or kward_env(home))


def imported_modules(importtime_stderr: str) -> set[str]:
    """The modules a `python -X importtime` run's stderr lists as imported."""
    return {line.rsplit("|", 1)[-1].strip() for line in importtime_stderr.splitlines() if "|" in line}


def modules_after_initialize(home: Path) -> set[str]:
    """The modules a whole `kward rpc` process imports when it is sent `initialize` and
    `shutdown` (and nothing else); it must answer both and exit 0."""
    msgs = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize"}) + \
        frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    p = subprocess.run(kward_command(python_flags=("-X", "importtime")), input=msgs,
                       capture_output=True, env=kward_env(home), timeout=30)
    assert p.returncode == 0 and p.stdout.count(b"Content-Length") == 2
    return imported_modules(p.stderr.decode())


def limited_command(nofile: int, argv: list[str] | None = None) -> list[str]:
    """`argv` (default: the checkout's `kward rpc`) started with a soft and hard
    RLIMIT_NOFILE of `nofile` (like ``ulimit -n``), set in the child before it execs."""
    code = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (%d, %d)); "
            "os.execvp(sys.argv[1], sys.argv[1:])" % (nofile, nofile))
    return [sys.executable, "-c", code, *(argv or kward_command())]


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class RpcError(kward_client.RpcError):
    """kward.client's RpcError plus `error`, the whole error object; str() is its message."""

    def __init__(self, error: dict):
        super().__init__(error)
        self.error = error

    def __str__(self) -> str:
        return str(self.error.get("message"))


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


class _Tee:
    """The server's output stream, keeping a copy of the bytes read since the last `take`
    (what one frame was made of)."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.raw = bytearray()

    def readline(self, limit: int = -1) -> bytes:
        data = self._stream.readline(limit)
        self.raw += data
        return data

    def read(self, n: int = -1) -> bytes:
        data = self._stream.read(n)
        self.raw += data
        return data

    def take(self) -> bytes:
        data, self.raw = bytes(self.raw), bytearray()
        return data

    def close(self) -> None:
        self._stream.close()


class _Recorded:
    """The stream to the server, telling `traffic` what is written to it."""

    def __init__(self, stream: BinaryIO, traffic: Traffic):
        self._stream = stream
        self._traffic = traffic

    def write(self, data: bytes) -> int:
        self._traffic.sent(bytes(data))
        return self._stream.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class FrameClient(kward_client.Client):
    """A kward.client.Client over a pair of binary streams, strict and recording (see the
    module docstring)."""

    def __init__(self, to_server: BinaryIO, from_server: BinaryIO, *, wait_server: Callable[[float], int | None],
                 stop_server: Callable[[], None]):
        self._cond = threading.Condition()
        self._responses: dict[Any, dict] = {}
        self.response_counts: collections.Counter[str] = collections.Counter()  # by json.dumps(id)
        self.notifications: list[dict] = []  # (shadows Client.notifications(): use subscribe())
        self.server_requests: list[dict] = []  # requests the server sent (answered by on_request's handler, if any)
        self.bodies: list[bytes] = []  # every frame body received, as sent
        self.null_id_errors: list[dict] = []
        self.protocol_errors: list[str] = []
        self.stdout_closed = False
        self._stderr_chunks: list[bytes] = []
        self._tee = _Tee(from_server)
        self.traffic = Traffic()  # checked against the schema (lib.traffic)
        to_server = _Recorded(to_server, self.traffic)
        super().__init__(to_server, self._tee, wait_server=wait_server, stop_server=stop_server)  # type: ignore[arg-type]

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr_chunks).decode("utf-8", "replace")

    # --- the reader thread's hooks -----------------------------------------------------

    def _decode(self, body: bytes | FrameFault) -> dict[str, Any] | None:
        raw = self._tee.take()
        if isinstance(body, FrameFault):
            self._protocol_error(f"not a frame on stdout ({body.reason}): {raw[:200]!r}")
            return None
        if raw != encode_frame(body):
            self._protocol_error(f"bad frame header: {raw[:200]!r}")
        self.bodies.append(body)
        try:
            msg = json.loads(body.decode("utf-8"), parse_constant=_not_json)
        except ValueError:
            self._protocol_error(f"a frame body that is not UTF-8 JSON: {body[:200]!r}")
            return None
        if not isinstance(msg, dict):
            self._protocol_error(f"a frame body that is not an object: {body[:200]!r}")
            return None
        self.traffic.received(msg)
        return msg

    def _route(self, msg: dict[str, Any]) -> None:
        with self._cond:
            if "id" in msg and ("result" in msg or "error" in msg):
                if msg["id"] is None:
                    self.null_id_errors.append(msg)
                else:
                    self._responses[json.dumps(msg["id"])] = msg
                    self.response_counts[json.dumps(msg["id"])] += 1
            elif "method" in msg and "id" not in msg:
                self.notifications.append(msg)
            elif "method" in msg and isinstance(msg.get("id"), str):
                self.server_requests.append(msg)
            else:
                self.protocol_errors.append(f"unexpected message: {msg!r}")
            self._cond.notify_all()
        if "method" in msg and "id" in msg:  # a server request: left for the test unless a handler answers it
            with self._lock:
                handled = msg.get("method") in self._handlers
            if not handled:
                return
        if "method" in msg or type(msg.get("id")) is int:  # kward.client's own ids are ints
            super()._route(msg)

    def _ended(self) -> None:
        leftover = self._tee.take()
        if leftover:
            self._protocol_error(f"EOF inside a frame: {leftover[:200]!r}")
        with self._cond:
            self.stdout_closed = True
            self._cond.notify_all()
        super()._ended()

    def _protocol_error(self, text: str) -> None:
        with self._cond:
            self.protocol_errors.append(text)
            self._cond.notify_all()

    # --- writing -----------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Write raw bytes to the server (serialized with the client's own writes)."""
        with self._write_lock:
            self._to_server.write(data)
            self._to_server.flush()

    def send(self, method: str, params: Any = None, *, id: Any = "auto", **extra: Any) -> Any:
        """Send a request (or a notification with id=None); returns the id used."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if id == "auto":
            with self._lock:
                self._next_id += 1
                id = self._next_id
        if id is not None:
            msg["id"] = id
        if params is not None:
            msg["params"] = params
        msg.update(extra)
        self.write(frame(msg))
        return id

    def reply(self, request_id: Any, result: Any = None, *, error: dict | None = None) -> None:
        """Answer the server request `request_id` by hand (`result`, or `error`)."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result
        self.write(frame(msg))

    def wait_server_request(self, method: str, count: int = 1, timeout: float = 10.0) -> dict:
        """The `count`-th server request of `method`, once it arrived."""
        def find():
            found = [r for r in self.server_requests if r["method"] == method]
            return found[count - 1] if len(found) >= count else None

        return self.wait(find, timeout, f"server request {method} #{count}")

    # --- waiting -----------------------------------------------------------------------

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

    def request(self, method: str, params: Any = None, timeout: float = 10.0, **extra: Any) -> Any:  # type: ignore[override]
        """Send a request and return its result; raises RpcError on an error response.
        Extra keywords are top-level members of the request (`trace=...`, `id=...`)."""
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

    def wait_notification(self, predicate: Callable[[dict], bool], timeout: float = 10.0,
                          what: str = "notification") -> dict:
        """The first notification (whole message) matching `predicate`, once it arrived;
        each notification is looked at once."""
        notes = self.notifications
        pos = 0

        def find():
            nonlocal pos
            while pos < len(notes):
                n = notes[pos]
                pos += 1
                if predicate(n):
                    return n
            return None

        return self.wait(find, timeout, what)


class RpcClient(FrameClient):
    """One `kward rpc` child (`argv`, default `kward_command(None, *args)`), run in `cwd`
    (default `home`) with `env` (default `kward_env(home)`), its stderr collected. Use as a
    context manager; `close()` ends it (EOF) and reaps it."""

    def __init__(self, home: Path, cwd: Path | None = None, env: dict[str, str] | None = None,
                 args: list[str] | None = None, argv: list[str] | None = None):
        self.home = home
        self.proc = spawn_kward(home, cwd=cwd, env=env, argv=argv or kward_command(None, *(args or [])))
        super().__init__(self.proc.stdin, self.proc.stdout, wait_server=self._wait_proc,  # type: ignore[arg-type]
                         stop_server=self._kill_proc)
        self.process = self.proc
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self._stderr_chunks.append(chunk)

    def _wait_proc(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def _kill_proc(self) -> None:
        self.proc.kill()
        self.proc.wait()

    # --- lifecycle --------------------------------------------------------------------

    def close_stdin(self) -> None:
        try:
            with self._write_lock:
                self.proc.stdin.close()
        except OSError:
            pass

    def wait_exit(self, timeout: float = 10.0) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        self._err_reader.join(timeout)
        return code

    def close(self, timeout: float = 10.0) -> int:  # type: ignore[override]
        """EOF, then wait for the exit (subprocess.TimeoutExpired after `timeout`: the child
        is killed); returns the exit status."""
        self.close_stdin()
        try:
            return self.wait_exit(timeout)
        finally:
            self.release()

    def release(self) -> None:
        """Kill the child if it still runs, join the client's threads, close the pipes."""
        kward_client.Client.close(self, 0 if self.proc.poll() is None else 10.0)
        self._err_reader.join(10)
        self.proc.stderr.close()

    def __enter__(self) -> "RpcClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.close()
        self.release()
