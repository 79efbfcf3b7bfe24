"""The memory store on real files: record shapes and modes, ids, forgetting that redacts,
promote and relax, retrieval scoring and limits, expiry, hit counts, torn lines, other
processes' writes, and concurrent writers losing nothing."""

import json
import os
import stat
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone

import pytest

from kward.errors import InvalidParams, MemoryNotFound, MemoryStoreError
from kward.memory import infer, records, retrieval
from kward.memory.store import MemoryStore
from lib.paths import REPO

T0 = datetime(2026, 3, 10, 12, 0, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self, now=T0):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    return MemoryStore(tmp_path / "memory", clock=clock)


def soft_lines(store):
    return [json.loads(line) for line in store.soft_path.read_text().splitlines() if line.strip()]


def test_records_have_the_reference_shapes_and_the_files_their_modes(store, tmp_path):
    ws = records.workspace_scope(str(tmp_path))
    soft = store.add_soft("we prefer pytest", ws, ["testing", "py test", "testing"])
    core = store.add_core("  Always answer\nin English ", "global")
    assert (soft.layer, core.layer) == ("soft", "core")
    assert records.to_record(soft) == {"id": "soft_001", "text": "We prefer pytest", "scope": "workspace:" + os.path.realpath(tmp_path),
                    "tags": ["testing", "py", "test"], "confidence": 0.65, "hits": 0,
                    "created_at": "2026-03-10T12:00:00.000Z", "updated_at": "2026-03-10T12:00:00.000Z",
                    "last_seen_at": "2026-03-10T12:00:00.000Z", "ttl_days": 60, "source": "manual",
                    "status": "active"}
    assert records.to_record(core) == {"id": "core_001", "text": "Always answer in English", "scope": "global", "tags": [],
                    "created_at": "2026-03-10T12:00:00.000Z", "updated_at": "2026-03-10T12:00:00.000Z",
                    "source": "explicit_user_instruction", "pinned": True}
    text = store.core_path.read_text()
    assert json.loads(text) == [records.to_record(core)] and text.startswith("[\n  {\n    \"id\": \"core_001\"")  # pretty JSON array
    assert soft_lines(store) == [records.to_record(soft)]
    events = [json.loads(line) for line in store.events_path.read_text().splitlines()]
    assert [(e["type"], e["id"], e["layer"]) for e in events] == [("add", "soft_001", "soft"), ("add", "core_001", "core")]
    assert stat.S_IMODE(os.stat(store.directory).st_mode) == 0o700
    for path in (store.core_path, store.soft_path, store.events_path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def test_text_tags_and_scope_rules():
    assert records.normalize_text("[workspace:/x] remember that we use uv") == "We use uv"
    assert records.clean_tags(["a,b  c", "a", "x" * 200] + [str(i) for i in range(20)])[:4] == ["a", "b", "c", "x" * 100]
    assert len(records.clean_tags([str(i) for i in range(20)])) == 10
    assert records.resolve_scope(None, "/") == records.resolve_scope(" global ", "/") == "global"
    assert records.resolve_scope("workspace", "/tmp") == "workspace:" + os.path.realpath("/tmp")
    for bad in ("workspace:relative/path", "team", "workspace:/a\x00b"):
        with pytest.raises(InvalidParams):
            records.resolve_scope(bad, "/")
    for bad in ("", "   ", "\n", "x" * 10_001):
        with pytest.raises(InvalidParams):
            records.memory_text(bad)


def test_ids_count_up_from_the_highest_in_the_file(store):
    store.soft_path.parent.mkdir(parents=True)
    store.soft_path.write_text(json.dumps({"id": "soft_041", "text": "old", "scope": "global", "status": "forgotten"}) + "\n")
    assert store.add_soft("new one", "global").id == "soft_042"
    store.core_path.write_text(json.dumps({"memories": [{"id": "core_007", "text": "x", "scope": "global"}]}))
    assert [m.id for m in store.core()] == ["core_007"]  # the {memories: [...]} form is read too
    assert store.add_core("next", "global").id == "core_008"
    assert isinstance(json.loads(store.core_path.read_text()), list)  # and written back as an array


def test_an_invalid_core_file_is_an_error_not_an_empty_store(store):
    store.core_path.parent.mkdir(parents=True)
    for content in ("{not json", "42", '"x"'):
        store.core_path.write_text(content)
        with pytest.raises(MemoryStoreError, match="Invalid Kward core memory JSON"):
            store.core()
        with pytest.raises(MemoryStoreError):
            store.add_core("x", "global")
    assert store.core_path.read_text() == '"x"'  # nothing was overwritten


def test_hand_edited_records_keep_what_kward_does_not_use(store, clock):
    store.core_path.parent.mkdir(parents=True)
    core = [{"id": "core_003", "text": "Written by hand", "scope": "global", "note": "mine"},
            {"id": "core_004", "scope": "global", "text": 42, "tags": ["a", 7], "pinned": "yes"}]
    store.core_path.write_text(json.dumps(core))
    soft = {"id": "soft_001", "text": "we indent with tabs", "scope": "global", "confidence": 1, "status": "active",
            "embedding": [0.5, 0.25]}
    store.soft_path.write_text(json.dumps(soft) + "\n")
    first, second = store.core()
    assert (first.text, first.tags, first.source, first.pinned) == ("Written by hand", (), "", False)
    assert first.keys == ("id", "text", "scope", "note") and first.extras == {"note": "mine"}
    assert (second.text, second.tags, second.pinned) == ("", ("a", "7"), False)  # odd values: kept, not used
    assert second.extras == {"text": 42, "tags": ["a", 7], "pinned": "yes"}
    assert [list(records.to_record(m).items()) for m in (first, second)] == [list(r.items()) for r in core]
    store.add_core("one more", "global")
    assert json.loads(store.core_path.read_text())[:2] == core  # a rewrite keeps them as they were
    result = store.retrieve("tabs", ["global"])
    assert [m.id for m in result.soft] == ["soft_001"] and result.reasons[-1].why[-1] == "confidence 1.00"
    store.flush()
    clock.now = T0 + timedelta(days=400)  # no ttl_days: it never expires
    assert [m.id for m in store.retrieve("tabs", ["global"]).soft] == ["soft_001"]
    assert store.soft_path.read_text() == (  # the keys a change writes go after the others
        '{"id":"soft_001","text":"we indent with tabs","scope":"global","confidence":1,"status":"active",'
        '"embedding":[0.5,0.25],"hits":1,"last_seen_at":"2026-03-10T12:00:00.000Z",'
        '"updated_at":"2026-03-10T12:00:00.000Z"}\n')
    store.forget("soft_001")
    assert store.soft_path.read_text() == (
        '{"id":"soft_001","text":"[forgotten]","scope":"global","confidence":0.0,"status":"forgotten",'
        '"embedding":[0.5,0.25],"hits":0,"last_seen_at":"2027-04-14T12:00:00.000Z",'
        '"updated_at":"2027-04-14T12:00:00.000Z","tags":[]}\n')


def test_forgetting_a_soft_memory_really_removes_its_text_tags_confidence_and_hits(store, clock):
    store.add_soft("the deploy password is hunter2", "global", ["secret-tag"])
    store.add_soft("keep me", "global")
    store.retrieve("password hunter2", ["global"])
    store.flush()
    assert soft_lines(store)[0]["hits"] == 1
    clock.now = T0 + timedelta(hours=1)
    assert store.forget("soft_001") is True
    raw = store.soft_path.read_text()
    assert "hunter2" not in raw and "secret-tag" not in raw and "Keep me" in raw
    assert soft_lines(store)[0] == {"id": "soft_001", "text": "[forgotten]", "scope": "global", "tags": [],
                                    "confidence": 0.0, "hits": 0, "created_at": "2026-03-10T12:00:00.000Z",
                                    "updated_at": "2026-03-10T13:00:00.000Z",
                                    "last_seen_at": "2026-03-10T12:00:00.000Z", "ttl_days": 60,
                                    "source": "manual", "status": "forgotten"}
    assert store.forget("soft_001") is False and store.forget("soft_404") is False
    assert [m.id for m in store.soft()] == ["soft_002"]
    assert [m.id for m in store.soft(include_inactive=True)] == ["soft_001", "soft_002"]
    assert store.retrieve("password hunter2", ["global"]).soft == []


def test_forgetting_a_core_memory_removes_it(store):
    store.add_core("one", "global")
    store.add_core("two", "global")
    assert store.forget("core_001") is True
    assert [m.id for m in store.core()] == ["core_002"]


def test_promote_and_relax(store, tmp_path):
    ws = records.workspace_scope(str(tmp_path))
    store.add_soft("we use ruff", ws, ["lint"])
    core = store.promote("soft_001")
    assert (core.id, core.text, core.scope, core.tags, core.source) == \
        ("core_001", "We use ruff", ws, ("lint",), "promoted_soft_memory")
    assert store.soft() == [] and store.soft(include_inactive=True)[0].status == "forgotten"
    assert store.promote("core_001").scope == "global"  # a workspace core memory becomes global
    with pytest.raises(InvalidParams, match="Only workspace core memories"):
        store.promote("core_001")
    assert store.relax("core_001", ws).scope == ws
    with pytest.raises(InvalidParams, match="Only global core memories"):
        store.relax("core_001", ws)
    for bad in ("soft_001", "core_404", "nope"):  # soft_001 is forgotten now
        with pytest.raises(MemoryNotFound):
            store.promote(bad)
    with pytest.raises(MemoryNotFound):
        store.relax("soft_002", ws)
    events = [json.loads(line)["type"] for line in store.events_path.read_text().splitlines()]
    assert events == ["add", "add", "forget", "promote", "promote", "relax"]


def test_soft_scores_follow_the_formula_and_need_a_shared_term(store):
    store.add_soft("pytest fixtures are preferred", "global", ["testing"])  # 0.65 + 2 terms
    store.add_soft("alpha beta gamma delta epsilon", "global")  # 0.65 + 4 terms -> capped 0.45
    store.add_soft("unrelated words only", "global")
    store.add_soft("pytest", "global", [], confidence=0.9)  # 0.9 + 1 term
    query = "Which pytest fixtures for testing? alpha beta gamma delta epsilon"
    result = store.retrieve(query, ["global"])
    scores = {r.id: r.score for r in result.reasons}
    assert scores == {"soft_001": round(0.65 + 0.30 + 0.25, 3), "soft_002": round(0.65 + 0.45, 3),
                      "soft_004": round(0.9 + 0.15, 3)}
    assert [m.id for m in result.soft] == ["soft_001", "soft_002", "soft_004"]  # best first
    why = {r.id: r.why for r in result.reasons}
    assert why["soft_001"] == ("scope match", "text overlap: pytest, fixtures", "tag overlap: testing",
                               "confidence 0.65")


def test_scopes_limits_order_and_expiry(store, clock, tmp_path):
    ws = records.workspace_scope(str(tmp_path))
    other = records.workspace_scope(str(tmp_path / "elsewhere"))
    for i in range(8):
        store.add_core(f"workspace rule {i}", ws)
    store.add_core("global rule", "global")
    store.add_core("other workspace rule", other)
    for i in range(9):
        store.add_soft(f"deploy note {i}", ws, confidence=0.5 + i / 100)
    store.add_soft("deploy in the other workspace", other, confidence=1.0)
    clock.now = T0 + timedelta(days=59)
    result = store.retrieve("deploy", ["global", ws])
    assert [m.text for m in result.core][:2] == ["Global rule", "Workspace rule 0"]  # global first
    assert len(result.core) == 6 and all(m.scope in ("global", ws) for m in result.core)
    assert [m.text for m in result.soft] == [f"Deploy note {i}" for i in (8, 7, 6, 5, 4, 3)]  # 6, by confidence
    store.forget("soft_009")  # note 8
    clock.now = T0 + timedelta(days=61)  # notes 0 to 2 were last seen 61 days ago (ttl_days 60): expired
    assert [m.text for m in store.retrieve("deploy", ["global", ws]).soft] == \
        [f"Deploy note {i}" for i in (7, 6, 5, 4, 3)]  # the others were seen 2 days ago
    clock.now = T0 + timedelta(days=200)
    assert store.retrieve("deploy", ["global", ws]).soft == []  # every one expired


def test_hits_count_at_once_and_reach_the_file_on_flush(store, clock, tmp_path):
    store.add_soft("use the staging cluster", "global")
    for n in range(3):
        clock.now = T0 + timedelta(minutes=n)
        store.retrieve("staging", ["global"])
    [live] = store.soft()
    assert (live.hits, live.last_seen_at) == (3, "2026-03-10T12:02:00.000Z")
    assert soft_lines(store)[0]["hits"] == 0  # not written yet: a turn never waits for a rewrite
    other = MemoryStore(store.directory)  # another process adds meanwhile
    other.add_soft("second", "global")
    store.flush()
    assert [(m["id"], m["hits"]) for m in soft_lines(store)] == [("soft_001", 3), ("soft_002", 0)]
    store.flush()  # nothing pending: nothing written
    assert [m.hits for m in MemoryStore(store.directory).soft()] == [3, 0]


def test_pending_hits_survive_another_process_rewriting_the_file(store):
    store.add_soft("alpha memory", "global")
    store.add_soft("beta memory", "global")
    store.retrieve("alpha", ["global"])
    MemoryStore(store.directory).forget("soft_002")  # a rewrite by someone else
    assert [(m.id, m.hits) for m in store.soft(include_inactive=True)] == [("soft_001", 1), ("soft_002", 0)]
    store.flush()
    lines = soft_lines(store)
    assert [(m["id"], m["hits"], m["status"]) for m in lines] == [("soft_001", 1, "active"),
                                                                   ("soft_002", 0, "forgotten")]


def test_appends_of_other_writers_are_read_incrementally_and_torn_lines_survive(store):
    store.add_soft("first", "global")
    assert [m.id for m in store.soft()] == ["soft_001"]
    with open(store.soft_path, "ab") as f:  # another writer: a whole line, then a half-written one
        f.write(json.dumps(records.to_record(records.new_soft("soft_002", "second", "global", [], T0))).encode()
                + b"\n")
        f.write(b'{"id": "soft_00')
    assert [m.id for m in store.soft()] == ["soft_001", "soft_002"]  # the torn line is not read yet
    added = store.add_soft("third", "global")
    assert added.id == "soft_003"
    raw = store.soft_path.read_bytes().split(b"\n")
    assert raw[2] == b'{"id": "soft_00' and json.loads(raw[3])["id"] == "soft_003"  # ours on a line of its own
    store.forget("soft_001")  # a rewrite keeps the line it cannot read, as it was
    assert store.soft_path.read_bytes().split(b"\n")[2] == b'{"id": "soft_00'
    assert [m.id for m in MemoryStore(store.directory).soft()] == ["soft_002", "soft_003"]


def test_a_file_replaced_in_place_is_read_again(store):
    store.add_soft("first", "global")
    store.soft()
    store.soft_path.write_text(json.dumps(records.to_record(records.new_soft("soft_009", "replaced", "global", [], T0)))
                               + "\n")
    assert [m.text for m in store.soft()] == ["replaced"]


def test_threads_on_several_stores_lose_nothing(tmp_path):
    directory = tmp_path / "memory"
    stores = [MemoryStore(directory) for _ in range(4)]  # four "processes" sharing the files
    errors = []

    def work(n):
        try:
            for i in range(25):
                stores[n % 4].add_soft(f"soft {n}-{i}", "global")
                if i % 5 == 0:
                    stores[n % 4].add_core(f"core {n}-{i}", "global")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    soft = MemoryStore(directory).soft()
    assert len(soft) == 200 and sorted(m.id for m in soft) == [f"soft_{i:03d}" for i in range(1, 201)]
    assert len({m.text for m in soft}) == 200
    core = MemoryStore(directory).core()
    assert sorted(m.id for m in core) == [f"core_{i:03d}" for i in range(1, 41)]


WRITER = """
import sys
from pathlib import Path
from kward.memory.store import MemoryStore
store = MemoryStore(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    store.add_soft(f"{sys.argv[2]} {i}", "global")
    if i % 4 == 0:
        store.add_core(f"{sys.argv[2]} core {i}", "global")
"""


@pytest.mark.slow
def test_processes_writing_at_once_lose_nothing(tmp_path):
    directory = tmp_path / "memory"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(directory), f"p{n}", "40"], env=env)
             for n in range(4)]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    soft = MemoryStore(directory).soft()
    assert sorted(m.id for m in soft) == [f"soft_{i:03d}" for i in range(1, 161)]
    assert sorted(m.text for m in soft) == sorted(f"P{n} {i}" for n in range(4) for i in range(40))
    assert len(MemoryStore(directory).core()) == 40
    lines = store_lines = directory.joinpath("events.jsonl").read_text().splitlines()
    assert len(lines) == 200 and all(json.loads(line)["type"] == "add" for line in store_lines)


