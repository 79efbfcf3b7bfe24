"""Config paths and config.json load/save (the values it holds are read by `kward.config.settings`).

Paths (kward(1) FILES): the config directory is `~/.kward`, or the directory of
`KWARD_CONFIG_PATH` when set (that variable names the config *file*). `KWARD_AUTH_PATH`
overrides `auth.json`. Directories are created 0700, files written 0600, and every write is
atomic, so a crash or a concurrent process never sees a half-written config. A config.json
found with a wider mode (it may hold the OpenRouter key) is narrowed to 0600 when read,
with a warning in the log, unless the store was made with `narrow_mode=False` (`kward
doctor`, which changes nothing, reports the mode instead).

Thread contract: `ConfigStore` may be used from any thread; an internal lock serializes
loads and updates within the process and an flock on `<config dir>/.config.lock`
serializes read-modify-write across processes.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from kward import jsonshape
from kward.config import rules
from kward.errors import ConfigError, FilesystemError, InvalidParams
from kward.fsutil import FILE_MODE, UnusableFile, atomic_write_bytes, file_lock, open_own, own_file_error, read_fd
from kward.limits import CONFIG_FILE_BYTES

log = logging.getLogger(__name__)


def _is_directory(path: Path) -> bool:
    """Whether `path` itself (no link followed) is a directory; False when it cannot be told."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class Paths(NamedTuple):
    """Where kward keeps its files. Pure data; nothing is created by building one."""

    config_dir: Path
    config_file: Path
    auth_file: Path

    @property
    def sessions_dir(self) -> Path:
        return self.config_dir / "sessions"

    @property
    def logs_dir(self) -> Path:
        return self.config_dir / "logs"

    @property
    def memory_dir(self) -> Path:
        return self.config_dir / "memory"


def resolve_paths(env: Mapping[str, str] = os.environ) -> Paths:
    """Apply KWARD_CONFIG_PATH / KWARD_AUTH_PATH / HOME to find the config files."""
    custom = env.get("KWARD_CONFIG_PATH")
    if custom:
        config_file = Path(os.path.abspath(os.path.expanduser(custom)))
        config_dir = config_file.parent
    else:
        config_dir = Path(env.get("HOME") or os.path.expanduser("~")) / ".kward"
        config_file = config_dir / "config.json"
    auth = env.get("KWARD_AUTH_PATH")
    auth_file = Path(os.path.abspath(os.path.expanduser(auth))) if auth else config_dir / "auth.json"
    return Paths(config_dir=config_dir, config_file=config_file, auth_file=auth_file)


# --- checks of known keys (the rules of `kward.config.rules.KEYS`) --------------------------

def _problem(key: str, value: Any) -> str | None:
    """What is wrong with `value` for top-level config key `key` ("must be ..."), or None
    (also for keys kward does not read, and for unknown fields of a group)."""
    if key in rules.GROUPS:
        if not isinstance(value, dict):
            return "must be an object"
        for name, sub in value.items():
            rule = rules.KEYS.get(f"{key}.{name}")
            if rule is not None and sub is not None:
                try:
                    rule.rule.normalize(sub)
                except rules.Invalid as exc:
                    return f"{name} {exc}"
        return None
    known = rules.KEYS.get(key)
    if known is None:
        return None
    try:
        known.rule.normalize(value)
    except rules.Invalid as exc:
        return str(exc)
    return None


def _shape_problem(values: Mapping[str, Any]) -> tuple[str, str] | None:
    """(key path, problem) when `values` (a config document, level 1) is nested more than
    `jsonshape.MAX_DEPTH` levels deep or holds an unpaired surrogate."""
    problem = jsonshape.find_problem(dict(values))
    return None if problem is None else (jsonshape.format_path(problem[0]), problem[1])


def validate_values(values: Mapping[str, Any]) -> None:
    """Raise InvalidParams (reason invalid_config) naming the first key whose value is too
    deep or not valid Unicode, or the first known key whose value has the wrong type."""
    shape = _shape_problem(values)
    if shape is not None:
        raise InvalidParams(f"Invalid config value for {shape[0]}: {shape[1]}", reason="invalid_config",
                            data={"key": shape[0]})
    for key, value in values.items():
        if value is not None:
            problem = _problem(key, value)
            if problem:
                raise InvalidParams(f"Invalid config value for {key}: {problem}", reason="invalid_config",
                                    data={"key": key})


