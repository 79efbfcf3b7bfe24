"""kward's credential variables, and their removal from the process's own environment block.

The credentials kward reads from its environment (`OPENAI_ACCESS_TOKEN`,
`OPENROUTER_API_KEY`, any ``KWARD_*`` variable named like a secret: `is_credential_variable`)
must not be readable by the processes its tools start. Their environments are built
without them (`kward.tools.process.child_environment`), but on Linux any process of the
same user can also read ``/proc/<kward pid>/environ``: the memory range the kernel filled
at exec (``env_start``..``env_end``, fields 50 and 51 of ``/proc/self/stat``), which
neither ``os.environ`` nor ``unsetenv`` ever touch.

`hide_credentials()`, called first thing by the entry point (`kward.cli.main`) and only
when such a variable is present, keeps the values where kward reads them (the
``os.environ`` mapping, a copy Python made at start) and removes them from what the
process shows and hands on: ``os.unsetenv`` drops them from the C ``environ`` array (so a
child started with the inherited environment has none of them), and their
``NAME=value`` strings in the exec-time block are overwritten with NUL bytes through
``/proc/self/mem`` (the process may write its own memory; no second interpreter start).
Where that write is refused (a kernel without /proc, or one that forbids it), kward
re-executes itself once without the variables and hands their values over an inherited
pipe (`FD_VARIABLE` names its descriptor; `hide_credentials` in the new process reads and
closes it and puts the values back into ``os.environ`` only; a variable naming a
descriptor of 0 to 2 or one that is not a pipe is dropped unread).

Stdlib ``os``, ``sys`` and ``typing`` only: this runs when only `kward` and `kward.cli`
are imported, before the rest of kward (``json`` and ``stat`` are imported where needed).
Main thread, before any other thread exists.
"""

from __future__ import annotations

import os
import sys

from typing import MutableMapping

#: Environment variables kward reads as credentials (kept from child processes too).
CREDENTIAL_VARIABLES = frozenset({"OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY"})
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_CREDENTIALS")
#: The descriptor the re-executed process reads the credentials from (the fallback).
FD_VARIABLE = "KWARD_CREDENTIALS_FD"


def is_credential_variable(name: str) -> bool:
    """True for kward's credential variables, including any ``KWARD_*_KEY/_TOKEN/...``."""
    upper = name.upper()
    return upper in CREDENTIAL_VARIABLES or (upper.startswith("KWARD_") and upper.endswith(SECRET_SUFFIXES))


def credential_names(environ: MutableMapping[str, str]) -> list[str]:
    return [name for name in environ if is_credential_variable(name)]


def hide_credentials(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Take kward's credential variables out of the process's environment block and C
    environ, keeping them in `environ` (see the module docstring). True when the exec-time
    block holds none of their values afterwards (or there were none). May re-execute the
    process (the fallback); does not return then."""
    handed = environ.pop(FD_VARIABLE, None)
    if handed is not None:
        os.unsetenv(FD_VARIABLE)
        _receive(handed, environ)
    names = credential_names(environ)
    if not names:
        return True
    for name in names:
        os.unsetenv(name)
    blanked = {os.fsencode(name) for name in names} | ({FD_VARIABLE.encode()} if handed is not None else set())
    if blank_environment_block(blanked):
        return True
    if handed is None and sys.platform.startswith("linux") and _reexec(names, environ):
        return True  # (not reached: the process was replaced)
    return False


def environment_block() -> tuple[int, int] | None:
    """(env_start, env_end) of this process, from /proc/self/stat; None without /proc."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # fields 3.. (the name may hold spaces and parens)
    try:
        start, end = int(fields[50 - 3]), int(fields[51 - 3])
    except (IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def blank_environment_block(names: set[bytes]) -> bool:
    """Overwrite every ``NAME=value`` string of `names` in the exec-time environment block
    with NUL bytes; True when none is left there (read back)."""
    span = environment_block()
    if span is None:
        return False
    start, end = span
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            offset = 0
            for entry in block.split(b"\0"):
                if entry.partition(b"=")[0] in names:
                    mem.seek(start + offset)
                    mem.write(b"\0" * len(entry))
                offset += len(entry) + 1
            mem.seek(start)
            block = mem.read(end - start)
    except (OSError, ValueError, OverflowError):
        return False
    return not any(entry.partition(b"=")[0] in names for entry in block.split(b"\0"))


def _reexec(names: list[str], environ: MutableMapping[str, str]) -> bool:
    """Start this program again without the credential variables, their values on a pipe.
    False when that cannot be done (the process then keeps them in its block)."""
    import json

    argv = getattr(sys, "orig_argv", None)
    if not argv or not sys.executable:
        return False
    payload = json.dumps({name: environ[name] for name in names}).encode("utf-8")
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return False
    try:
        if len(payload) > 65536:  # more than a pipe holds before a reader exists
            return False
        os.write(write_end, payload)
        os.close(write_end)
        write_end = -1
        os.set_inheritable(read_end, True)
        env = {k: v for k, v in environ.items() if k not in names}
        env[FD_VARIABLE] = str(read_end)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *argv[1:]], env)
    except OSError:
        return False
    finally:
        if write_end >= 0:
            os.close(write_end)
        os.close(read_end)


def _receive(handed: str, environ: MutableMapping[str, str]) -> None:
    """The values a re-executing parent wrote on descriptor `handed`, into `environ` (and
    out of the C environ again). Only a descriptor above 2 that is a pipe is read (and
    closed): the variable may come from anyone's environment, and must not make kward eat
    its standard input or another file it was given."""
    import json
    import stat

    try:
        fd = int(handed)
        if fd <= 2 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        with os.fdopen(fd, "rb") as f:
            values = json.loads(f.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError, OverflowError):
        return
    if isinstance(values, dict):
        for name, value in values.items():
            if isinstance(name, str) and isinstance(value, str) and is_credential_variable(name):
                environ[name] = value
                os.unsetenv(name)
