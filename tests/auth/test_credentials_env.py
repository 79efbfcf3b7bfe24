"""kward.credential_env in a fresh interpreter: the credential variables leave the
environment block (in place, or through the re-exec fallback) and stay in os.environ."""

from __future__ import annotations

import ast
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
