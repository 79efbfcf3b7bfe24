"""What is wrong with the configuration a terminal mode runs on, one line each.

`diagnose(env)` looks at config.json and the config directory of `env` (nothing is
created or changed) and returns a `Trouble` for each problem:

| problem                                            | severity | terminal modes          |
|----------------------------------------------------|----------|-------------------------|
| config.json is a directory, unreadable, another    | stop     | one line, exit 2        |
| user's, a link, not a regular file, too large, not |          |                         |
| valid JSON, not an object                          |          |                         |
| a value of a strict key (`provider`, a base URL,   | stop     | one line, exit 2        |
| `retry_delays`, ...: `kward.config.rules.Key`)     |          |                         |
| the config directory cannot be written or created  | stop     | one line, exit 2        |
| a value of another key of the wrong type (ignored) | warn     | `kward: warning: ...`   |
| an unknown key close to a known one (a misspelling)| warn     | `kward: warning: ...`   |
| an unknown key in one of kward's groups (`memory`) | warn     | `kward: warning: ...`   |
| any other unknown top-level key (a UI's own)       | note     | only `kward doctor`     |
| config.json with a mode wider than 0600            | note     | only `kward doctor` (the|
|                                                    |          | others narrow it, with a|
|                                                    |          | warning: ConfigStore)   |

`kward doctor` prints each as a check line (`fail` for stop and warn, `warn` for a note)
and goes on. The server (`kward rpc`) never stops for these: it reports them as
`initialize` warnings and `invalid_config` errors of the requests that need the value;
what it decides is taken from there (`ConfigStore.load`, `kward.config.rules.KEYS`), only
the words are the terminal's.

Pure reads of the filesystem and the environment; any thread, but used on the main thread
before the in-process server starts (`kward.terminal.host`) and by `kward doctor`.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from kward import jsonshape
from kward.config import rules
from kward.config.store import ConfigStore, Paths, resolve_paths
from kward.errors import KwardError
from kward.fsutil import FILE_MODE, UnusableFile, open_own, read_fd
from kward.limits import CONFIG_FILE_BYTES
from kward.providers import specs
from kward.redact import redact_text

Severity = Literal["stop", "warn", "note"]

FIX_FILE = "fix or remove it"
#: Top-level keys and groups kward reads, and every dotted key.
KNOWN_TOP: tuple[str, ...] = tuple(dict.fromkeys(p.split(".")[0] for p in rules.KEYS))
#: Keys whose values are never quoted back (credentials).
SECRET_KEYS = frozenset(s.secret.key for s in specs.PROVIDERS if s.secret is not None and s.secret.key)


@dataclass(frozen=True, slots=True)
class Trouble:
    """One problem: the file or directory, what is wrong and what to do, in words."""

    path: str
    problem: str
    fix: str
    severity: Severity
    check: Literal["config", "config dir"] = "config"  # the `kward doctor` check it belongs to

    @property
    def line(self) -> str:
        """`PATH: PROBLEM; FIX`, the one line every mode prints (secrets masked)."""
        return redact_text(f"{self.path}: {self.problem}; {self.fix}")


def diagnose(env: Mapping[str, str]) -> list[Trouble]:
    """Every problem of config.json and the config directory of `env`, in that order."""
    paths = resolve_paths(env)
    found: list[Trouble] = []
    try:
        values = ConfigStore(paths, narrow_mode=False).load()  # (its mode is only looked at: `mode_troubles`)
    except KwardError as exc:
        found.append(unusable_file(paths.config_file, exc))
    else:
        found += mode_troubles(paths.config_file)
        found += value_troubles(str(paths.config_file), values, env)
    found += directory_troubles(paths)
    return found


def mode_troubles(path: Path) -> list[Trouble]:
    """A config.json whose mode is wider than 0600 (a note: the modes other than `kward
    doctor` narrow it when they read it, `ConfigStore`)."""
    try:
        st = os.lstat(path)
    except OSError:
        return []
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISREG(st.st_mode) or not mode & ~FILE_MODE:
        return []
    return [Trouble(str(path), f"has mode {mode:04o}, wider than {FILE_MODE:04o} (it may hold an API key)",
                    f"kward narrows it to {FILE_MODE:04o} when it runs (or: chmod 600 {path})", "note")]


# --- a config.json that cannot be read --------------------------------------------------

def unusable_file(path: Path, exc: KwardError) -> Trouble:
    """The words for the error `ConfigStore.load` raised for `path`: from the error's
    reason and data, or, for `invalid_config` (which carries only the path), from a
    look at the file itself."""
    where = str(path)
    data = exc.data
    if exc.reason == "permission_denied":
        return Trouble(where, "cannot be read (permission denied)",
                       f"make it readable (chmod 600 {where}) or remove it", "stop")
    if data.get("errno") == "EISDIR":
        return Trouble(where, "is a directory, not a file", "remove or rename it (kward keeps its settings in "
                                                            "that file)", "stop")
    if exc.reason == "not_a_directory":
        blocker = data.get("notADirectory") or "a part of the path"
        return Trouble(where, f"cannot be reached: {blocker} is not a directory",
                       "fix the path (KWARD_CONFIG_PATH) or move that file away", "stop")
    if exc.reason != "invalid_config":
        words = str(data.get("osMessage") or exc.message)
        return Trouble(where, f"cannot be read ({words})", FIX_FILE, "stop")
    return _look_at(path) or Trouble(where, f"cannot be used ({exc.message})", FIX_FILE, "stop")


def _look_at(path: Path) -> Trouble | None:
    """What makes `path` unusable as config.json, found by reading it as the store does
    (`fsutil.open_own`, then JSON); None when nothing is found (it changed meanwhile)."""
    where = str(path)
    try:
        fd = open_own(path)
    except UnusableFile as exc:
        if exc.errno == errno.EPERM:
            return Trouble(where, str(exc.strerror), "remove it, or give it to yourself (chown)", "stop")
        if exc.errno == errno.ELOOP:
            return Trouble(where, str(exc.strerror), "put the file itself there", "stop")
        return Trouble(where, str(exc.strerror), "remove it", "stop")
    except OSError:
        return None
    try:
        if os.fstat(fd).st_size > CONFIG_FILE_BYTES:
            return Trouble(where, f"is larger than {CONFIG_FILE_BYTES:,} bytes", FIX_FILE, "stop")
        raw = read_fd(fd, CONFIG_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant) if raw.strip() else {}
    except UnicodeDecodeError:
        return Trouble(where, "is not UTF-8 text", FIX_FILE, "stop")
    except json.JSONDecodeError as exc:
        return Trouble(where, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", FIX_FILE, "stop")
    except (ValueError, RecursionError):
        return Trouble(where, "not valid JSON", FIX_FILE, "stop")
    if not isinstance(data, dict):
        return Trouble(where, "is not a JSON object ({...} at the top level)", FIX_FILE, "stop")
    problem = jsonshape.find_problem(data)
    if problem is not None:
        return Trouble(where, f"{jsonshape.format_path(problem[0])} {problem[1]}", FIX_FILE, "stop")
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


# --- values of the wrong type, unknown keys ---------------------------------------------

def value_troubles(where: str, values: Mapping[str, Any], env: Mapping[str, str]) -> list[Trouble]:
    """The values kward cannot use and the keys it does not know, in the file's order."""
    found: list[Trouble] = []
    for key, value in values.items():
        if key in rules.GROUPS:
            found += _group(where, key, value, env)
        elif key in rules.KEYS and "." not in key:
            trouble = _value(where, key, value, env)
            if trouble is not None:
                found.append(trouble)
        else:
            found.append(_unknown(where, key, KNOWN_TOP + tuple(p for p in rules.KEYS if "." in p), top=True))
    return found


