"""Editing the input in the user's editor: `$VISUAL`, else `$EDITOR` (Ctrl-X Ctrl-E, /edit).

`edit(text, env)` writes `text` to a private temp file (a fresh directory of mode 0700,
the file 0600), runs the editor on it (the command split with `shlex`, the file's path
appended) on the terminal in its normal mode, reads the file back (one trailing line
break stripped, CRLF made LF, control characters but tab and LF dropped) and removes the
directory. The result is the new text, or a one-line `problem` (neither variable set, the
editor not found, or exited non-zero: the text is then unchanged).

While the editor runs, a Ctrl-C on the terminal reaches the editor (it is in the terminal's
foreground process group with kward); kward's own SIGINT handler does nothing meanwhile,
so the editor is not killed under the user, and the editor gets the default handler back
at exec. Main thread only (it sets a signal handler); the caller has put the terminal in
its normal mode.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from types import FrameType
from typing import Mapping, NamedTuple

from kward.terminal.lineedit_keys import clean_paste

NO_EDITOR = "no editor: set VISUAL or EDITOR to the command of one"


class Edited(NamedTuple):
    """The edited text, or None with the reason (one line)."""

    text: str | None
    problem: str = ""


def editor_command(env: Mapping[str, str]) -> list[str] | None:
    """The editor's argv from VISUAL, else EDITOR (blank counts as unset); None when
    neither is set. ValueError when the value cannot be split (an open quote)."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            return shlex.split(value)
    return None


def _quiet(signum: int, frame: FrameType | None) -> None:
    pass


def edit(text: str, env: Mapping[str, str]) -> Edited:
    """`text` edited in the user's editor (see the module docstring)."""
    try:
        argv = editor_command(env)
    except ValueError as exc:
        return Edited(None, f"the editor command cannot be read ({exc}): fix VISUAL or EDITOR")
    if not argv:
        return Edited(None, NO_EDITOR)
    try:
        return _run(argv, text, env)
    except OSError as exc:  # the temp file (TMPDIR unusable, the disk full)
        where = f"{exc.filename}: " if exc.filename else ""
        return Edited(None, f"the input could not be handed to the editor: {where}{exc.strerror or exc}")


def _run(argv: list[str], text: str, env: Mapping[str, str]) -> Edited:
    directory = tempfile.mkdtemp(prefix="kward-edit-")
    try:
        path = os.path.join(directory, "input.md")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        on_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, _quiet) if on_main else None
        try:
            status = subprocess.run([*argv, path], env=dict(env)).returncode
        except OSError as exc:
            return Edited(None, f"the editor could not be started: {argv[0]}: {exc.strerror or exc}")
        finally:
            if on_main:
                signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        if status != 0:
            how = f"status {status}" if status > 0 else f"signal {-status}"
            return Edited(None, f"the editor exited with {how}; the input is unchanged")
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            edited = f.read()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    edited = edited.replace("\r\n", "\n")
    if edited.endswith("\n"):
        edited = edited[:-1]
    return Edited(clean_paste(edited))
