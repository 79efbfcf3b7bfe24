"""Helpers for the tests of the `kward` command line run as a real subprocess.

`Cli` (the `cli` fixture) holds a workspace and an environment (isolated HOME and config,
the Scripted provider playing a script written to a temp file) and runs `kward ...` in it
through the one launcher (`lib.rpc_client.spawn_kward`, the checkout's `kward_argv()`):
`run` to completion, `start` as a Popen whose stdout is read as it streams (for Ctrl-C).
`session_files` lists what the session directory holds.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lib.rpc_client import kward_argv, kward_env, spawn_kward
from lib.scripts import write_script


class Streamed:
    """A running `kward` whose stdout and stderr are collected by reader threads."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.out = b""
        self.err = b""
        self._cond = threading.Condition()
        self._threads = [threading.Thread(target=self._pump, args=(proc.stdout, "out"), daemon=True),
                         threading.Thread(target=self._pump, args=(proc.stderr, "err"), daemon=True)]
        for t in self._threads:
            t.start()

    def _pump(self, stream: Any, name: str) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            with self._cond:
                setattr(self, name, getattr(self, name) + chunk)
                self._cond.notify_all()

    def wait_for(self, needle: bytes, stream: str = "out", timeout: float = 10.0) -> None:
        """Wait until `needle` was printed on `stream` ("out" or "err")."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while needle not in getattr(self, stream):
                drained = not any(t.is_alive() for t in self._threads)
                left = deadline - time.monotonic()
                if drained or left <= 0:
                    raise TimeoutError(f"no {needle!r} on {stream}; out={self.out!r} err={self.err!r}")
                self._cond.wait(min(left, 0.2))

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 15.0) -> int:
        code = self.proc.wait(timeout)
        for t in self._threads:
            t.join(timeout)
        return code


class Cli:
    def __init__(self, home: Path):
        self.home = home
        self.ws = home / "ws"
        self.ws.mkdir(exist_ok=True)
        self.env = kward_env(home, KWARD_PROVIDER="scripted")
        for var in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR", "KWARD_COLOR"):
            self.env.pop(var, None)

    @property
    def config_dir(self) -> Path:
        return self.home / ".kward"

    def script(self, steps: list, **fields: Any) -> Path:
        path = write_script(self.home / "scripts", steps, **fields)
        self.env["KWARD_SCRIPT"] = str(path)
        return path

    def _spawn(self, args: tuple[str, ...], env: dict[str, str] | None, cwd: Path | None,
               stdin: Any) -> "subprocess.Popen[bytes]":
        return spawn_kward(self.home, cwd=cwd or self.ws, env={**self.env, **(env or {})},
                           argv=[*kward_argv(), *args], stdin=stdin)

    def run(self, *args: str, input: bytes | str | None = b"", env: dict[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run to completion (killed, and TimeoutExpired raised, after `timeout` s, as
        `subprocess.run` does); stdout and stderr captured."""
        data = input.encode() if isinstance(input, str) else input
        proc = self._spawn(args, env, cwd, subprocess.PIPE if data is not None else None)
        with proc:
            try:
                out, err = proc.communicate(data, timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def start(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
              stdin: Any = subprocess.DEVNULL) -> Streamed:
        """Start; stdin is /dev/null unless `stdin` says otherwise (a pipe: `proc.stdin`)."""
        return Streamed(self._spawn(args, env, cwd, stdin))

    def session_files(self) -> list[Path]:
        """Every file a session left (its JSONL, its lock), not the directory's presence file."""
        root = self.config_dir / "sessions"
        return sorted(p for p in root.rglob("*") if p.is_file() and p.name != ".kward-sessions.open") \
            if root.exists() else []


@pytest.fixture
def cli(isolated_home: Path) -> Cli:
    return Cli(isolated_home)


def without(env: dict[str, str], *names: str) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in names}

