"""Real git repositories in temp dirs for the changed-file tests: `git` runs a command in a
directory (with a fixed identity, no user or system config) and `make_repo` writes files
and commits them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(cwd: Path, *args: str) -> str:
    """``git <args>`` in `cwd`; its stdout (raises when it fails)."""
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True,
                          capture_output=True, text=True).stdout


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def make_repo(root: Path, files: dict[str, str]) -> Path:
    """A repository at `root` whose first commit holds `files`; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root
