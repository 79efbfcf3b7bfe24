"""Diagnostic logging: module loggers -> `<config>/logs/kward.log` (rotated, redacted, 0600).

The log file is opened on the first record only, so a quiet run creates nothing. Level:
`KWARD_LOG_LEVEL` or config `log_level`, default WARNING. In `rpc` mode stderr receives
records only when the user raised the level (INFO or DEBUG): UI clients show every stderr
chunk as an error. Terminal modes also print warnings to stderr. The handlers are in
`kward.logfile`.

Start-up cost: `logging` (with traceback, string, weakref) is not imported to answer
`initialize`. `configure` therefore installs the handlers at once only when `logging` is
already imported; otherwise it installs them the moment `logging` is first imported, by
whichever module imports it (a one-shot `sys.meta_path` finder whose loader runs the
module, then the configuration), so no record is ever emitted before the handlers are
in place. Until then a warning shown by `warnings` imports logging first (and is then
captured as before); `warnings` itself is hooked when first imported (by the same finder). Modules on the start-up path log through `get_logger(name)`, which
imports logging only for a record that can be emitted.

`configure` is called once from the main thread at start-up; logging itself is
thread-safe (every handler holds its own lock while emitting). The import hook runs under
the import system's lock of the `logging` module, so no other thread sees logging before
it is configured.
"""

from __future__ import annotations

import sys
import threading

from kward.records import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
_WARNING = 30
_threshold = _WARNING  # the configured level, for records while logging is not imported
_pending: tuple | None = None  # configure's arguments, until logging is imported
_pending_lock = threading.Lock()


def __getattr__(name: str) -> Any:  # the handler classes, where they were (imports logging)
    if name in ("RedactingFormatter", "PrivateRotatingFileHandler", "MAX_LOG_BYTES", "BACKUPS"):
        from kward import logfile

        return getattr(logfile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class LazyLogger:
    """`logging.getLogger(name)` without importing logging: a record below the configured
    level is dropped while logging is not imported (nothing could emit it); any other use
    imports logging and goes to the real logger. Any thread."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _real(self) -> Any:
        import logging

        return logging.getLogger(self.name)

    def _emit(self, level: int, msg: Any, args: tuple, kwargs: dict) -> None:
        if level < _threshold and "logging" not in sys.modules:
            return
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 2  # the caller, not this module
        self._real().log(level, msg, *args, **kwargs)

    def debug(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self._emit(10, msg, args, kwargs)

    def info(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self._emit(20, msg, args, kwargs)

    def warning(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self._emit(30, msg, args, kwargs)

    def error(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self._emit(40, msg, args, kwargs)

    def exception(self, msg: Any, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        self._emit(40, msg, args, dict(kwargs, exc_info=exc_info))

    def critical(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self._emit(50, msg, args, kwargs)

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging API
        if level < _threshold and "logging" not in sys.modules:
            return False
        return self._real().isEnabledFor(level)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)


def get_logger(name: str) -> LazyLogger:
    """A module logger for the start-up path (see `LazyLogger`)."""
    return LazyLogger(name)


class StrayOutput:
    """Stands in for sys.stdout in rpc mode: stray prints become log lines, never frames.
    Any thread; a line longer than MAX_STRAY is logged in pieces."""

    encoding = "utf-8"
    errors = "replace"
    MAX_STRAY = 8192

    def __init__(self) -> None:
        self._log = get_logger("kward.stdout")
        self._buf = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._buf += text
            lines = self._buf.split("\n")
            self._buf = lines.pop()
            while len(self._buf) > self.MAX_STRAY:
                lines.append(self._buf[: self.MAX_STRAY])
                self._buf = self._buf[self.MAX_STRAY:]
        for line in lines:
            self._log.warning("stray output on stdout: %s", line)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            rest, self._buf = self._buf, ""
        if rest:
            self._log.warning("stray output on stdout: %s", rest)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("stdout is reserved for protocol frames")


def configure(logs_dir: Any, level: str | None, *, rpc_mode: bool, secrets: Any = None) -> None:
    """Install the file handler (and a stderr handler where allowed) on the `kward` logger
    and on Python's warnings: now when `logging` is imported, else as soon as it is (see
    the module docstring). `logs_dir` is a path (text or Path). In rpc mode a failing handler never
    prints to stderr. `secrets` (a `kward.secrets.KnownSecrets`) are scrubbed from every
    record."""
    global _threshold, _pending
    _threshold = _LEVELS.get(level or "", _WARNING)
    with _pending_lock:
        _pending = (logs_dir, level, rpc_mode, secrets)
    if "logging" in sys.modules:
        _apply_pending()
        return
    if not any(isinstance(f, _ConfigureWhenImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _ConfigureWhenImported())
    if "warnings" in sys.modules:  # else hooked when imported (`warnings` costs ~1.2 M instructions)
        _hook_warnings(sys.modules["warnings"])


def _hook_warnings(warnings: Any) -> None:
    """Until logging is imported, a warning shown by `warnings` imports it first."""
    global _original_showwarning
    if _pending is not None and warnings.showwarning is not _show_warning:
        _original_showwarning = warnings.showwarning
        warnings.showwarning = _show_warning


def _apply_pending() -> None:
    global _pending
    with _pending_lock:
        pending, _pending = _pending, None
    if pending is None:
        return
    warnings = sys.modules.get("warnings")
    if warnings is not None and warnings.showwarning is _show_warning:  # logging captures them from now on
        warnings.showwarning = _original_showwarning
    from kward import logfile

    logs_dir, level, rpc_mode, secrets = pending
    logfile.install(logs_dir, level, rpc_mode=rpc_mode, secrets=secrets)


_original_showwarning: Any = None


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """`warnings.showwarning` until logging is imported: import it (which configures it
    and makes it capture warnings), then show the warning the configured way."""
    import logging  # noqa: F401 - runs the pending configuration
    import warnings

    if warnings.showwarning is _show_warning:  # configured meanwhile by another path
        warnings.showwarning = _original_showwarning
    warnings.showwarning(message, category, filename, lineno, file, line)


class _ThenConfigure:
    """The loader of `logging` (or `warnings`): the real loader's work, then the pending
    configuration (or the hook of `_hook_warnings`)."""

    def __init__(self, loader: Any, name: str):
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self._loader  # no trace of this wrapper is left
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        if self._name == "logging":
            _apply_pending()
        else:
            _hook_warnings(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _ConfigureWhenImported:
    """A `sys.meta_path` finder: the spec of `logging` (or `warnings`) as the other finders
    find it, with `_ThenConfigure` as its loader. Removes itself when logging is imported."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "logging" and name != "warnings":
            return None
        if name == "logging":
            try:
                sys.meta_path.remove(self)
            except ValueError:
                return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenConfigure(spec.loader, name)
                return spec
        return None
