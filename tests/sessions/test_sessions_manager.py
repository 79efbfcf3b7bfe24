"""SessionManager: every sessions/* operation, its error paths, cleanup, and two processes."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from kward.errors import InvalidParams, PathNotAllowed, SessionBusy, SessionFileGone, SessionNotFound
from kward.rpc.wire import sessions as wire_sessions
from kward.rpc.wire import transcript as wire
from kward.sessions.opening import load_session
from lib.processes import child, run_child
from lib.session_manager import new_manager, opened, payload
from lib.session_records import (
    assistant, header, message_record, recorded, strict_records, tool_result, typed, user, write_lines,
)


@pytest.fixture
def env(tmp_path):
    manager, ws = new_manager(tmp_path)
    yield manager, ws
    manager.shutdown_all()


def test_create_payload(env):
    manager, ws = env
    s = manager.create(name="  My chat ")
    p = payload(s)
    assert p["id"] == s.id and p["persistentId"] == s.persistent_id != s.id
    assert p["path"] == s.path and os.path.isabs(p["path"])
    assert p["workspaceRoot"] == p["cwd"] == str(ws.resolve())
    assert p["name"] == "My chat"
    assert p["createdAt"].endswith("Z") and p["modifiedAt"].endswith("Z")
    assert "parentId" not in p and "parentPath" not in p
    assert "--" + str(ws.resolve())[1:].replace("/", "-") + "--" == Path(s.path).parent.name
    assert manager.get(s.id) is s
    first = json.loads(Path(s.path).read_text().splitlines()[0])
    assert first == {"type": "session", "version": 1, "id": s.persistent_id, "timestamp": first["timestamp"],
                     "cwd": str(ws.resolve())}
    m = manager.create(model="gpt-5", reasoning_effort="high")
    assert (m.model, m.reasoning_effort) == ("gpt-5", "high")
    assert json.loads(Path(m.path).read_text().splitlines()[0])["reasoningEffort"] == "high"


def test_create_in_a_missing_workspace(env, tmp_path):
    manager, _ = env
    with pytest.raises(InvalidParams) as err:
        manager.create(str(tmp_path / "nope"))
    assert err.value.reason == "workspace_not_found"
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidParams) as err:
        manager.create(str(tmp_path / "file"))
    assert err.value.reason == "not_a_directory"


def test_unknown_session_id(env):
    manager, _ = env
    for call in (manager.get, manager.close, manager.delete, manager.transcript, manager.fork_messages,
                 manager.clone, lambda i: manager.rename(i, "x"), lambda i: manager.export(i),
                 lambda i: manager.fork(i, "message:0")):
        with pytest.raises(SessionNotFound) as err:
            call("nope-123")
        assert err.value.message == "Unknown session: nope-123"
        assert err.value.reason == "session_not_found" and err.value.code == -32602


def test_resume_relative_path_and_a_second_resume_in_one_process_shares_the_file(env):
    manager, ws = env
    s = manager.create(name="keep")
    s.append_message(typed(user("hello")))
    rel = os.path.relpath(s.path, ws.resolve())
    r = manager.resume(rel)
    assert r.id != s.id and r.shared is s.shared and r.path == s.path and r.persistent_id == s.persistent_id
    assert opened(r)["id"] == r.id and opened(r)["path"] == s.path and opened(r)["name"] == "keep"
    r.append_message(typed(user("through r")))  # one live state behind both ids
    assert [m["content"] for m in recorded(s.conversation)] == ["hello", "through r"]
    manager.close(s.id)
    assert manager.get(r.id) is r and r.name == "keep"
    with pytest.raises(SessionNotFound):
        manager.get(s.id)
    manager.close(r.id)
    again = manager.resume(rel)
    assert again.shared is not s.shared and [m["content"] for m in recorded(again.conversation)] == ["hello", "through r"]


def test_a_second_resume_shares_the_file_through_symlinked_paths(tmp_path):
    real = tmp_path / "real-home"
    real.mkdir()
    os.symlink(real, tmp_path / "link-home")
    (tmp_path / "ws").mkdir()
    from kward.sessions.manager import SessionManager
    manager = SessionManager(tmp_path / "link-home" / "sessions", default_workspace=str(tmp_path / "ws"))
    s = manager.create(name="n")
    for alias in (s.path, s.path.replace(str(tmp_path / "link-home"), str(real)),
                  str(tmp_path / "link-home" / os.path.relpath(s.path, real))):
        r = manager.resume(alias)
        assert r.shared is s.shared and r.id != s.id
    manager.shutdown_all()


def test_concurrent_resumes_of_one_file_share_one_load(env, monkeypatch):
    manager, _ = env
    s = manager.create(name="shared")
    path = s.path
    manager.close(s.id)
    import kward.sessions.manager as manager_module

    loads, entered, go = [], threading.Event(), threading.Event()
    real_load = manager_module.load_session

    def slow_load(*args, **kwargs):
        loads.append(args[0])
        entered.set()
        assert go.wait(10)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(manager_module, "load_session", slow_load)
    results: list = []
    first = threading.Thread(target=lambda: results.append(manager.resume(path)))
    first.start()
    assert entered.wait(10)
    loading = manager._loading[path]
    waiting, real_wait = threading.Event(), loading.wait
    loading.wait = lambda *a: (waiting.set(), real_wait(*a))[1]
    second = threading.Thread(target=lambda: results.append(manager.resume(path)))
    second.start()
    assert waiting.wait(10)  # the second waits for the first load (a faulty manager loads again or fails)
    go.set()
    first.join(10)
    second.join(10)
    assert len(results) == 2 and results[0].id != results[1].id
    assert results[0].shared is results[1].shared and loads == [path]


def test_an_open_file_replaced_on_disk_is_not_shared_by_a_resume(env):
    manager, _ = env
    s = manager.create(name="old")
    s.append_message(typed(user("old content")))
    copy = Path(s.path + ".copy")
    copy.write_bytes(Path(s.path).read_bytes())
    os.replace(copy, s.path)  # another file at the path now
    r = manager.resume(s.path)
    assert r.shared is not s.shared and [m["content"] for m in recorded(r.conversation)] == ["old content"]
    r.append_message(typed(user("new")))
    with pytest.raises(SessionFileGone) as err:
        s.append_message(typed(user("lost")))
    assert err.value.reason == "session_file_gone" and s.path in err.value.message
    assert [r["message"]["content"] for r in strict_records(s.path) if r["type"] == "message"] == ["old content", "new"]


def test_resume_refuses_missing_non_regular_and_non_session_files(env, tmp_path):
    manager, ws = env
    with pytest.raises(InvalidParams) as err:
        manager.resume("missing.jsonl")
    assert err.value.reason == "invalid_params"
    with pytest.raises(PathNotAllowed):
        manager.resume(str(tmp_path))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PathNotAllowed):
        manager.resume(str(tmp_path / "fifo"))
    (ws / "notes.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(InvalidParams) as err:
        manager.resume("notes.jsonl")
    assert "Not a Kward session" in err.value.message
    s = manager.create(name="n")  # the failed resumes left nothing reserved
    manager.close(s.id)
    manager.close(manager.resume(s.path).id)


def test_resuming_a_file_that_is_no_session_leaves_it_untouched(env):
    manager, ws = env
    readme = ws / "README.md"
    readme.write_text("# hi\n")
    before = os.stat(readme)
    with pytest.raises(InvalidParams) as err:
        manager.resume("README.md")
    assert "Not a Kward session" in err.value.message
    assert sorted(os.listdir(ws)) == ["README.md"]  # no README.md.open sidecar
    after = os.stat(readme)
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


def test_a_session_file_replaced_between_check_and_open_is_refused(env, monkeypatch):
    from kward.sessions import opening

    manager, ws = env
    s = manager.create(name="swapped")
    path = s.path
    manager.close(s.id)
    real_open = opening.SessionFile.open

    def swap_then_open(p, *args):
        os.replace(ws / "README.md", p)  # another file takes the name after the header check
        return real_open(p, *args)

    (ws / "README.md").write_text("# not a session\n")
    monkeypatch.setattr(opening.SessionFile, "open", swap_then_open)
    with pytest.raises(InvalidParams):
        manager.resume(path)
    assert open(path).read() == "# not a session\n"


def test_an_unused_session_is_unlinked_before_its_presence_lock_is_released(env, monkeypatch):
    """Another process that opens the session while it is being deleted must wait for the
    exclusive presence lock and then see the file gone, never open it in between."""
    import fcntl

    from kward.sessions import presence, store

    manager, _ = env
    s = manager.create()  # empty and unnamed: close deletes it
    presence_file = os.path.join(os.path.dirname(s.path), presence.PRESENCE_NAME)
    seen = []
    real_remove = store.remove_session_files

    def remove_while_checking(path):
        probe = os.open(presence_file, os.O_RDWR)  # another open file description: another process
        try:
            got_in = presence._setlk(probe, fcntl.F_RDLCK, presence._key(os.path.basename(path)))
            seen.append("another opener got in" if got_in else "still locked")
        finally:
            os.close(probe)
        return real_remove(path)

    monkeypatch.setattr(store, "remove_session_files", remove_while_checking)
    manager.close(s.id)
    assert seen == ["still locked"] and not os.path.exists(s.path)


def test_resume_uses_the_header_cwd_only_for_a_file_kward_filed_for_it(env, tmp_path):
    """A crafted file's header never decides where tools write."""
    from kward.sessions.paths import workspace_session_dir

    manager, ws = env
    other = (tmp_path / "other").resolve()
    other.mkdir()

    def root(path, workspace_root=None):
        handle = manager.resume(str(path), workspace_root)
        try:
            assert payload(handle)["workspaceRoot"] == handle.workspace_root
            return handle.workspace_root, payload(handle)["cwd"]
        finally:
            manager.close(handle.id)

    crafted = write_lines(tmp_path / "x.jsonl", [header(cwd=str(other)), message_record(user("u"))])
    assert root(crafted) == (str(ws.resolve()), str(other))  # an arbitrary path: the launch directory
    assert root(crafted, str(other)) == (str(other), str(other))  # the client's root
    filed = write_lines(workspace_session_dir(manager.sessions_dir, str(other)) / "y.jsonl",
                        [header(cwd=str(other)), message_record(user("u"))])
    assert root(filed)[0] == str(other)  # kward filed it there for that cwd
    assert root(filed, str(ws))[0] == str(ws.resolve())  # the client decides
    misfiled = write_lines(workspace_session_dir(manager.sessions_dir, str(ws)) / "z.jsonl",
                           [header(cwd=str(other)), message_record(user("u"))])
    assert root(misfiled)[0] == str(ws.resolve())  # filed for another workspace
    gone = write_lines(workspace_session_dir(manager.sessions_dir, "/does/not/exist") / "w.jsonl",
                       [header(cwd="/does/not/exist"), message_record(user("u"))])
    assert root(gone) == (str(ws.resolve()), "/does/not/exist")


