"""Processes in tests: `python -c` children with pipes, a pid that names no process any
more, and /proc-based checks that processes and process groups are really gone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def child(script: str, *args: str, stdin: bool = False) -> subprocess.Popen:
    """Start ``python -c <script> args...`` with pipes (text mode, line buffered)."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=dict(os.environ),
    )


def run_child(script: str, *args: str, timeout: float = 30) -> str:
    """Run a child to completion; return its stdout (fail with its stderr)."""
    proc = child(script, *args)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}): {err}"
    return out


def dead_pid() -> int:
    """The pid of a child that has exited and been reaped: no process has this id (until
    the system reuses it)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may contain spaces; fields after the closing paren are well-formed
    return data[data.rindex(")") + 2:].split()


def pid_alive(pid: int) -> bool:
    """True while `pid` is a live (not zombie) process."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def live_group_members(pgid: int) -> list[int]:
    """Pids of live (not zombie) processes whose process group is `pgid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def proc_status_kb(pid: int, field: str) -> int:
    """A `kB` figure of /proc/<pid>/status (`VmRSS`, `VmHWM`, ...)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)
