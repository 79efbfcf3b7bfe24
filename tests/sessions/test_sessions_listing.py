"""sessions/list: newest first, only the needed files read, tree decoration, no deletion."""

from __future__ import annotations

import json
import os

import pytest

from kward.rpc.wire import sessions as wire
from kward.sessions import listing
from kward.sessions.paths import workspace_session_dir
from lib.processes import run_child
from lib.session_manager import new_manager
from lib.session_records import assistant, header, message_record, tool_result, typed, user, write_lines


def list_sessions(*args, **kwargs):
    """`listing.list_sessions` as `sessions/list` shows it."""
    return [wire.listed_session(s) for s in listing.list_sessions(*args, **kwargs)]


def make(directory, n, *, mtime, parent=None, lines=(), **hdr):
    sid = f"00000000-0000-0000-0000-{n:012d}"
    extra = {"parentId": parent, "parentPath": "/p"} if parent else {}
    path = write_lines(directory / f"2026-01-01T00-00-00.000Z_{sid}.jsonl",
                       [header(sid, cwd="/ws", **extra, **hdr), *lines])
    os.utime(path, ns=(mtime * 10**9, mtime * 10**9))
    return sid, str(path)


def test_item_fields(tmp_path):
    d = tmp_path / "d"
    sid, path = make(d, 1, mtime=1_700_000_000, lines=[
        message_record({"role": "system", "content": "sys"}),
        message_record(user("  hello\n\n  world  ")),
        message_record(assistant("hi", calls=[("c", "read_file", {"path": "x"})])),
        message_record(tool_result("c", "read_file", "x")),
        {"type": "tool_execution_end", "toolCallId": "c"},
        {"type": "session_info", "name": "Named"},
    ])
    os.utime(path, ns=(1_800_000_000_123_456_789,) * 2)
    [item] = list_sessions(str(d), "/root")
    assert item == {
        "id": sid, "path": path, "cwd": "/ws", "workspaceRoot": "/root",
        "createdAt": "2026-01-02T03:04:05.678Z", "modifiedAt": "2027-01-15T08:00:00.123Z",
        "name": "Named", "firstMessage": "hello world", "messageCount": 3,
        "depth": 0, "isLast": True, "ancestorContinues": [],
    }


def test_modified_at_is_never_before_created_at(tmp_path):
    """The header's time and the file's mtime come from different clocks: an mtime that
    is earlier (a coarse file-system clock, a copy keeping old times) shows createdAt."""
    d = tmp_path / "d"
    make(d, 1, mtime=1_700_000_000, lines=[message_record(user("hi"))])  # before the header's 2026 time
    [item] = list_sessions(str(d), "/root")
    assert item["createdAt"] == item["modifiedAt"] == "2026-01-02T03:04:05.678Z"


def test_first_message_and_count_follow_compaction_and_display_content(tmp_path):
    d = tmp_path / "d"
    make(d, 1, mtime=10, lines=[
        message_record(user("x" * 500)), message_record(assistant("a")), message_record(user("keep")),
        {"type": "compaction", "message": {"role": "compactionSummary", "summary": "The\tsummary",
                                           "first_kept_entry_id": "message:2"}},
    ])
    make(d, 2, mtime=5, lines=[message_record(user([{"type": "text", "text": "raw"}], display_content="shown " * 40))])
    first, second = list_sessions(str(d), "/r")
    assert (first["firstMessage"], first["messageCount"]) == ("The summary", 2)
    assert second["firstMessage"] == ("shown " * 40).strip()[:120] and len(second["firstMessage"]) == 120
    assert "name" not in second


def test_newest_first_limit_and_default(tmp_path):
    d = tmp_path / "d"
    for n in range(25):
        make(d, n, mtime=1000 + n)
    items = list_sessions(str(d), "/r")
    assert len(items) == 20  # default limit
    assert [i["id"][-2:] for i in items[:3]] == ["24", "23", "22"]
    assert len(list_sessions(str(d), "/r", limit=3)) == 3
    assert len(list_sessions(str(d), "/r", limit=0)) == 20  # non-positive -> default
    assert list_sessions(str(tmp_path / "missing"), "/r") == []


def test_reads_only_what_the_limit_needs_and_skips_bad_files(tmp_path, monkeypatch):
    d = tmp_path / "d"
    for n in range(50):
        make(d, n, mtime=1000 + n)
    (d / "zz-not-a-session.jsonl").write_text("hello\n")
    os.utime(d / "zz-not-a-session.jsonl", (5000, 5000))
    (d / "notes.txt").write_text("ignored")
    (d / "dir.jsonl").mkdir()
    opened = []
    real = listing.summarize
    monkeypatch.setattr(listing, "summarize",
                        lambda path, mtime, pool: (opened.append(path), real(path, mtime, pool))[1])
    items = list_sessions(str(d), "/r", limit=5)
    assert len(items) == 5 and len(opened) == 6  # the bad newest file, then five sessions
    assert all(i["id"].endswith(("49", "48", "47", "46", "45")) for i in items)
    assert (d / "zz-not-a-session.jsonl").exists()