def test_rename_and_clear(env):
    manager, _ = env
    s = manager.create()
    assert manager.rename(s.id, "  New  ").name == "New"
    assert payload(s)["name"] == "New"
    manager.rename(s.id, "")
    assert "name" not in payload(s)
    manager.rename(s.id, "Again")
    manager.rename(s.id, None)
    infos = [r for r in strict_records(s.path) if r["type"] == "session_info"]
    assert [i["name"] for i in infos] == ["New", None, "Again", None]
    assert load_session(s.path, "/").name is None


def test_clone_copies_and_stays_independent(env):
    manager, ws = env
    (ws / "a.txt").write_text("a")
    s = manager.create(name="src")
    for m in ({"role": "system", "content": "sys"}, user("q"),
              assistant(calls=[("c1", "read_file", {"path": "a.txt"})]), tool_result("c1", "read_file", "a")):
        s.append_message(typed(m))
    before = Path(s.path).read_bytes()
    c = manager.clone(s.id)
    assert c.id != s.id and c.path != s.path and c.name == "src"
    p = payload(c)
    assert p["parentId"] == s.persistent_id and p["parentPath"] == s.path
    assert [m["role"] for m in recorded(c.conversation)] == ["user", "assistant", "tool"]
    assert c.read_paths == s.read_paths == {str((ws / "a.txt").resolve())}
    c.append_message(typed(user("only in clone")))
    assert Path(s.path).read_bytes() == before
    reloaded = load_session(c.path, str(ws))
    assert [m["role"] for m in recorded(reloaded.conversation)] == ["user", "assistant", "tool", "user"]
    assert reloaded.name == "src"


