"""`kward rpc` started by a person at a terminal says, in one stderr line, what it speaks
and where that is documented; started by a UI (pipes) it says nothing. Either way stdout
carries protocol frames only."""

import json
import os
import subprocess

from kward import __version__
from kward.rpc.main import TERMINAL_NOTE
from lib.rpc_client import frame, kward_env, spawn_kward

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}


def _answer(stdout: bytes) -> dict:
    header, body = stdout.split(b"\r\n\r\n", 1)
    assert header == f"Content-Length: {len(body)}".encode()  # one frame, nothing else
    return json.loads(body)


def test_on_a_terminal_one_line_on_stderr_and_the_protocol_still_served(isolated_home):
    master, slave = os.openpty()
    try:
        proc = spawn_kward(isolated_home, env=kward_env(isolated_home), stdin=slave)
        os.close(slave)
        slave = -1
        body = json.dumps(INITIALIZE).encode()
        # `\n` line ends (a terminal turns `\r` into `\n`), a newline after the body (it delivers
        # whole lines), then Ctrl-D: the end of the input
        os.write(master, b"Content-Length: %d\n\n%s\n\x04" % (len(body), body))
        out, err = proc.communicate(timeout=30)
    finally:
        for fd in (master, slave):
            if fd >= 0:
                os.close(fd)
    assert proc.returncode == 0
    assert err.decode() == TERMINAL_NOTE and TERMINAL_NOTE.count("\n") == 1
    assert "JSON-RPC 2.0" in TERMINAL_NOTE and "man kward" in TERMINAL_NOTE and "docs/protocol.md" in TERMINAL_NOTE
    assert _answer(out)["result"]["serverVersion"] == __version__


def test_started_with_pipes_it_says_nothing(isolated_home):
    proc = spawn_kward(isolated_home)
    out, err = proc.communicate(frame(INITIALIZE), timeout=30)
    assert (proc.returncode, err) == (0, b"")
    assert _answer(out)["result"]["serverVersion"] == __version__


def test_with_stdin_from_dev_null_it_says_nothing(isolated_home):
    proc = spawn_kward(isolated_home, stdin=subprocess.DEVNULL)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out, err) == (0, b"", b"")