def _copy(document: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON document (what json would read back)."""
    copied: dict[str, Any] = json.loads(json.dumps(document))
    return copied


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class ConfigStore:
    """Reads and writes config.json. See the module docstring for the thread contract."""

    def __init__(self, paths: Paths, *, narrow_mode: bool = True):
        self.paths = paths
        self.narrow_mode = narrow_mode  # (module docstring)
        self._lock = threading.Lock()
        self._cache_key: tuple[int, int, int] | None = None
        self._cache: dict[str, Any] = {}

    @property
    def path(self) -> Path:
        return self.paths.config_file

    def load(self) -> dict[str, Any]:
        """The current config (a fresh copy). Missing file = {}; invalid or unusable (a
        symlink, a FIFO, a device, too large: see `_load_locked`) = ConfigError; unreadable =
        FilesystemError (permission denied, a directory, a part of the path is a file, ...)."""
        with self._lock:
            return _copy(self._load_locked())

    def stamp(self) -> object:
        """What changes whenever config.json may have: its (mtime, size, inode) now, None
        when there is no file, a fresh object (equal to nothing) when it cannot be examined.
        The key `load` caches the parsed file by (there taken from the descriptor read; no
        link followed either way). One lstat; never raises; any thread."""
        try:
            st = os.lstat(self.paths.config_file)
        except FileNotFoundError:
            return None
        except OSError:
            return object()
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _load_locked(self) -> dict[str, Any]:
        """The parsed file (cached by the (mtime, size, inode) of the descriptor it is read
        from). Opened with `fsutil.open_own`: a symlink (also one to a directory), a FIFO, a
        device or a file over `limits.CONFIG_FILE_BYTES` is a ConfigError naming the path
        (never a hang on a FIFO nor a read of /dev/zero); a directory is EISDIR and an OS
        failure a FilesystemError as usual."""
        path = self.paths.config_file
        try:
            fd = open_own(path)
        except FileNotFoundError:
            self._cache_key, self._cache = None, {}
            return self._cache
        except UnusableFile as exc:
            if exc.errno == errno.EINVAL and _is_directory(path):
                raise FilesystemError.from_os_error(
                    IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))) from None
            raise ConfigError(f"Unusable Kward config: {path} {exc.strerror}", data={"path": str(path)}) from None
        except OSError as exc:  # permission denied, a part of the path that is a file, ...
            raise FilesystemError.from_os_error(exc) from None
        try:
            st = os.fstat(fd)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            if key == self._cache_key:
                return self._cache
            if st.st_size > CONFIG_FILE_BYTES:
                raise own_file_error(path, f"is larger than {CONFIG_FILE_BYTES} bytes", errno.EFBIG)
            mode = stat.S_IMODE(st.st_mode)
            if mode & ~FILE_MODE and self.narrow_mode:  # it may hold the OpenRouter key: private, like auth.json
                os.fchmod(fd, FILE_MODE)
                log.warning("%s had mode %04o (wider than %04o); kward set it to %04o", path, mode, FILE_MODE,
                            FILE_MODE)
            raw = read_fd(fd, CONFIG_FILE_BYTES + 1)
            if len(raw) > CONFIG_FILE_BYTES:  # grew while it was read
                raise own_file_error(path, f"is larger than {CONFIG_FILE_BYTES} bytes", errno.EFBIG)
        except UnusableFile as exc:
            raise ConfigError(f"Unusable Kward config: {path} {exc.strerror}", data={"path": str(path)}) from None
        except OSError as exc:
            raise FilesystemError.from_os_error(exc) from None
        finally:
            os.close(fd)
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant) if raw.strip() else {}
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            detail = f" ({exc.msg} at line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
            raise ConfigError(f"Invalid Kward config JSON: {path}{detail}", data={"path": str(path)}) from None
        if not isinstance(data, dict):
            raise ConfigError(f"Invalid Kward config JSON: {path} (the top level must be an object)",
                              data={"path": str(path)})
        shape = _shape_problem(data)
        if shape is not None:
            raise ConfigError(f"Invalid Kward config: {path}: {shape[0]} {shape[1]}",
                              data={"path": str(path), "key": shape[0]})
        self._cache_key, self._cache = key, data
        return data

    def update(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `values` into config.json (a None value removes the key); return the result.

        Values are checked first (nesting depth, valid Unicode, the types of known keys);
        on any error nothing is written.
        """
        validate_values(values)
        path = self.paths.config_file
        with self._lock, file_lock(path.parent / ".config.lock"):
            self._cache_key = None  # another process may have written since we cached
            current = dict(self._load_locked())
            for key, value in values.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            data = (json.dumps(current, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
            atomic_write_bytes(path, data)
            self._cache_key = None
            return _copy(current)