def test_fork_messages_and_fork(env):
    manager, _ = env
    s = manager.create()
    for m in (user("first\n  question"), assistant("a"), user([{"type": "text", "text": "second"},
                                                               {"type": "text", "text": "part"}]),
              assistant("b"), user("x" * 300)):
        s.append_message(typed(m))
    entries = wire_sessions.fork_messages(manager.fork_messages(s.id))["messages"]
    assert entries == [{"entryId": "message:0", "text": "first question"},
                       {"entryId": "message:2", "text": "second part"},
                       {"entryId": "message:4", "text": "x" * 120}]
    f, text = manager.fork(s.id, "message:2")
    assert text == "second\npart"
    assert [m["content"] for m in recorded(f.conversation)] == ["first\n  question", "a"]
    assert payload(f)["parentId"] == s.persistent_id
    f0, text0 = manager.fork(s.id, "message:0")
    assert f0.conversation == [] and text0 == "first\n  question"
    for bad in ("message:1", "message:99", "3", "message:-1", None, "message:x"):
        with pytest.raises(InvalidParams):
            manager.fork(s.id, bad)
    assert len(strict_records(s.path)) == 6  # the source is untouched


def test_delete_removes_file_and_sidecars(env):
    manager, _ = env
    s = manager.create(name="x")
    with s.turn_lock():
        pass
    result = manager.delete(s.id)
    assert result == s.path
    assert not [n for n in os.listdir(Path(s.path).parent) if n.startswith(Path(s.path).name)]
    with pytest.raises(SessionNotFound):
        manager.get(s.id)


