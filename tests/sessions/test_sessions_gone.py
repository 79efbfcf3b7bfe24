"""A session file that vanishes under an open session, in process: the
store refuses to append to a file nobody will read again, a turn is not settled
`completed` when its file went away after its last append, cleanup never deletes what
another file put at the path, and delete refuses while another "process" (another open
file description: flocks conflict between them as between processes) has it open."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kward.errors import SessionFileGone, SessionInUse
from lib.session_manager import new_manager
from lib.session_records import recorded, strict_records, typed, user
from kward.model import Answer
from kward.rpc.wire import events as wire


@pytest.fixture
def env(tmp_path):
    manager, ws = new_manager(tmp_path)
    yield manager, ws
    manager.shutdown_all()


def replace_with_copy(path: str) -> bytes:
    copy = Path(path + ".copy")
    copy.write_bytes(Path(path).read_bytes())
    os.replace(copy, path)
    return Path(path).read_bytes()


@pytest.mark.parametrize("how", ["unlink", "rename away", "replace"])
def test_appends_to_a_vanished_file_fail_and_write_nothing(env, how):
    manager, _ = env
    s = manager.create(name="x")
    s.append_message(typed(user("kept")))
    if how == "unlink":
        os.unlink(s.path)
    elif how == "rename away":
        os.rename(s.path, s.path + ".moved")
    else:
        replacement = replace_with_copy(s.path)
    size = s.shared._file.descriptor.size()
    with pytest.raises(SessionFileGone) as err:
        s.append_message(typed(user("lost")))
    assert err.value.reason == "session_file_gone" and s.path in err.value.message
    assert err.value.data == {"path": s.path, "state": "replaced" if how == "replace" else "missing"}
    with pytest.raises(SessionFileGone):
        s.rename("lost too")
    with pytest.raises(SessionFileGone):
        s.sync()
    assert s.shared._file.descriptor.size() == size  # nothing was written, not even to the old inode
    assert [m["content"] for m in recorded(s.conversation)] == ["kept"] and s.name == "x"
    if how == "replace":
        assert Path(s.path).read_bytes() == replacement
    if how == "rename away":
        assert [r["type"] for r in strict_records(s.path + ".moved")] == ["session", "session_info", "message"]
    manager.close(s.id)  # closing removes the sidecars a missing file left behind, nothing else
    if how == "replace":  # the sidecars' names are the new file's now
        assert Path(s.path).read_bytes() == replacement
    else:
        assert [n for n in os.listdir(Path(s.path).parent) if n.startswith(Path(s.path).name)] == \
            ([Path(s.path).name + ".moved"] if how == "rename away" else [])


def test_a_turn_lock_on_a_vanished_file_is_refused_without_leaving_a_sidecar(env):
    manager, _ = env
    s = manager.create(name="x")
    for sidecar in (".lock", ".open"):
        if os.path.exists(s.path + sidecar):
            os.unlink(s.path + sidecar)
    os.unlink(s.path)
    with pytest.raises(SessionFileGone):
        with s.turn_lock():
            pass
    assert not os.path.exists(s.path + ".lock") and not s.busy


def _turns(execute):
    from kward.agent.scheduler import TurnManager

    published, threads, cond = [], [], threading.Condition()

    def publish(event):
        with cond:
            published.append(wire.turn_event(event))
            cond.notify_all()

    def submit(job):
        thread = threading.Thread(target=job, daemon=True)
        thread.start()
        threads.append(thread)
        return True

    manager = TurnManager(submit=submit, publish=publish, make_room=lambda: None, execute=execute,
                          steering_supported=lambda: False)
    return manager, published, cond


def test_a_turn_whose_file_vanishes_after_its_last_append_is_not_completed(env):
    manager, _ = env
    s = manager.create(name="turn")

    def execute(turn, session):
        session.append_message(typed(user(turn.input)))
        os.unlink(session.path)  # after the last append, before the turn is settled
        turn.emit("answer", Answer("saved?"))

    turns, published, cond = _turns(execute)
    turn = turns.start(s, "hello", [])
    with cond:
        assert cond.wait_for(lambda: any(e["type"] == "turnFinished" for e in published), 10)
    finished = [e for e in published if e["type"] == "turnFinished"]
    assert [e["payload"]["status"] for e in finished] == ["failed"]
    assert finished[0]["payload"]["error"]["reason"] == "session_file_gone"
    assert finished[0]["sessionId"] == s.id and turns.get(turn.id).status == "failed"


def test_delete_is_refused_while_another_process_has_the_session_open(tmp_path):
    mine, _ = new_manager(tmp_path)
    other, _ = new_manager(tmp_path)  # a second open file description: like another process
    try:
        s = mine.create(name="shared")
        o = other.resume(s.path)
        for manager, sid in ((mine, s.id), (other, o.id)):
            with pytest.raises(SessionInUse) as err:
                manager.check_deletable(sid)
            assert err.value.reason == "session_in_use" and err.value.data == {"path": s.path}
            with pytest.raises(SessionInUse):
                manager.delete(sid)
            assert manager.get(sid).name == "shared" and os.path.exists(s.path)  # nothing changed
        with o.turn_lock():  # the other one running a turn: in use as well
            with pytest.raises(SessionInUse):
                mine.delete(s.id)
        assert mine.delete(s.id, force=True) == s.path
        assert not os.path.exists(s.path) and not os.path.exists(s.path + ".open")
        with pytest.raises(SessionFileGone):
            o.append_message(typed(user("lost")))
        assert other.delete(o.id) == s.path  # already gone: just closes
        # alone (several ids of one process count as one), no force is needed
        t = mine.create(name="alone")
        mine.resume(t.path)
        assert mine.delete(t.id) == t.path and not os.path.exists(t.path)
    finally:
        mine.shutdown_all()
        other.shutdown_all()


def test_cleanup_close_and_delete_never_remove_what_another_file_put_at_the_path(env):
    manager, _ = env
    empty = manager.create()
    replacement = replace_with_copy(empty.path)
    manager.create(name="moving on")  # cleanup: `empty` is empty and unnamed, but its file is not ours now
    assert Path(empty.path).read_bytes() == replacement
    manager.close(empty.id)
    assert Path(empty.path).read_bytes() == replacement
    s = manager.resume(empty.path)  # the file there now
    again = replace_with_copy(empty.path)
    with pytest.raises(SessionFileGone) as err:
        manager.delete(s.id, force=True)
    assert err.value.data["state"] == "replaced"
    assert Path(empty.path).read_bytes() == again and manager.get(s.id) is s  # nothing changed
