"""The warm-up's last step: the collector's young generations are collected, so the
collection the warm-up's imports made due does not land in one of the first turns."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from kward.rpc.warmup import imports_for


class _Methods:
    def __iter__(self):
        return iter(["one/method"])

    def handler(self, name):
        return name


def test_the_warm_up_ends_by_collecting_the_young_generations():
    steps = imports_for(_Methods(), SimpleNamespace(warm_up_modules=lambda: ["json"]))()
    enabled = gc.isenabled()
    gc.disable()  # no collection of its own accord meanwhile
    try:
        young = [[] for _ in range(1000)]  # what imports leave behind: tracked, young, alive
        assert gc.get_count()[0] >= 1000
        for step in steps:
            step()
        assert gc.get_count()[0] < 100 and gc.get_count()[1] == 0
    finally:
        if enabled:
            gc.enable()
    assert len(young) == 1000