def test_close_deletes_only_unused_sessions(env):
    manager, _ = env
    empty, named, used = manager.create(), manager.create(name="n"), None
    assert not os.path.exists(empty.path)  # cleaned up when `named` was created
    used = manager.create()
    used.append_message(typed(user("hi")))
    last = manager.create()
    assert manager.close(last.id) is None
    assert not os.path.exists(last.path)
    manager.close(named.id)
    manager.close(used.id)
    assert os.path.exists(named.path) and os.path.exists(used.path)
    with pytest.raises(SessionNotFound):
        manager.close(used.id)


def test_cleanup_spares_busy_sessions_and_defers_close_until_idle(env):
    manager, _ = env
    busy = manager.create()
    busy.shared.begin_work()  # a queued turn
    other = manager.create()
    assert os.path.exists(busy.path) and manager.get(busy.id) is busy
    manager.close(busy.id)  # requested while busy: happens when the work ends
    assert os.path.exists(busy.path) and busy.closed
    with pytest.raises(SessionNotFound):
        busy.shared.begin_work()
    busy.shared.end_work()
    assert not os.path.exists(busy.path)
    manager.shutdown_all()
    assert not os.path.exists(other.path)


@pytest.mark.slow
def test_cleanup_spares_sessions_another_process_has_open_or_locked(env):
    manager, _ = env
    for how in ("open", "turn"):
        s = manager.create()
        proc = child("""
            import sys
            from kward.sessions.opening import load_session
            s = load_session(sys.argv[1], "/")
            if sys.argv[2] == "turn":
                with s.turn_lock():
                    print("held", flush=True)
                    sys.stdin.readline()
            else:
                print("held", flush=True)
                sys.stdin.readline()
            s.close(delete_if_unused=False)
        """, s.path, how, stdin=True)
        try:
            assert proc.stdout.readline().strip() == "held"
            manager.create(name="next")  # cleanup runs: must spare `s`
            assert os.path.exists(s.path), how
            manager.close(s.id)
            assert os.path.exists(s.path), how
        finally:
            proc.stdin.write("done\n")
            proc.stdin.flush()
            proc.communicate(timeout=20)


def test_shutdown_all_deletes_unused_and_keeps_the_rest(env):
    manager, _ = env
    a = manager.create(name="a")
    b = manager.create(name="b")
    manager.rename(b.id, None)  # now unnamed, but a session_info line is not content
    manager.shutdown_all()
    assert os.path.exists(a.path) and not os.path.exists(b.path)
    for s in (a, b):
        with pytest.raises(SessionNotFound):
            manager.get(s.id)


