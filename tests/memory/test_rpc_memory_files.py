"""The memory files as input, over the real `kward rpc`: a file that is not a regular file
of this user (a FIFO, a symlink, one to /dev/zero, a directory) or that is too large, a core.json of the
wrong shape, and the caps on the number of memories. Each is a clear error that changes
nothing, and never holds up a turn, EOF or SIGTERM."""

import json
import os
import signal

import pytest

from kward.limits import MAX_CORE_MEMORIES, MAX_MEMORY_FILE_BYTES, MAX_SOFT_MEMORIES
from lib.config_files import write_config
from lib.scripted_kward import kward  # noqa: F401 - fixture
from lib.scripts import text
from lib.turn_events import check_turn_events

FILES = ("core.json", "soft.jsonl", "events.jsonl", ".lock")


def memory_dir(home):
    return home / ".kward" / "memory"


def plant(path, kind, home):
    """Put a hostile `kind` of file at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        target = home / "elsewhere.json"
        target.write_text("[]\n")
        path.symlink_to(target)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:  # a 300 MB file, sparse: cheap to make
        with open(path, "wb") as f:
            f.truncate(300 << 20)


def check_store_error(err, path):
    assert (err.code, err.reason) == (-32002, "invalid_memory_store"), err.error
    assert err.error["data"]["path"] == str(path)
    assert str(path) in err.message


#: The methods that read or write each file.
USERS = {"core.json": ("memory/list", "memory/addCore"), "soft.jsonl": ("memory/list", "memory/add"),
         "events.jsonl": ("memory/add", "memory/addCore"), ".lock": ("memory/add", "memory/addCore")}


@pytest.mark.parametrize("kind", ["fifo", "symlink", "dev_zero", "directory", "huge"])
@pytest.mark.parametrize("name", FILES)
def test_a_hostile_memory_file_is_a_clear_error_that_changes_nothing(kward, isolated_home, name, kind):
    path = memory_dir(isolated_home) / name
    plant(path, kind, isolated_home)
    k = kward()
    if kind == "huge" and name in ("events.jsonl", ".lock"):  # never read: only appended to, or locked
        assert k.request("memory/add", {"text": "fine"})["memory"]["id"] == "soft_001"
        assert k.request("memory/addCore", {"text": "fine"})["memory"]["id"] == "core_001"
        return
    for method in USERS[name]:
        err = k.error(method, {"text": "not stored"})
        check_store_error(err, path)
        if kind == "huge":
            assert f"is larger than {MAX_MEMORY_FILE_BYTES} bytes" in err.message  # and was not read
    for other in FILES:
        if other != name and (memory_dir(isolated_home) / other).is_file():
            assert b"not stored" not in (memory_dir(isolated_home) / other).read_bytes()
    if kind == "symlink":
        assert (isolated_home / "elsewhere.json").read_text() == "[]\n"  # not written through the link


def hostile_turn(kward, isolated_home):
    """A kward whose memory is on with a FIFO for core.json, after a turn (its retrieval fails
    quietly: memory never stops a turn)."""
    write_config(isolated_home / ".kward", {"memory": {"enabled": True}})
    plant(memory_dir(isolated_home) / "core.json", "fifo", isolated_home)
    k = kward([[text("answered")]], loop=True)
    session = k.session()
    _, evs = k.run(session["id"], "a turn with a FIFO for core.json", timeout=5)
    check_turn_events(evs, "completed")
    check_store_error(k.error("memory/list", timeout=5), memory_dir(isolated_home) / "core.json")
    return k


def test_a_fifo_core_file_holds_up_neither_a_turn_nor_eof(kward, isolated_home):
    k = hostile_turn(kward, isolated_home)
    k.close_stdin()
    assert k.wait_exit(2) == 0


def test_a_fifo_core_file_holds_up_neither_a_turn_nor_sigterm(kward, isolated_home):
    k = hostile_turn(kward, isolated_home)
    k.proc.send_signal(signal.SIGTERM)
    assert k.wait_exit(2) == 0


@pytest.mark.parametrize("content", [
    '{"x": 1}',
    "[1, 2]",
    '[{"id": "core_001", "text": "kept"}, {"text": "no id"}]',
    '[{"id": 5, "text": "a number for an id"}]',
    '{"memories": {"id": "core_001"}}',
    '[{"id": "core_001", "text": "kept"}, "a string"]',
])
def test_a_core_file_of_the_wrong_shape_is_reported_and_never_overwritten(kward, isolated_home, content):
    path = memory_dir(isolated_home) / "core.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    k = kward()
    for method, params in (("memory/list", {}), ("memory/addCore", {"text": "x"}), ("memory/inspect", {}),
                           ("memory/forget", {"id": "core_001"}), ("memory/relax", {"id": "core_001"})):
        err = k.error(method, params)
        check_store_error(err, path)
    assert path.read_bytes() == content.encode()  # byte for byte


def soft_line(number, status="active"):
    return json.dumps({"id": f"soft_{number:03d}", "text": f"memory {number}", "scope": "global", "tags": [],
                       "confidence": 0.5, "hits": 0, "status": status}) + "\n"


def test_the_number_of_soft_memories_is_capped(kward, isolated_home):
    path = memory_dir(isolated_home) / "soft.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(soft_line(1, "forgotten") + "".join(soft_line(n) for n in range(2, MAX_SOFT_MEMORIES + 1)))
    k = kward()
    assert k.request("memory/add", {"text": "the last one there is room for"})["memory"]["id"] == \
        f"soft_{MAX_SOFT_MEMORIES + 1:03d}"  # a forgotten one does not count
    before = path.read_bytes()
    err = k.error("memory/add", {"text": "one too many"})
    assert (err.code, err.reason) == (-32602, "memory_full"), err.error
    assert err.error["data"] == {"reason": "memory_full", "layer": "soft", "limit": MAX_SOFT_MEMORIES,
                                 "errorClass": err.error["data"]["errorClass"]}
    assert path.read_bytes() == before
    k.request("memory/forget", {"id": "soft_002"})
    assert k.request("memory/add", {"text": "room again"})["memory"]["id"] == f"soft_{MAX_SOFT_MEMORIES + 2:03d}"


def test_the_number_of_core_memories_is_capped(kward, isolated_home):
    path = memory_dir(isolated_home) / "core.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"id": f"core_{n:03d}", "text": f"rule {n}", "scope": "global"}
                                for n in range(1, MAX_CORE_MEMORIES + 1)]))
    before = path.read_bytes()
    k = kward()
    soft = k.request("memory/add", {"text": "promote me"})["memory"]
    for method, params in (("memory/addCore", {"text": "one too many"}), ("memory/promote", {"id": soft["id"]})):
        err = k.error(method, params)
        assert (err.code, err.reason, err.error["data"]["layer"]) == (-32602, "memory_full", "core"), err.error
    assert path.read_bytes() == before
    assert k.request("memory/list")["soft"][0]["status"] == "active"  # the failed promotion forgot nothing
    k.request("memory/forget", {"id": "core_001"})
    assert k.request("memory/addCore", {"text": "room again"})["memory"]["id"] == f"core_{MAX_CORE_MEMORIES + 1:03d}"


def test_a_soft_file_at_its_size_cap_takes_no_more(kward, isolated_home):
    path = memory_dir(isolated_home) / "soft.jsonl"
    path.parent.mkdir(parents=True)
    line = soft_line(1)
    with open(path, "w") as f:  # one memory, then blank lines up to the cap
        f.write(line)
        f.write("\n" * (MAX_MEMORY_FILE_BYTES - len(line) - 100))
    k = kward()
    err = k.error("memory/add", {"text": "x" * 200})
    assert (err.code, err.reason, err.error["data"]["layer"]) == (-32602, "memory_full", "soft"), err.error
    assert os.path.getsize(path) == MAX_MEMORY_FILE_BYTES - 100


def soft_record(memory_id, **fields):
    return json.dumps({"id": memory_id, "text": f"memory {memory_id}", "scope": "global", "tags": [],
                       "confidence": 0.5, "hits": 0, "status": "active", **fields})


#: soft.jsonl lines whose content kward cannot use as it stands: kept, never an internal error.
HOSTILE_SOFT_LINES = {
    "nested_too_deep": "[" * 100_000 + "]" * 100_000,
    "object_nested_too_deep": '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "superscript_digit_id": soft_record("soft_\u00b2"),
    "id_of_5000_digits": soft_record("soft_" + "9" * 5000),
    "last_seen_beyond_year_9999": soft_record("soft_007", last_seen_at="9999-12-31T23:59:59.000-10:00", ttl_days=1),
    "last_seen_before_year_1": soft_record("soft_007", last_seen_at="0001-01-01T00:00:00.000+10:00", ttl_days=1),
}


@pytest.mark.parametrize("line", HOSTILE_SOFT_LINES.values(), ids=HOSTILE_SOFT_LINES.keys())
def test_soft_lines_of_unusable_content_are_kept_and_every_method_answers(kward, isolated_home, line):
    path = memory_dir(isolated_home) / "soft.jsonl"
    path.parent.mkdir(parents=True)
    first = soft_record("soft_002", text="the usable one") + "\n"
    path.write_text(first + line + "\n")
    k = kward()
    soft_ids = [m["id"] for m in k.request("memory/list")["soft"]]
    assert "soft_002" in soft_ids
    assert k.request("memory/add", {"text": "another"})["memory"]["id"] == \
        ("soft_008" if "soft_007" in soft_ids else "soft_003")
    assert k.request("memory/addCore", {"text": "a rule"})["memory"]["id"] == "core_001"
    assert k.request("memory/forget", {"id": "soft_002"}) == {"forgotten": True}
    assert line in path.read_text().splitlines()  # kept as it was


@pytest.mark.parametrize("memory_id", ["core_\u00b2", "core_" + "9" * 5000, "core_" + "1" * 19],
                         ids=["superscript_digit", "5000_digits", "19_digits"])
def test_core_ids_that_are_not_numbers_kward_counts_are_kept(kward, isolated_home, memory_id):
    path = memory_dir(isolated_home) / "core.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"id": "core_004", "text": "kept"}, {"id": memory_id, "text": "odd id"},
                                {"id": "core_003", "text": "kept too", "updated_at": "9999-12-31T23:59:59-10:00"}]))
    k = kward()
    assert [m["id"] for m in k.request("memory/list")["core"]] == ["core_004", memory_id, "core_003"]
    assert k.request("memory/addCore", {"text": "a rule"})["memory"]["id"] == "core_005"
    assert k.request("memory/add", {"text": "a hint"})["memory"]["id"] == "soft_001"


def fill_soft_file(path, size, *memories):
    """soft.jsonl holding `memories` (records), then one line that is not a memory (kept as
    it is by every rewrite) making it `size` bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "".join(json.dumps(m, separators=(",", ":")) + "\n" for m in memories).encode()
    path.write_bytes(head + b"x" * (size - len(head) - 1) + b"\n")


