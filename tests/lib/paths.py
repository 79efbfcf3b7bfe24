"""Where the tests live: the checkout's root (`REPO`), its `tests/` directory (`TESTS`,
the directory that holds `lib/` and goes on PYTHONPATH for children that import `lib`)
and the committed test data (`DATA`). Computed once, here, so that a test file can move
between folders without its paths changing."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
DATA = TESTS / "data"