def test_turn_lock_marks_busy_and_syncs(env):
    manager, _ = env
    s = manager.create()
    with s.turn_lock() as held:
        assert held is s.shared and s.busy
        s.append_message(typed(user("in a turn")))
        s.append_record("tool_execution_end", toolCallId="c", toolName="read", args={}, result={}, isError=False)
        with pytest.raises(SessionBusy):  # a second turn on the same session
            with s.turn_lock():
                pass
    assert not s.busy and not s.is_empty
    with pytest.raises(ValueError):
        s.append_record("message", message={})


def test_transcript(env):
    manager, ws = env
    s = manager.create(name="t")
    s.append_message(typed({"role": "system", "content": "sys"}))
    s.append_message(typed(user([{"type": "text", "text": "look"},
                           {"type": "image", "data": "AAAA", "mimeType": "image/png", "path": "/x/shot.png"}])))
    s.append_message(typed(assistant("done", reasoning_summary="I think", calls=[
        ("c1", "edit_file", {"path": "a.py", "edits": [{"old_text": "x", "new_text": "y"}]}),
        ("c2", "run_shell_command", {"command": "ls"}),
    ])))
    s.append_record("tool_execution_end", toolCallId="c1", toolName="edit", args={},
                    result={"content": "Edited", "isError": False, "images": [], "diff": "--- a.py\n+++ a.py",
                            "changedFiles": ["a.py"]}, isError=False)
    s.append_message(typed(tool_result("c1", "edit_file", "Edited a.py: replaced 1 block(s)\n--- a.py\n+++ a.py")))
    s.append_message(typed(tool_result("c2", "run_shell_command", "Error: command timed out after 30 seconds")))
    s.append_message(typed({"role": "assistant", "content": [{"type": "text", "text": "t"},
                                                       {"type": "reasoning", "text": "r"}]}))
    result = wire.transcript(manager.transcript(s.id))
    assert result["session"]["id"] == s.id and result["session"]["name"] == "t"
    assert result["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image", "data": "AAAA", "mimeType": "image/png", "alt": "shot.png"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I think"},
            {"type": "text", "text": "done"},
            {"type": "toolCall", "id": "c1", "name": "edit",
             "arguments": {"path": "a.py", "edits": [{"oldText": "x", "newText": "y"}]}},
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "ls", "timeout": 30}},
        ]},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "edit", "isError": False,
         "content": [{"type": "text", "text": "Edited a.py: replaced 1 block(s)\n--- a.py\n+++ a.py"}],
         "details": {"diff": "--- a.py\n+++ a.py", "changedFiles": ["a.py"]}},
        {"role": "toolResult", "toolCallId": "c2", "toolName": "bash", "isError": True,
         "content": [{"type": "text", "text": "Error: command timed out after 30 seconds"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "r"}, {"type": "text", "text": "t"}]},
    ]
    s.append_record("compaction", message={"role": "compactionSummary", "summary": "sum", "tokens_before": 42,
                                           "first_kept_entry_id": "message:4"})
    assert wire.transcript(manager.transcript(s.id))["messages"][0] == {"role": "compactionSummary", "summary": "sum",
                                                       "tokensBefore": 42}


def test_transcript_derives_details_without_an_execution_record(env):
    manager, _ = env
    s = manager.create()
    s.append_message(typed(assistant(calls=[("w", "write_file", {"path": "n.txt", "content": "x"})])))
    s.append_message(typed(tool_result("w", "write_file",
                                       "Wrote 1 bytes to n.txt\n--- n.txt\n+++ n.txt\n@@ -0,0 +1,1 @@\n+x")))
    [_, result] = wire.transcript(manager.transcript(s.id))["messages"]
    assert result["details"] == {"diff": "--- n.txt\n+++ n.txt\n@@ -0,0 +1,1 @@\n+x", "changedFiles": ["n.txt"]}


def test_sixteen_sessions_written_concurrently(env):
    manager, _ = env
    sessions = [manager.create(name=f"s{n}") for n in range(16)]
    go = threading.Event()

    def run(s):
        go.wait(10)
        with s.turn_lock():
            for i in range(100):
                s.append_message(typed(user(f"{s.name}-{i}-" + "z" * (i * 331 % 9000))))

    threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(60)
    for s in sessions:
        records = strict_records(s.path)
        texts = [r["message"]["content"].split("-")[:2] for r in records if r["type"] == "message"]
        assert texts == [[s.name, str(i)] for i in range(100)]


