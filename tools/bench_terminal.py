"""Terminal figures of one installed tree: what a user of `kward` at a terminal waits for.
The single runs behind tools/bench_trees.py's terminal rows (`--only terminal`).

Every run is one fresh process of a tree's installed console script (`kward`), driven the
way a user drives it, so old trees (before issue 22: readline, raw Markdown) and new ones
(kward's own line editor, rendered Markdown) are measured alike. Nothing of kward is
imported; only the standard library.

- `oneshot_run`: `kward PROMPT` with stdin a terminal (the slave side of a fresh pty, as
  when a user types the command) and stdout a pipe: spawn -> the first byte on stdout
  (`first`), spawn -> reaped (`wall`), the child's user + sys CPU (`cpu`, `os.wait4`).
  The answer read is checked (it must end with what the script answers).
- `oneshot_tty_run`: the same with stdout and stderr the pty (colours by the terminal's
  rules): spawn -> the first byte shown (`first`), -> the answer's last line shown
  (`last`), -> reaped (`wall`), CPU.
- `interactive_run`: `kward` on a pty whose slave side is its stdin, stdout, stderr and
  controlling terminal (LAUNCH, as tests/lib/pty_term.py: the launcher makes itself the
  session leader's controlling tty and execs the console script, so the pid is kward's):
  spawn -> `kward> ` shown (`prompt`); VmRSS of that pid at that moment (`rss`, MiB; its
  /proc cmdline is checked to be the console script's); then THINK seconds of a user
  reading the screen (output is read meanwhile: select with a deadline, no sleep); then
  the request typed in one write, its echo awaited, Enter written -> the answer's last
  line and the next `kward> ` after it shown (`turn`); VmRSS then (`rss_after`); Ctrl-D
  written -> the pty's end of output and the child reaped (`exit`, status 0 required);
  CPU of the whole session (`cpu`).

Output is matched on the raw bytes read (the prompt, the echo and the answer's last line
are each written in one piece by both kinds of tree), stamped with `time.perf_counter()`
right after the `os.read` that completed the match. The caller gives every process its
own HOME and config dir (`env`), keyring's fail backend and the Scripted provider.

`Runner` puts these together for one tree: `setup()` makes its workspace and a HOME
template (one untimed interactive session with the long answer: the config dir, history
and one session a user's would have); `run(kind)` is one run of a figure (`KINDS`) in a
fresh copy of that template (copied before the spawn, removed after the run), so every
process starts alike and nothing piles up between runs. `TABLE_ROWS` are the table rows the
runs give (bench_trees.py prints them).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import fcntl
import termios

LAUNCH = ("import fcntl, os, sys, termios\n"
          "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
          "os.execvp(sys.argv[1], sys.argv[1:])\n")  # (the kward argv follows)
PROMPT = b"kward> "
PTY_ROWS, PTY_COLS = 40, 120  # the pty's size
THINK = 1.0  # seconds between the first prompt and the typed request (a user reading the screen)
TIMEOUT = 30.0  # seconds any one wait may take
REQUEST = "Write the report on the project."
SHORT_ANSWER = "Hello there."
CHUNK = 24  # characters per streamed text delta of the long answer
LAST_LINE = "That is the whole report."


def markdown_answer() -> str:
    """About 200 lines of Markdown as a model writes them: headings, emphasis, inline
    code, links, lists (nested, numbered), block quotes, fenced code, tables; its last
    line is LAST_LINE (a plain paragraph, shown as it is)."""
    out = ["# A report on the project", "",
           "This report walks through the **six layers** of the project, with *examples*, code and tables.", ""]
    for i in range(1, 7):
        out += [f"## Part {i}: the layer of step {i}", "",
                f"The **layer {i}** reads *requests* and writes `answers`; see",
                f"[the docs](https://example.com/docs/{i}) for the details, and the `config.json` keys it honours.", "",
                "- a point in **bold**, with `inline code`",
                "- a point with a [link](https://example.com/x)",
                "  - a nested point, *emphasised*",
                "- a last point", "",
                "1. first, read the file",
                "2. then, change it",
                "3. last, run the tests", "",
                f"> A note on part {i}:", "> it is quoted, on two lines.", "",
                "```python",
                f"def part_{i}(n: int) -> int:",
                f'    """Part {i}: the sum of the first n multiples."""',
                "    total = 0",
                "    for k in range(n):",
                f"        total += k * {i}",
                "    return total",
                "```", "",
                "| name | kind | size | note |",
                "|---|---|---:|---|",
                f"| alpha{i} | file | 1,024 | the **first** |",
                "| beta | directory | 42 | `code` |",
                "| gamma | link | 7 | [x](https://example.com) |", ""]
    out += ["```sh", "python3 -m pytest -q", "```", "", LAST_LINE]
    return "\n".join(out) + "\n"


def text_script(text: str, chunk: int | None = None) -> dict[str, Any]:
    """A Scripted-provider script (looped) answering `text` in deltas of `chunk` characters."""
    pieces = [text] if chunk is None else [text[i:i + chunk] for i in range(0, len(text), chunk)]
    return {"loop": True, "steps": [[{"type": "text", "text": p} for p in pieces]]}


class Failed(RuntimeError):
    """A run did not go as a user's would (a timeout, an exit status, an unexpected answer)."""