def test_listing_never_deletes_empty_sessions(tmp_path):
    d = tmp_path / "d"
    _, path = make(d, 1, mtime=100)
    [item] = list_sessions(str(d), "/r")
    assert item["messageCount"] == 0 and os.path.exists(path)


def test_tree_decoration(tmp_path):
    d = tmp_path / "d"
    ids = {}
    # root A (newest root) with children B (newer) and C; B has child D; C has child E; F root; G's parent absent
    ids["F"] = make(d, 6, mtime=50)[0]
    ids["A"] = make(d, 1, mtime=100)[0]
    ids["B"] = make(d, 2, mtime=90, parent=ids["A"])[0]
    ids["C"] = make(d, 3, mtime=80, parent=ids["A"])[0]
    ids["D"] = make(d, 4, mtime=70, parent=ids["B"])[0]
    ids["E"] = make(d, 5, mtime=60, parent=ids["C"])[0]
    ids["G"] = make(d, 7, mtime=55, parent="not-listed")[0]
    names = {v: k for k, v in ids.items()}
    rows = [(names[i["id"]], i["depth"], i["isLast"], i["ancestorContinues"]) for i in list_sessions(str(d), "/r")]
    assert rows == [
        ("A", 0, False, []),
        ("B", 1, False, []),
        ("D", 2, True, [True]),
        ("C", 1, True, []),
        ("E", 2, True, [False]),
        ("G", 0, False, []),
        ("F", 0, True, []),
    ]


def test_parent_cycles_still_list_every_row(tmp_path):
    d = tmp_path / "d"
    a = "00000000-0000-0000-0000-000000000001"
    b = "00000000-0000-0000-0000-000000000002"
    make(d, 1, mtime=10, parent=b)
    make(d, 2, mtime=20, parent=a)
    make(d, 3, mtime=5, parent="00000000-0000-0000-0000-000000000003")  # its own parent
    assert len(list_sessions(str(d), "/r")) == 3


def test_manager_list_hides_own_empty_sessions_and_deletes_nothing(tmp_path):
    manager, ws = new_manager(tmp_path)
    empty = manager.create()
    used = manager.create()  # the first, empty one is cleaned up here
    used.append_message(typed(user("hello")))
    blank = manager.create(name="")  # empty and open: hidden from the list, not deleted by it
    items = [wire.listed_session(s) for s in manager.list_workspace()]
    assert [i["path"] for i in items] == [used.path]
    assert os.path.exists(blank.path) and not os.path.exists(empty.path)
    assert items[0]["workspaceRoot"] == str(ws.resolve())
    d = workspace_session_dir(manager.sessions_dir, str(ws.resolve()))
    assert d.is_dir()
    manager.shutdown_all()


@pytest.mark.parametrize("limit", [1, 2])
def test_manager_list_limit(tmp_path, limit):
    manager, _ = new_manager(tmp_path)
    for n in range(3):
        manager.create(name=f"s{n}")
    assert len(manager.list_workspace(limit=limit)) == limit
    manager.shutdown_all()


def test_a_process_that_only_lists_needs_no_store_and_no_open_session_state(tmp_path):
    """`list_workspace` is what a UI's list-refresh process calls: it lists what the
    manager lists (minus that process's own unused sessions) and imports neither the
    store, the descriptor pool, the presence locks nor the open-session state."""
    manager, ws = new_manager(tmp_path)
    root = str(ws.resolve())
    used = manager.create(name="used")
    manager.create()  # empty and open in this process: the manager hides it, another process does not
    out = run_child("""
        import json, sys
        from kward.sessions.listing import list_workspace
        items = list_workspace(sys.argv[1], sys.argv[2], 20)
        print(json.dumps({"names": [i.name for i in items],
                          "modules": sorted(m for m in sys.modules if m.startswith("kward."))}))
    """, str(manager.sessions_dir), root)
    seen = json.loads(out)
    assert seen["names"] == [None, "used"]
    everything = listing.list_workspace(manager.sessions_dir, root)
    assert [s.name for s in everything] == [None, "used"]
    assert [s.path for s in listing.list_workspace(manager.sessions_dir, root, skip=[everything[0].path])] == \
        [s.path for s in manager.list_workspace()] == [used.path]
    needless = {"kward.sessions." + m for m in ("session", "store", "descriptors", "presence", "manager", "handle",
                                                  "opening", "replay", "export", "export_target", "transcript")}
    assert needless.isdisjoint(seen["modules"]), seen["modules"]
    manager.shutdown_all()