def _group(where: str, group: str, value: Any, env: Mapping[str, str]) -> list[Trouble]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [Trouble(where, f"{group} must be an object ({{...}}), so kward ignores it", FIX_FILE, "warn")]
    names = tuple(p.split(".", 1)[1] for p in rules.KEYS if p.startswith(group + "."))
    found = []
    for name, sub in value.items():
        if name in names:
            trouble = _value(where, f"{group}.{name}", sub, env)
            if trouble is not None:
                found.append(trouble)
        else:
            found.append(_unknown(where, name, names, top=False, group=group))
    return found


def _value(where: str, path: str, value: Any, env: Mapping[str, str]) -> Trouble | None:
    """The trouble of a known key's value: None when usable, unset, or overridden by its
    environment variable (then the server does not look at it either)."""
    key = rules.KEYS[path]
    if value is None or (key.env and env.get(key.env, "").strip()):
        return None
    try:
        key.rule.normalize(value)
    except rules.Invalid as exc:
        if key.strict:
            shown = "" if path in SECRET_KEYS else f", not {rules.shown(value)}"
            why = "what may run unasked" if path.startswith("security.") else "where requests go"
            return Trouble(where, f"{path} {exc}{shown}", FIX_FILE + f" (kward does not guess {why})", "stop")
        return Trouble(where, f"{path} {exc}, so kward ignores it", FIX_FILE, "warn")
    return None


