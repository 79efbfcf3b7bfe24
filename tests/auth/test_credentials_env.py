"""kward.credential_env in a fresh interpreter: the credential variables leave the
environment block (in place, or through the re-exec fallback) and stay in os.environ."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

from lib.paths import REPO

KEY = "sk-or-v1-BLOCKKEY0123456789abcdef"

SCRIPT = r'''
import os, sys, subprocess
import kward.credential_env as ce
first = ce.FD_VARIABLE not in os.environ
if first and sys.argv[1] == "refused":
    ce.blank_environment_block = lambda names: False  # as where /proc/self/mem is not writable
hidden = ce.hide_credentials()
child = subprocess.run(["/bin/sh", "-c", "env"], capture_output=True).stdout
print(repr({"hidden": hidden, "pid": os.getpid(), "block": open("/proc/self/environ", "rb").read(),
            "value": os.environ.get("OPENROUTER_API_KEY"), "child": child,
            "fd": os.environ.get(ce.FD_VARIABLE), "fds": sorted(os.listdir("/proc/self/fd"))}))
'''


def _run(mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENROUTER_API_KEY": KEY, "KWARD_OTHER_SECRET": "other-secret-42"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.decode())


def test_the_values_leave_the_block_in_place_and_stay_in_os_environ():
    found = _run("in-place")
    assert found["hidden"] is True and found["value"] == KEY
    for where in ("block", "child"):
        assert KEY.encode() not in found[where] and b"other-secret-42" not in found[where]
        assert b"OPENROUTER_API_KEY" not in found[where] and b"PYTHONPATH=" in found[where]


def test_where_the_block_cannot_be_written_the_process_restarts_without_them():
    found = _run("refused")
    assert found["hidden"] is True and found["value"] == KEY
    assert KEY.encode() not in found["block"] and KEY.encode() not in found["child"]
    assert found["fd"] is None and b"KWARD_CREDENTIALS_FD" not in found["block"]
    assert len(found["fds"]) <= 4  # 0, 1, 2 and the listing's own: the pipe was closed


HANDED = r'''
import json, os, stat, sys
import kward.credential_env as ce
fd = int(sys.argv[1])
kind = "pipe" if stat.S_ISFIFO(os.fstat(fd).st_mode) else "file"
ce.hide_credentials()
try:
    rest = os.read(fd, 100)
except OSError as exc:
    rest = repr(exc).encode()
print(repr({"kind": kind, "value": os.environ.get("OPENROUTER_API_KEY"), "fd": os.environ.get(ce.FD_VARIABLE),
            "rest": rest}))
'''


def _handed(fd: int, **popen) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "KWARD_CREDENTIALS_FD": str(fd)}
    env.pop("OPENROUTER_API_KEY", None)
    proc = subprocess.run([sys.executable, "-c", HANDED, str(fd)], capture_output=True, env=env, timeout=30, **popen)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.decode())


def test_the_handed_descriptor_is_not_stdin():
    payload = json.dumps({"OPENROUTER_API_KEY": KEY}).encode()
    found = _handed(0, input=payload + b"\nclient input")
    assert found["kind"] == "pipe" and found["value"] is None and found["fd"] is None
    assert found["rest"].startswith(payload)  # still there for whoever reads stdin


def test_a_handed_descriptor_that_is_not_a_pipe_is_ignored(tmp_path):
    held = tmp_path / "values.json"
    held.write_text(json.dumps({"OPENROUTER_API_KEY": KEY}))
    fd = os.open(held, os.O_RDONLY)
    try:
        found = _handed(fd, pass_fds=(fd,))
    finally:
        os.close(fd)
    assert found["kind"] == "file" and found["value"] is None and found["fd"] is None
    assert found["rest"].startswith(b"{")  # neither read nor closed


def test_a_handed_pipe_is_read_and_closed():
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps({"OPENROUTER_API_KEY": KEY}).encode())
    os.close(write_end)
    try:
        found = _handed(read_end, pass_fds=(read_end,))
    finally:
        os.close(read_end)
    assert found["kind"] == "pipe" and found["value"] == KEY and found["fd"] is None
    assert b"Bad file descriptor" in found["rest"]