def _pty() -> tuple[int, int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", PTY_ROWS, PTY_COLS, 0, 0))
    return master, slave


def _reap(pid: int) -> tuple[float, int, float]:
    """(time reaped, exit status, user + sys CPU seconds) of the child `pid`."""
    _, status, usage = os.wait4(pid, 0)
    return time.perf_counter(), os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End a child that misbehaved, and its process group when it leads one; reaped."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        os.wait4(proc.pid, 0)  # not Popen.wait(): the caller reaps with wait4 too
    except (ProcessLookupError, ChildProcessError):
        pass
    proc.returncode = -9


class Reader:
    """The output side of a child (a pipe or a pty master): bytes read with select and a
    deadline, each wait ending at the read that completed what it waits for."""

    def __init__(self, fd: int):
        self.fd = fd
        self.data = bytearray()
        self.eof = False
        self.t_first: float | None = None  # when the first byte was read

    def _read(self, deadline: float) -> float:
        """One read (or none by the deadline); the time it returned."""
        left = deadline - time.perf_counter()
        if left > 0 and select.select([self.fd], [], [], left)[0]:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:  # EIO: a pty whose slave side is closed
                chunk = b""
            t = time.perf_counter()
            if chunk and self.t_first is None:
                self.t_first = t
            self.data += chunk
            self.eof = not chunk
            return t
        return time.perf_counter()

    def until(self, *needles: bytes, start: int = 0, timeout: float = TIMEOUT) -> tuple[float, int]:
        """Wait until `needles` appear in that order from offset `start`; (the time of the
        read that completed them, the offset after the last)."""
        deadline = time.perf_counter() + timeout
        t = time.perf_counter()
        while True:
            pos = start
            for needle in needles:
                i = self.data.find(needle, pos)
                if i < 0:
                    break
                pos = i + len(needle)
            else:
                return t, pos
            if self.eof or t >= deadline:
                tail = bytes(self.data[start:])[-400:]
                raise Failed(f"{'output ended' if self.eof else 'timed out'} waiting for {needles!r}; "
                             f"output since: {tail!r}")
            t = self._read(deadline)

    def drain(self, seconds: float) -> None:
        """Read whatever comes for `seconds` (the time passes with output read, not slept)."""
        deadline = time.perf_counter() + seconds
        while not self.eof and time.perf_counter() < deadline:
            self._read(deadline)

    def to_end(self, timeout: float = TIMEOUT) -> float:
        """Read to the end of output; the time it ended."""
        deadline = time.perf_counter() + timeout
        t = time.perf_counter()
        while not self.eof:
            if t >= deadline:
                raise Failed("the output did not end")
            t = self._read(deadline)
        return t


def _stderr_tail(f: Any) -> str:
    f.seek(0)
    lines = f.read().decode(errors="replace").strip().splitlines()
    return f"; its stderr ends: {lines[-1][-300:]}" if lines else ""


def oneshot_run(kward: str, env: dict[str, str], ws: Path, answer: str, prompt: str = REQUEST) -> dict[str, float]:
    """`kward PROMPT`, stdin a terminal, stdout a pipe (module docstring):
    {"first", "wall", "cpu"} in seconds."""
    master, slave = _pty()
    err = tempfile.TemporaryFile()
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen([kward, prompt], stdin=slave, stdout=subprocess.PIPE, stderr=err, env=env,
                                cwd=ws, close_fds=True)
        os.close(slave)
        slave = -1
        assert proc.stdout is not None
        out = Reader(proc.stdout.fileno())
        try:
            out.to_end()
        except BaseException:
            _kill(proc)
            raise
        finally:
            proc.stdout.close()
        t_exit, code, cpu = _reap(proc.pid)
        proc.returncode = code
        if code != 0:
            raise Failed(f"kward PROMPT exited {code}{_stderr_tail(err)}")
        if out.data.decode(errors="replace").strip() != answer.strip():
            raise Failed(f"unexpected answer on stdout: {bytes(out.data)[:200]!r}...")
        assert out.t_first is not None
        return {"first": out.t_first - t0, "wall": t_exit - t0, "cpu": cpu}
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
        err.close()


def oneshot_tty_run(kward: str, env: dict[str, str], ws: Path, last_line: str = LAST_LINE,
                    prompt: str = REQUEST) -> dict[str, float]:
    """`kward PROMPT` with stdin, stdout and stderr the pty (module docstring):
    {"first", "last", "wall", "cpu"} in seconds."""
    master, slave = _pty()
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen([kward, prompt], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ws,
                                close_fds=True, start_new_session=True)
        os.close(slave)
        slave = -1
        out = Reader(master)
        try:
            t_last, _ = out.until(last_line.encode())
            out.to_end()
        except BaseException:
            _kill(proc)
            raise
        t_exit, code, cpu = _reap(proc.pid)
        proc.returncode = code
        if code != 0:
            raise Failed(f"kward PROMPT on a terminal exited {code}: {bytes(out.data)[-300:]!r}")
        assert out.t_first is not None
        return {"first": out.t_first - t0, "last": t_last - t0, "wall": t_exit - t0, "cpu": cpu}
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


def vm_rss(pid: int) -> float:
    """VmRSS of `pid` in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def interactive_run(kward: str, env: dict[str, str], ws: Path, last_line: str = LAST_LINE,
                    request: str = REQUEST) -> dict[str, float]:
    """`kward` on a pty, a turn, Ctrl-D (module docstring): {"prompt", "turn", "exit",
    "cpu"} in seconds and {"rss", "rss_after"} in MiB."""
    master, slave = _pty()
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, kward], stdin=slave, stdout=slave, stderr=slave,
                                env=env, cwd=ws, close_fds=True, start_new_session=True)
        os.close(slave)
        slave = -1
        out = Reader(master)
        try:
            t_prompt, mark = out.until(PROMPT)
            rss = vm_rss(proc.pid)
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
            if kward.encode() not in cmdline:
                raise Failed(f"pid {proc.pid} is not the console script at its prompt: {cmdline!r}")
            out.drain(THINK)
            mark = len(out.data)
            os.write(master, request.encode())
            _, mark = out.until(request.encode(), start=mark)
            t_enter = time.perf_counter()
            os.write(master, b"\r")
            t_next, mark = out.until(last_line.encode(), PROMPT, start=mark)
            rss_after = vm_rss(proc.pid)
            t_eof = time.perf_counter()
            os.write(master, b"\x04")
            out.to_end()
        except BaseException:
            _kill(proc)
            raise
        t_exit, code, cpu = _reap(proc.pid)
        proc.returncode = code
        if code != 0:
            raise Failed(f"interactive kward exited {code} after Ctrl-D: {bytes(out.data)[-300:]!r}")
        return {"prompt": t_prompt - t0, "rss": rss, "turn": t_next - t_enter, "rss_after": rss_after,
                "exit": t_exit - t_eof, "cpu": cpu}
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


# --- one tree's figures ----------------------------------------------------------------

#: Variables of the caller's environment that would change what kward does or shows (and
#: every KWARD_* variable): the runs set what they need.
DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "OPENAI_ACCESS_TOKEN", "OPENROUTER_API_KEY",
           "OPENAI_MODEL", "NO_COLOR", "FORCE_COLOR", "COLORTERM", "COLUMNS", "LINES", "VISUAL", "EDITOR")
KINDS = ("oneshot", "oneshot_md", "oneshot_tty", "interactive")
LONG_LINES = markdown_answer().count("\n")
LONG_DELTAS = -(-len(markdown_answer()) // CHUNK)
_LONG = f"{LONG_LINES}-line Markdown answer ({LONG_DELTAS} deltas of {CHUNK} chars)"

#: (kind, key, row label, unit: "ms" or "MiB") of the table's terminal rows.
TABLE_ROWS: list[tuple[str, str, str, str]] = [
    ("oneshot", "first",
     f"one-shot `kward PROMPT`, answer {SHORT_ANSWER!r}, stdout a pipe: spawn -> first answer byte, ms", "ms"),
    ("oneshot", "wall", "one-shot, short answer, stdout a pipe: spawn -> exit, ms", "ms"),
    ("oneshot", "cpu", "one-shot, short answer, stdout a pipe: CPU user+sys, ms", "ms"),
    ("oneshot_md", "first", f"one-shot, {_LONG}, stdout a pipe: spawn -> first answer byte, ms", "ms"),
    ("oneshot_md", "wall", "one-shot, long Markdown answer, stdout a pipe: spawn -> exit, ms", "ms"),
    ("oneshot_md", "cpu", "one-shot, long Markdown answer, stdout a pipe: CPU user+sys, ms", "ms"),
    ("oneshot_tty", "first", "one-shot, long Markdown answer, stdout+stderr a pty (KWARD_COLOR=always): "
     "spawn -> first byte shown, ms", "ms"),
    ("oneshot_tty", "last", "one-shot, long Markdown answer on a pty: spawn -> its last line shown, ms", "ms"),
    ("oneshot_tty", "wall", "one-shot, long Markdown answer on a pty: spawn -> exit, ms", "ms"),
    ("oneshot_tty", "cpu", "one-shot, long Markdown answer on a pty: CPU user+sys, ms", "ms"),
    ("interactive", "prompt", f"interactive `kward` on a pty ({PTY_ROWS}x{PTY_COLS}, TERM=xterm, KWARD_COLOR=always): "
     "spawn -> first `kward> ` shown, ms", "ms"),
    ("interactive", "rss", "interactive: VmRSS of the kward process at its first prompt, MiB", "MiB"),
    ("interactive", "turn", f"interactive turn, {_LONG}: Enter -> its last line and the next `kward> ` shown, ms",
     "ms"),
    ("interactive", "rss_after", "interactive: VmRSS at the prompt after that turn, MiB", "MiB"),
    ("interactive", "exit", "interactive: Ctrl-D at the prompt -> exited (reaped), ms", "ms"),
    ("interactive", "cpu", f"interactive session (start, {THINK:g} s idle, the turn, Ctrl-D): CPU user+sys, ms",
     "ms"),
]


def user_env(home: Path, script: Path, **extra: str) -> dict[str, str]:
    """The environment of one run: HOME `home`, its config dir `home/.kward`, keyring's
    fail backend (no credential store touched), the Scripted provider playing `script`,
    TERM=xterm; nothing of the caller's kward, colour or editor settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWARD_") and k not in DROPPED}
    env.update(HOME=str(home), KWARD_CONFIG_PATH=str(home / ".kward" / "config.json"),
               PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", KWARD_PROVIDER="scripted",
               KWARD_SCRIPT=str(script), TERM="xterm")
    env.update(extra)
    return env


class Runner:
    """The terminal figures of one tree's console script `kward`, under `root` (module
    docstring). Not thread-safe: one run at a time."""

    def __init__(self, kward: str, root: Path):
        self.kward, self.root = kward, root
        self.ws = root / "ws"
        self.template = root / "home-template"
        self.short = root / "short.json"
        self.long = root / "long.json"
        self._runs = 0

    def setup(self) -> None:
        self.ws.mkdir(parents=True)
        (self.ws / "README.md").write_text("# Widget\n\nA small project.\n")
        self.short.write_text(json.dumps(text_script(SHORT_ANSWER)))
        self.long.write_text(json.dumps(text_script(markdown_answer(), CHUNK)))
        self.template.mkdir()
        interactive_run(self.kward, user_env(self.template, self.long, KWARD_COLOR="always"), self.ws)

    def case(self, kind: str) -> Callable[[], dict[str, float]]:
        assert kind in KINDS, kind
        return lambda: self.run(kind)

    def run(self, kind: str) -> dict[str, float]:
        self._runs += 1
        home = self.root / f"home-{self._runs}"
        shutil.copytree(self.template, home, symlinks=True)
        try:
            if kind == "oneshot":
                return oneshot_run(self.kward, user_env(home, self.short), self.ws, SHORT_ANSWER)
            if kind == "oneshot_md":
                return oneshot_run(self.kward, user_env(home, self.long), self.ws, markdown_answer())
            color = user_env(home, self.long, KWARD_COLOR="always")
            if kind == "oneshot_tty":
                return oneshot_tty_run(self.kward, color, self.ws)
            return interactive_run(self.kward, color, self.ws)
        finally:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":  # a look at the answer the long figures stream
    sys.stdout.write(markdown_answer())