TWO_PROCESS = """
    import json, sys
    from pathlib import Path
    from kward.rpc.wire.sessions import session as session_payload
    from kward.sessions.manager import SessionManager
    from kward.sessions.codec import decode as typed, encode
    payload = lambda handle: session_payload(handle.info())
    recorded = lambda messages: [encode(m) for m in messages]
    manager = SessionManager(Path(sys.argv[1]), default_workspace=sys.argv[2])
    s = manager.resume(sys.argv[3])
    before = payload(s)
    manager.rename(s.id, "renamed elsewhere")
    s.append_message(typed({"role": "user", "content": "from the short-lived process"}))
    print(json.dumps({"before": before, "messages": [m["content"] for m in recorded(s.conversation)]}))
    manager.close(s.id)
    manager.shutdown_all()
"""


def test_another_process_resumes_renames_and_closes_an_open_session(env):
    manager, ws = env
    s = manager.create()
    s.append_message(typed(user("from the long-lived process")))
    out = json.loads(run_child(TWO_PROCESS, str(manager.sessions_dir), str(ws), s.path))
    assert out["before"]["persistentId"] == s.persistent_id and out["before"]["id"] != s.id
    assert out["messages"] == ["from the long-lived process", "from the short-lived process"]
    assert os.path.exists(s.path)  # the other process's close deleted nothing
    # the long-lived view folds in what the other process wrote
    assert payload(s)["name"] == "renamed elsewhere"
    s.append_message(typed(assistant("reply")))
    assert [m["content"] for m in recorded(s.conversation)] == [
        "from the long-lived process", "from the short-lived process", "reply"]
    fresh = load_session(s.path, str(ws))
    assert fresh.conversation == s.conversation and fresh.name == s.name == "renamed elsewhere"


def test_another_process_closing_an_empty_session_we_have_open_keeps_it(env):
    manager, ws = env
    s = manager.create()
    run_child(TWO_PROCESS.replace('manager.rename(s.id, "renamed elsewhere")', "").replace(
        's.append_message(typed({"role": "user", "content": "from the short-lived process"}))', ""),
        str(manager.sessions_dir), str(ws), s.path)
    assert os.path.exists(s.path)
    s.append_message(typed(user("still here")))
    assert [m["content"] for m in recorded(load_session(s.path, str(ws)).conversation)] == ["still here"]


def test_on_change_hears_this_process_renames_and_usage_with_every_open_id(tmp_path):
    from kward.model import AssistantMessage, Usage, UserMessage
    from kward.sessions.manager import SessionManager

    heard = []
    ws = tmp_path / "ws"
    ws.mkdir()
    manager = SessionManager(tmp_path / "sessions", str(ws),
                             on_change=lambda handles, change: heard.append(([h.id for h in handles], change)))
    try:
        s = manager.create(name="given at create")  # written before any id knows it: not a change
        assert heard == []
        other = manager.resume(s.path)
        s.rename("renamed")
        assert heard == [([s.id, other.id], (True, "renamed", False, Usage()))]
        s.rename("renamed")  # the same name: no change
        s.append_message(UserMessage("hi"))  # no usage
        s.append_message(AssistantMessage("partial", interrupted=True))  # no usage either
        assert len(heard) == 1
        s.append_message(AssistantMessage("ok", usage=Usage(10, 2, total_tokens=12, cost=0.5)))
        manager.close(other.id)
        s.append_message(AssistantMessage("more", usage=Usage(5, 1, total_tokens=6)))
        ids, change = heard[-2]
        assert ids == [s.id, other.id] and change.usage_changed and not change.renamed
        assert (change.spent.input_tokens, change.spent.cost) == (10, 0.5)
        ids, change = heard[-1]
        assert ids == [s.id] and (change.spent.input_tokens, change.spent.total_tokens, change.spent.cost) == (15, 18, 0.5)
        # another process's rename is folded in, never reported
        from kward.sessions.opening import load_session

        theirs = load_session(s.path, lambda header: str(ws))
        theirs.rename("theirs")
        theirs.close(delete_if_unused=False)
        assert s.name == "theirs" and len(heard) == 3
        s.append_message(UserMessage("again"))  # lands after their record: still not reported
        assert len(heard) == 3
    finally:
        manager.shutdown_all()