def test_unique_adds_skip_an_active_memory_with_the_same_text(store):
    assert store.add_soft_if_new("We use tabs", "global").id == "soft_001"
    assert store.add_soft_if_new("we  use tabs", "global") is None  # (normalized) same text
    assert store.add_soft_if_new("We use tabs", "workspace:/x").id == "soft_002"  # another scope
    store.forget("soft_001")
    assert store.add_soft_if_new("We use tabs", "global").id == "soft_003"


def test_inference_finds_explicit_and_habit_lines_and_refuses_emotional_ones():
    text = ("Please fix the build.\nRemember this: the API lives in src/api\n"
            "We always run black before committing; I prefer small commits\n"
            "- soft_001 [global] We always echo listings\n"
            "I love you and need me to stay; we usually deploy on Fridays\n"
            "The weather is nice")
    assert infer.candidates(text) == ["The API lives in src/api", "We always run black before committing",
                                      "I prefer small commits", "We usually deploy on Fridays"]
    assert infer.candidates("remember this: I love my romantic partner") == []
    many = ". ".join(f"we always use tool{i}" for i in range(9))
    assert len(infer.candidates(many)) == infer.MAX_CANDIDATES


def test_the_prompt_block_and_the_explanation():
    result = retrieval.Retrieval(["global"], [records.Memory("core_001", "core", "Answer in English.")],
                                 [records.Memory("soft_003", "soft", "The project uses pytest.")],
                                 [retrieval.Reason("core_001", "core", 1.0, ("scope match",))])
    assert retrieval.memory_block(result) == (
        "<kward_memory>\nCore Memories:\n- [core_001] Answer in English.\n\n"
        "Relevant Soft Memories:\n- [soft_003] The project uses pytest.\n\n"
        "Rules:\n- Core memories override soft memories.\n"
        "- Soft memories are contextual hints, not guaranteed facts.\n</kward_memory>")
    assert retrieval.memory_block(retrieval.Retrieval(["global"], [], [])) is None
    assert retrieval.explain(result.state().reasons) == \
        "Memory retrieval reasons:\n- core_001 (core, score 1.0): scope match"
    record = retrieval.state_record(result.state())
    assert record["coreIds"] == ["core_001"] and "text" not in json.dumps(record)


def test_hit_counts_that_would_make_soft_jsonl_unreadable_are_dropped_once(store, caplog):
    from kward.limits import MAX_MEMORY_FILE_BYTES
    store.directory.mkdir(parents=True)
    head = json.dumps({"id": "soft_001", "text": "Use tabs", "scope": "global", "status": "active"}).encode() + b"\n"
    store.soft_path.write_bytes(head + b"x" * (MAX_MEMORY_FILE_BYTES - 4 - len(head) - 1) + b"\n")
    before = store.soft_path.read_bytes()
    assert [m.id for m in store.retrieve("tabs", ["global"]).soft] == ["soft_001"]
    store.flush()  # the counts (and their keys) would pass the cap: dropped, logged
    assert store.soft_path.read_bytes() == before
    assert "hit counts not written" in caplog.text
    assert not store._pending  # not tried again on every later turn
    store.flush_if_due(0)
    assert caplog.text.count("hit counts not written") == 1
