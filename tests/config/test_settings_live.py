"""LiveSettings' per-turn fast path (kward/config/settings.py): while config.json is unchanged,
`current()` is one stat (no read, no copy, no resolution); any change is still seen."""

import json
import os

from kward.config.store import ConfigStore, resolve_paths
from kward.config.settings import LiveSettings


class CountingStore(ConfigStore):
    loads = 0

    def load(self):
        self.loads += 1
        return super().load()


def test_an_unchanged_config_json_is_not_read_again_and_every_change_is_seen(tmp_path):
    paths = resolve_paths({"HOME": str(tmp_path)})
    store = CountingStore(paths)
    live = LiveSettings(store, {})
    first = live.current()  # no file yet
    assert live.current() is first and store.loads == 1
    store.update({"openai_model": "gpt-5.4"})  # this process writes
    second = live.current()
    assert second.providers.model("codex").model == "gpt-5.4" and store.loads == 2
    assert live.current() is second and live.current() is second and store.loads == 2
    paths.config_file.write_text(json.dumps({"openai_model": "gpt-5.2"}))  # a hand edit
    third = live.current()
    assert third.providers.model("codex").model == "gpt-5.2" and store.loads == 3
    st = paths.config_file.stat()  # the same content written again, later: read, same object
    paths.config_file.write_text(json.dumps({"openai_model": "gpt-5.2"}))
    os.utime(paths.config_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert live.current() is third and store.loads == 4
    assert live.reload() is not third and store.loads == 5  # reload resolves regardless
    paths.config_file.unlink()
    assert live.current().providers.model("codex").model != "gpt-5.2"


def test_the_stamp_is_none_without_a_file_and_unequal_to_anything_when_unreadable(tmp_path):
    paths = resolve_paths({"HOME": str(tmp_path)})
    store = ConfigStore(paths)
    assert store.stamp() is None
    paths.config_file.parent.mkdir(parents=True)
    paths.config_file.write_text("{}")
    assert store.stamp() == store.stamp() is not None
    blocked = ConfigStore(resolve_paths({"HOME": str(tmp_path), "KWARD_CONFIG_PATH": str(paths.config_file / "x")}))
    assert blocked.stamp() != blocked.stamp()  # (a file where a directory must be: ENOTDIR)
