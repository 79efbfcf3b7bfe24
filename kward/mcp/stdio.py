"""The stdio transport: an MCP server as a child process speaking newline-delimited
JSON-RPC on its stdin and stdout.

The server runs in its own process group and session (`kward.processes.children.spawn`),
with kward's environment minus kward's credentials plus the configured `env`, in the
configured `cwd` (else kward's). Its stderr goes to kward's log (logger ``kward.mcp``,
never kward's own stderr, which a UI shows as errors), at most `MAX_STDERR_LINES` lines
of `MAX_LINE_CHARS` characters. A stdout line longer than `MAX_MESSAGE_BYTES` or one
that is not JSON ends the connection: the server is broken.

`close()`: stdin is closed (the spec's polite end), then after `CLOSE_GRACE` seconds the
process group gets SIGTERM, then SIGKILL; the child is reaped and both reader threads
joined. A server that ends on its own (EOF on stdout) is reported through `lost` with its
exit status; the owner then calls `close()`.

Thread contract: `send` may run on any thread and never blocks: it queues the line for the
writer thread (``kward-mcp-<name>-writer``), which writes them in order; `_state_lock`
guards the closed flag and the start; the reader thread (``kward-mcp-<name>``) delivers
every message and calls `lost` once; the stderr thread only logs. `close` may run on any thread, the reader included (it does not
join itself).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import queue
import signal
import threading
from typing import IO, TYPE_CHECKING, Any, Mapping

from kward.diagnostics import SHOWN_ELSEWHERE
from kward.mcp.client import Lost, McpError, Receive
from kward.mcp.config import ServerConfig

if TYPE_CHECKING:  # pragma: no cover
    import subprocess

log = logging.getLogger("kward.mcp")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_STDERR_LINES = 1000
MAX_LINE_CHARS = 2000
CLOSE_GRACE = 0.3  # seconds after stdin closed, before SIGTERM (and again before SIGKILL)


class StdioTransport:
    kind = "stdio"

    def __init__(self, config: ServerConfig):
        assert config.command is not None
        self._config = config
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()  # to the writer thread
        self._broken = False  # the writer could not write (the server is gone or closed its input)
        self._state_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._reaped = False

    def start(self, receive: Receive, lost: Lost) -> None:
        """Start the process and its two reader threads. Raises OSError (no such command,
        not executable, no such cwd)."""
        from subprocess import PIPE

        from kward.processes.children import spawn
        from kward.tools.process import child_environment

        config = self._config
        assert config.command is not None
        cwd = os.path.expanduser(config.cwd) if config.cwd else None
        with self._state_lock:  # (a close() racing this start either comes first or sees the process)
            if self._closed:
                raise OSError(errno.ECANCELED, "closed before it started")
            self._proc = spawn(list(config.command), stdin=PIPE, stdout=PIPE, stderr=PIPE, cwd=cwd,
                               env=child_environment(dict(config.env)), start_new_session=True, bufsize=0)
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        for name, target, args in ((f"kward-mcp-{config.name}", self._read, (proc.stdout, receive, lost)),
                                   (f"kward-mcp-{config.name}-stderr", self._log_stderr, (proc.stderr,)),
                                   (f"kward-mcp-{config.name}-writer", self._write_loop, (proc.stdin,))):
            thread = threading.Thread(target=target, args=args, name=name[:60], daemon=True)
            self._threads.append(thread)
            thread.start()

    def _read(self, stream: IO[bytes], receive: Receive, lost: Lost) -> None:
        reason = "the server closed its output"
        buffer = _Lines(stream)
        try:
            while True:
                line = buffer.next_line(MAX_MESSAGE_BYTES)
                if line is None:
                    break
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    reason = "the server wrote a line that is not JSON-RPC: " + _shown(line[:200])
                    break
                receive(message)
        except _TooLong:
            reason = f"the server wrote a message larger than {MAX_MESSAGE_BYTES} bytes"
        except (OSError, ValueError):  # the stream was closed under us (close())
            reason = "closed"
        except Exception:  # a bug in a receiver: the connection cannot go on
            log.exception("MCP server %s: a message could not be handled", self._config.name)
            reason = "kward could not handle a message of the server"
        lost(self._exit_reason(reason))

    def _exit_reason(self, reason: str) -> str:
        proc = self._proc
        if proc is None or self._closed:
            return reason
        try:
            code = proc.wait(timeout=0.2)
        except Exception:
            return reason
        return f"the server exited ({'signal ' + str(-code) if code < 0 else 'status ' + str(code)})"

    def _log_stderr(self, stream: IO[bytes]) -> None:
        lines = 0
        try:
            for raw in iter(lambda: stream.readline(64 * 1024), b""):
                lines += 1
                if lines <= MAX_STDERR_LINES:
                    text = raw.decode("utf-8", "replace").rstrip()[:MAX_LINE_CHARS]
                    log.warning("MCP server %s (stderr): %s", self._config.name, text, extra=SHOWN_ELSEWHERE)
                elif lines == MAX_STDERR_LINES + 1:
                    log.warning("MCP server %s: further stderr is not logged", self._config.name,
                                extra=SHOWN_ELSEWHERE)
        except (OSError, ValueError):
            pass

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str] | None = None) -> None:
        """Queue one line for the writer thread: never waits for the server to read (a
        server that stops reading cannot hold a turn past its call's timeout or cancel)."""
        if self._proc is None or self._closed or self._broken:
            raise McpError("the server is not running" if not self._broken
                           else "the server is not reading its input (it exited?)")
        self._lines.put(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

    def _write_loop(self, stream: IO[bytes]) -> None:
        """The writer thread: the queued lines, in order, until the end (None) or a broken pipe."""
        while True:
            data = self._lines.get()
            if data is None:
                return
            try:
                _write_all(stream, data)
            except (OSError, ValueError):
                self._broken = True
                return

    def abandon(self, request_id: int) -> None:
        """Nothing to stop: answers arrive on the one stdout stream."""

    def set_protocol_version(self, version: str) -> None:
        """Stdio carries no version header."""

    def close(self) -> None:
        with self._state_lock:  # (not the write lock: a writer may be blocked on a full pipe)
            if self._closed:
                return
            self._closed = True
        proc = self._proc
        if proc is None:
            return
        self._lines.put(None)  # the writer writes what is queued, then ends
        writer = self._threads[2]
        writer.join(CLOSE_GRACE)
        if writer.is_alive():  # the server stopped reading: ending it breaks the pipe
            self._end(proc)
            writer.join(2.0)
        try:
            if proc.stdin is not None and not writer.is_alive():
                proc.stdin.close()  # the spec's polite end (then TERM and KILL, if it does not go)
        except OSError:
            pass
        self._end(proc)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(2.0)
                if thread.is_alive():  # a grandchild holds the pipe open: it is killed at exit
                    log.warning("MCP server %s: %s did not end", self._config.name, thread.name)
        for stream in (proc.stdout, proc.stderr):
            try:
                if stream is not None and not any(t.is_alive() for t in self._threads if t is not current):
                    stream.close()
            except OSError:
                pass

    def _end(self, proc: subprocess.Popen[bytes]) -> None:
        from subprocess import TimeoutExpired

        from kward.processes.children import wait_child

        if self._reaped:  # (a second call: the pid may belong to another process by now)
            return
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                proc.wait(timeout=CLOSE_GRACE if sig != signal.SIGKILL else 5.0)
                break
            except TimeoutExpired:
                continue
        # the rest of the group (the server's own children): while the leader is not yet
        # reaped its pid, and so the group's id, cannot be reused
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.returncode is not None:
            wait_child(proc)
            self._reaped = True


class _TooLong(Exception):
    pass


class _Lines:
    """Newline-delimited lines of an unbuffered pipe, at most `limit` bytes each."""

    def __init__(self, stream: IO[bytes]):
        self._fd = stream.fileno()
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline

    def next_line(self, limit: int) -> bytes | None:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            if len(self._buffer) > limit:
                raise _TooLong()
            chunk = os.read(self._fd, 65536)
            if not chunk:
                if self._buffer:
                    line, self._buffer = bytes(self._buffer), bytearray()
                    return line
                return None
            self._buffer += chunk


def _write_all(stream: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = stream.write(view)
        if written is None or written == 0:
            raise OSError("short write")
        view = view[written:]


def _shown(line: bytes) -> str:
    return repr(line.decode("utf-8", "replace"))
