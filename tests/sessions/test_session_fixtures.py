"""Session files written by an earlier kward load as they did, and turns write what they did.

tests/data/sessions/ holds session files written by real turns of the kward before the
typed core model (see tests/lib/session_fixtures.py, which also wrote the `variants` file
by hand: shapes other writers use), and, beside each, what that kward showed of it: the
transcript, the fork entries, the Markdown export, the stats, the messages a clone
re-appends and the next request body for Codex and OpenRouter, plus the turn events,
plugin observations and results of the turns that wrote it.
"""

import json

import pytest

from lib.session_fixtures import DATA, NAMES, generate, normalize, observe
from lib.session_records import parse_records


def _expected(name):
    return json.loads((DATA / f"{name}.expected.json").read_text(encoding="utf-8"))


def _lines(text, root):
    return [json.dumps(normalize(r, root)) for r in parse_records(text)]


def test_committed_session_files_load_as_they_did(tmp_path):
    fixtures = {name: (DATA / f"{name}.jsonl").read_text(encoding="utf-8") for name in NAMES}
    shown = observe(fixtures, tmp_path)
    for name in NAMES:
        expected = _expected(name)["shown"]
        for key in expected:
            assert shown[name][key] == expected[key], f"{name}: {key}"
        assert set(shown[name]) == set(expected), name


@pytest.mark.parametrize("name", [n for n in NAMES if n != "variants"])
@pytest.mark.slow
def test_turns_write_the_records_and_events_they_did(tmp_path, name):
    generated = generate(tmp_path, (name,))[name]
    committed = (DATA / f"{name}.jsonl").read_text(encoding="utf-8")
    assert _lines(generated["file"], tmp_path) == _lines(committed, tmp_path)  # key order included
    expected = _expected(name)
    for old, new in zip(expected["turns"], generated["turns"]):
        assert new["start"] == old["start"]
        # (turnDiff came later, an addition: tests/turns/test_rpc_turns_diff.py)
        events = [e for e in new["events"] if e["type"] != "turnDiff"]
        assert [e["type"] for e in events] == [e["type"] for e in old["events"]]
        for old_event, new_event in zip(old["events"], events):
            assert new_event == old_event
    assert len(generated["turns"]) == len(expected["turns"])
    assert generated["results"] == expected["results"]