def _unknown(where: str, name: str, known: tuple[str, ...], *, top: bool, group: str | None = None) -> Trouble:
    import difflib  # (only for a key kward does not know)

    shown = f"{group}.{name}" if group else name
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if close:
        guess = close[0]
        if group:
            guess = f"{group}.{guess}"
        elif "." in guess:  # a dotted key written at the top level
            outer, inner = guess.split(".", 1)
            guess = f'"{outer}": {{"{inner}": ...}}'
        return Trouble(where, f"unknown key {shown} (did you mean {guess}?), kward ignores it", "rename or remove it",
                       "warn")
    if top:
        return Trouble(where, f"kward does not read the key {shown}", "remove it unless another program uses it",
                       "note")
    return Trouble(where, f"unknown key {shown}, kward ignores it", "remove it", "warn")


# --- the config directory ---------------------------------------------------------------

DIR_FIX = "make it writable, or set KWARD_CONFIG_PATH to a config file in a directory you can write"


def directory_troubles(paths: Paths) -> list[Trouble]:
    """The config directory (sessions, logins, logs and settings are written there) when
    it cannot be written, or cannot be created."""
    directory = paths.config_dir
    where = str(directory)
    try:
        st = os.stat(directory)
    except (FileNotFoundError, NotADirectoryError):  # (missing, or below a file)
        parent = directory.parent
        while not parent.exists() and parent.parent != parent:
            parent = parent.parent
        if not parent.is_dir():
            return [Trouble(where, f"cannot be created ({parent} is not a directory)", DIR_FIX, "stop", "config dir")]
        if _writable(parent):
            return []
        return [Trouble(where, f"cannot be created ({parent}: {_why_not(parent)})", DIR_FIX, "stop", "config dir")]
    except OSError as exc:
        return [Trouble(where, f"cannot be examined ({exc.strerror})", DIR_FIX, "stop", "config dir")]
    if not stat.S_ISDIR(st.st_mode):
        return [Trouble(where, "is not a directory", "remove it, or set KWARD_CONFIG_PATH elsewhere", "stop",
                        "config dir")]
    if not _writable(directory):
        return [Trouble(where, f"cannot be written ({_why_not(directory)})", DIR_FIX, "stop", "config dir")]
    return []


def _writable(directory: Path) -> bool:
    return os.access(directory, os.W_OK | os.X_OK)


def _why_not(directory: Path) -> str:
    """Why a directory `_writable` refused cannot be written, in the OS's words."""
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS).lower()
    except OSError:
        pass
    return os.strerror(errno.EACCES).lower()


# --- what the modes do with them ----------------------------------------------------------

def first_stop(troubles: list[Trouble]) -> Trouble | None:
    """The trouble that stops a terminal mode, if any."""
    return next((t for t in troubles if t.severity == "stop"), None)


def warnings(troubles: list[Trouble]) -> list[Trouble]:
    """The troubles a terminal mode warns about and goes on."""
    return [t for t in troubles if t.severity == "warn"]
