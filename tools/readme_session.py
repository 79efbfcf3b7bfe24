#!/usr/bin/env python3
"""Capture a real interactive `kward` session as text, for the README.

    python3 tools/readme_session.py            # prints the screen after the session

Runs this checkout's `python3 -m kward` on a pseudo-terminal (100 columns, colours on) in a
temporary home and workspace, with the offline Scripted provider playing one turn: the
model reads a file, edits it, runs it and answers in Markdown. It types the request,
then `/status`, then Ctrl-D, and prints what the terminal shows at the end (styles
dropped: the screen emulator of tests/lib/screen.py keeps the characters and where they
are). Nothing is read from or written to the real ~/.kward; no network.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT / "tests"))
sys.path.insert(0, str(CHECKOUT))

from lib.screen import Screen  # noqa: E402

COLS, ROWS = 100, 400
PROMPT = "kward> "
ANSWER = (
    "## Fixed\n\n"
    "`greet()` now says **hello** with a capital letter and takes the name:\n\n"
    "```python\n"
    "def greet(name):\n"
    "    return f\"Hello, {name}!\"\n"
    "```\n\n"
    "| file | change |\n"
    "|---|---|\n"
    "| hello.py | greeting capitalised, name added |\n\n"
    "- Ran it: prints `Hello, world!`\n"
    "- See [PEP 8](https://peps.python.org/pep-0008/) for the naming.\n"
)
STEPS = [
    [{"type": "reasoning", "text": "The greeting is lowercase; read hello.py first."},
     {"type": "toolCall", "name": "read_file", "arguments": {"path": "hello.py"}}],
    [{"type": "toolCall", "name": "edit_file", "arguments": {"path": "hello.py", "edits": [
        {"old_text": "def greet():\n    return \"hello world\"",
         "new_text": "def greet(name):\n    return f\"Hello, {name}!\""},
        {"old_text": "print(greet())", "new_text": "print(greet(\"world\"))"}]}}],
    [{"type": "toolCall", "name": "run_shell_command", "arguments": {"command": "python3 hello.py"}}],
    [{"type": "text", "text": piece} for piece in re.findall(r".{1,7}", ANSWER, re.S)],
]


def _read_until(fd: int, buffer: bytearray, needle: str, count: int, timeout: float = 20.0) -> None:
    """Read the terminal until `needle` was shown `count` times in all (escapes removed)."""
    deadline = time.monotonic() + timeout
    while re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.decode("utf-8", "replace")).count(needle) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no {needle!r} on the screen")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            buffer += data


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kward-readme-") as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "home" / "demo"
        ws.mkdir(parents=True)
        (ws / "hello.py").write_text("def greet():\n    return \"hello world\"\n\n\nprint(greet())\n")
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"steps": STEPS}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KWARD_", "OPENAI_", "OPENROUTER_"))
               and k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR")}
        env.update(HOME=str(home), KWARD_CONFIG_PATH=str(home / ".kward" / "config.json"), TERM="xterm-256color",
                   KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script), KWARD_COLOR="always",
                   PYTHONPATH=str(CHECKOUT), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
                   COLUMNS=str(COLS), LINES="50", LANG="C.UTF-8")
        master, slave = pty.openpty()
        os.set_inheritable(slave, True)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLS, 0, 0))
        proc = subprocess.Popen([sys.executable, "-m", "kward", "--yes"], stdin=slave, stdout=slave, stderr=slave, env=env,
                                cwd=ws, start_new_session=True)
        os.close(slave)
        out = bytearray()
        try:
            _read_until(master, out, PROMPT, 1)
            os.write(master, b"capitalise the greeting in hello.py\r")
            _read_until(master, out, PROMPT, 2)
            os.write(master, b"/status\r")
            _read_until(master, out, PROMPT, 3)
            os.write(master, b"\x04")
            proc.wait(20)
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(master)
        screen = Screen(COLS, ROWS)
        screen.feed(out.decode("utf-8", "replace").replace(str(home), "~"))
        print("\n".join(screen.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