def test_at_the_size_cap_forgetting_makes_room_and_adds_stop_short_of_it(kward, isolated_home):
    path = memory_dir(isolated_home) / "soft.jsonl"
    # past where adds stop, 300 KiB short of the largest file kward reads
    fill_soft_file(path, MAX_MEMORY_FILE_BYTES - (300 << 10),
                   {"id": "soft_001", "text": "a", "scope": "global", "status": "active"})
    k = kward()
    err = k.error("memory/add", {"text": "one more"})
    assert (err.code, err.reason, err.error["data"]["layer"]) == (-32602, "memory_full", "soft"), err.error
    assert err.error["data"]["limit"] < MAX_MEMORY_FILE_BYTES - (300 << 10)
    assert k.request("memory/forget", {"id": "soft_001"}) == {"forgotten": True}
    assert json.loads(path.read_text().splitlines()[0])["status"] == "forgotten"
    err = k.error("memory/add", {"text": "still full"})
    assert (err.code, err.reason) == (-32602, "memory_full"), err.error


def test_a_rewrite_the_file_could_not_be_read_after_is_refused_and_changes_nothing(kward, isolated_home):
    path = memory_dir(isolated_home) / "soft.jsonl"
    fill_soft_file(path, MAX_MEMORY_FILE_BYTES - 4,  # (written so by another program)
                   {"id": "soft_001", "text": "a", "scope": "global", "status": "active"})
    before = path.read_bytes()
    k = kward()
    err = k.error("memory/forget", {"id": "soft_001"})
    assert (err.code, err.reason) == (-32602, "memory_full"), err.error
    assert path.read_bytes() == before
    assert [m["status"] for m in k.request("memory/list")["soft"]] == ["active"]  # not forgotten in the view either


@pytest.mark.parametrize("name", ["events.jsonl", ".lock", "soft.jsonl"])
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_memory_enable_with_an_unusable_file_changes_no_config(kward, isolated_home, name, kind):
    config = isolated_home / ".kward" / "config.json"
    write_config(config.parent, {"memory": {"enabled": False}, "model": "kept"})
    before = config.read_bytes()
    plant(memory_dir(isolated_home) / name, kind, isolated_home)
    k = kward()
    check_store_error(k.error("memory/enable"), memory_dir(isolated_home) / name)
    assert config.read_bytes() == before  # byte for byte
    assert k.request("memory/status")["enabled"] is False


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_the_other_switches_work_with_an_unusable_events_file(kward, isolated_home, kind):
    write_config(isolated_home / ".kward", {"memory": {"enabled": True}})
    plant(memory_dir(isolated_home) / "events.jsonl", kind, isolated_home)
    k = kward()
    assert k.request("memory/autoSummary/enable")["autoSummary"] is True
    assert k.request("memory/autoSummary/disable")["autoSummary"] is False
    assert k.request("memory/disable")["enabled"] is False  # (their audit lines are not written: logged)
    assert k.request("memory/status")["enabled"] is False
