"""The shell sandbox tests' fixtures: `usable` (skip without a working bwrap; on CI,
``CI=true`` or ``KWARD_CI=1`` as .ci/run sets, fail instead, so the sandbox is always tested
there) and `root` (a fresh directory below /var/tmp, not /tmp, so that what the sandbox's
private /tmp hides anyway cannot make a test pass)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from kward import sandbox

ON_CI = os.environ.get("CI", "").lower() == "true" or os.environ.get("KWARD_CI") == "1"


def why_not() -> str | None:
    """None when bwrap works here (with and without network), else why not."""
    bwrap = sandbox.find_bwrap(os.environ)
    if bwrap is None:
        return "bwrap is not installed"
    return sandbox.probe(bwrap, True) or sandbox.probe(bwrap, False)


WHY_NOT = why_not()


@pytest.fixture
def usable() -> None:
    if WHY_NOT is not None:
        (pytest.fail if ON_CI else pytest.skip)(f"no usable bwrap: {WHY_NOT}")


@pytest.fixture
def root() -> Iterator[Path]:
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="kward-sandbox-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)
