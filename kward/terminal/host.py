"""What a terminal-mode process does around its in-process server, as `kward rpc` does
around its own: check the environment and the config (kward.terminal.config_check: a
problem that stops the mode is an `EnvironmentProblem`, exit status 2, one line naming the
file and what to do; the others are `kward: warning: ...` lines on stderr, printed the
same way by every mode), log to `<config>/logs/kward.log` (and warnings to stderr), own
the processes the model's shell commands leave behind and end them on the way out, and
turn SIGTERM/SIGHUP into a clean exit.

`Host` is a context manager used once, on the main thread, by the interactive and
one-shot modes; nothing here speaks the protocol (that is `kward.client`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Callable, Mapping

from kward import diagnostics
from kward.config.secrets import KnownSecrets
from kward.config.settings import resolve_settings
from kward.config.store import ConfigStore, resolve_paths
from kward.errors import ConfigError, KwardError
from kward.fsutil import remove_stale_temps
from kward.processes import children as procs
from kward.redact import redact_text
from kward.terminal import config_check
from kward.terminal.style import ColorSettingError, check_color_setting
from kward.terminal.textwidth import clean

#: What `signal.signal` takes and gives back: a Python handler, SIG_DFL/SIG_IGN, or None
#: (a handler that was not installed from Python).
SignalHandler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class EnvironmentProblem(Exception):
    """A variable kward checks holds a value it cannot use, or the config cannot be used
    (config.json, the config directory: kward.terminal.config_check); the text is the one
    line for the user. The modes exit with status 2."""


def check_environment(env: Mapping[str, str]) -> None:
    """Raise EnvironmentProblem naming the first bad variable (as `kward rpc` refuses it)."""
    try:
        check_color_setting(env)
        try:
            values = ConfigStore(resolve_paths(env), narrow_mode=False).load()  # (a check: changes nothing)
        except KwardError:
            values = {}  # the server reports a broken config.json itself
        resolve_settings(values, env)
    except (ConfigError, ColorSettingError) as exc:
        message = exc.message if isinstance(exc, ConfigError) else ""
        raise EnvironmentProblem(redact_text(message or str(exc))) from None


def check_config(env: Mapping[str, str]) -> None:
    """Raise EnvironmentProblem for the first config problem that stops a terminal mode;
    print a warning line for each of those it goes on with."""
    troubles = config_check.diagnose(env)
    stop = config_check.first_stop(troubles)
    if stop is not None:
        raise EnvironmentProblem(stop.line)
    for trouble in config_check.warnings(troubles):
        warn(trouble.line)


class Host:
    """Process-level set-up for a terminal mode (see the module docstring)."""

    def __init__(self, env: Mapping[str, str]):
        self.env = env
        self._previous: dict[int, SignalHandler] = {}
        self._kicker = SigintKicker()

    def __enter__(self) -> Host:
        diagnostics.hold_early_records()  # reading the config may warn before the log is set up
        check_environment(self.env)
        check_config(self.env)
        paths = resolve_paths(self.env)
        config = ConfigStore(paths)
        try:
            values = config.load()
        except KwardError:
            values = {}
        settings = resolve_settings(values, self.env)
        remove_stale_temps(paths.config_dir)
        diagnostics.configure(paths.logs_dir, settings.log_level, rpc_mode=False,
                              secrets=KnownSecrets(self.env, config, paths.auth_file))
        procs.own_descendants()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._previous[sig] = signal.signal(sig, _exit_on_signal)
        self._kicker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._kicker.stop()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        procs.end_descendants()


class SigintKicker:
    """Makes sure a SIGINT is seen at once while the main thread waits for the terminal.

    The main thread waits in a blocking call: `input()` (an inline answer or a pick list
    while a turn runs, the prompt where the line editor is not used) or the line editor's
    `select()`. CPython runs Python signal handlers only when such a call is interrupted; a
    SIGINT that lands just before the call begins (say, a quick second Ctrl-C as an inline
    question appears) would wait for the next key press. So the C-level signal
    handler's wakeup byte (`signal.set_wakeup_fd`) is watched by a thread, which after each
    SIGINT sends the main thread a few SIGUSR1s (20, 100 and 300 ms later) whose Python
    handler does nothing: each one interrupts the blocking call and so runs the pending SIGINT
    handler. A kick when nothing is pending is harmless.

    `start` and `stop` on the main thread; the watcher thread is owned here, stopped by
    `stop` (an event and the closed pipe) and joined with a timeout.
    """

    KICKS = (0.02, 0.08, 0.2)  # seconds between the kicks after a SIGINT

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fds: tuple[int, int] | None = None  # the wakeup pipe (read, write) while started
        self._old_wakeup = -1
        self._old_usr1: SignalHandler = None
        self._main = 0  # the main thread's ident

    def start(self) -> None:
        if not hasattr(signal, "pthread_kill") or threading.current_thread() is not threading.main_thread():
            return
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._fds = (r, w)
        self._old_wakeup = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        self._old_usr1 = signal.signal(signal.SIGUSR1, _ignore)
        self._main = threading.get_ident()  # (this is the main thread: checked above)
        self._thread = threading.Thread(target=self._watch, name="kward-sigint-kicker", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        assert self._fds is not None
        while not self._stop.is_set():
            try:
                data = os.read(self._fds[0], 64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT not in data:
                continue
            for pause in self.KICKS:
                if self._stop.wait(pause):
                    return
                try:
                    signal.pthread_kill(self._main, signal.SIGUSR1)
                except (OSError, ValueError):
                    return

    def stop(self) -> None:
        if self._fds is None:
            return
        self._stop.set()
        signal.set_wakeup_fd(self._old_wakeup)
        os.close(self._fds[1])  # ends the watcher's read
        if self._thread is not None:
            self._thread.join(2.0)
        signal.signal(signal.SIGUSR1, self._old_usr1)
        os.close(self._fds[0])
        self._fds = None


def _ignore(signum: int, frame: FrameType | None) -> None:
    pass


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    # A clean exit: the modes' `finally` blocks cancel the turn and close the session.
    raise SystemExit(128 + signum)


def fail(message: str, code: int = 1) -> int:
    """Print the one-line reason `kward: <message>` on stderr and return `code` (a
    provider's words in it are cleaned for a terminal: textwidth.clean)."""
    line = " ".join(clean(str(message)).split()) or "failed"
    sys.stderr.write(f"kward: {line}\n")
    sys.stderr.flush()
    return code


def warn(message: str) -> None:
    """Print the one-line warning `kward: warning: <message>` on stderr (every mode words
    its warnings this way)."""
    line = " ".join(clean(str(message)).split())
    sys.stderr.write(f"kward: warning: {line}\n")
    sys.stderr.flush()


def terminal_env(base: Mapping[str, str] = os.environ, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the in-process server sees: ours plus `overrides` (e.g. --model)."""
    env = dict(base)
    env.update(overrides or {})
    return env
