"""A tool failure never fails the turn or doubles history.

Over real `kward rpc` processes: paths that vanish (removed by an earlier shell command of
the same turn, a dangling symlink) and real OS errors inside a tool (a file name too long
for the file system) come back as `Error:` tool results and the turn completes. A path
that vanishes while the tool result is being recorded (the session's read-path
bookkeeping resolves it again right after the line is written: an adversarial run hit an
OSError there, which failed the turn and left the live history with the line twice) is
injected deterministically into a real process. Each time the live transcript equals the
one a new process reads back from the file, and no toolCallId appears twice.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from kward.sessions.opening import create_session, load_session
from kward.sessions.replay import Replay
from lib.rpc_client import RpcClient, kward_env
from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool, write_script
from lib.session_records import assistant, recorded, typed, user
from lib.turn_events import check_turn_events

LONG_NAME = "n" * 300 + ".txt"  # over NAME_MAX (255) on every common file system


def transcript(client, session_id):
    return client.request("sessions/transcript", {"sessionId": session_id})["messages"]


def tool_call_ids(messages):
    return [m["toolCallId"] for m in messages if m["role"] == "toolResult"]


def results(events):
    return {e["payload"]["toolCallId"]: e["payload"]["result"] for e in events if e["type"] == "toolResult"}


def resumed_transcript(home, path):
    """The transcript of the session file as a fresh process reads it."""
    with RpcClient(home, env=kward_env(home, KWARD_PROVIDER="scripted")) as other:
        session = other.request("sessions/resume", {"path": path})
        messages = transcript(other, session["id"])
        assert other.protocol_errors == [] and other.stderr == ""
    return messages


@pytest.mark.slow
def test_vanished_paths_and_os_errors_are_error_results_and_the_turn_completes(kward, isolated_home):
    k = kward([
        [tool("run_shell_command", {"command": "rm -r gone && ln -s missing-target dangling"}, id="rm")],
        [tool("read_file", {"path": "gone/f.txt"}, id="read_gone"),
         tool("list_directory", {"path": "gone"}, id="list_gone"),
         tool("search_files", {"pattern": "x", "path": "gone"}, id="search_gone"),
         tool("read_file", {"path": "dangling"}, id="read_dangling"),
         tool("write_file", {"path": LONG_NAME, "content": "hi"}, id="write_long")],
        [text("done despite the errors")],
    ], files={"gone/f.txt": "x\n", "a.txt": "a\n"})
    s = k.session()
    turn, events = k.run(s["id"], "try things")
    check_turn_events(events, "completed")
    got = results(events)
    assert got["rm"]["isError"] is False
    for call_id in ("read_gone", "list_gone", "search_gone", "read_dangling", "write_long"):
        assert got[call_id]["isError"] is True and got[call_id]["content"].startswith("Error: "), got[call_id]
    assert got["read_gone"]["content"] == "Error: no such file or directory: gone/f.txt"
    # an OSError inside the tool: the OS's words and the path the model gave
    assert got["write_long"]["content"].startswith("Error: File name too long: ")
    assert got["write_long"]["content"].endswith(LONG_NAME)
    assert not [name for name in os.listdir(k.ws) if name.endswith(".tmp")]

    live = transcript(k, s["id"])
    ids = tool_call_ids(live)
    assert len(ids) == len(set(ids)) == 6
    assert [m["role"] for m in k.messages(s)].count("tool") == 6
    assert resumed_transcript(isolated_home, s["path"]) == live


BOOT = textwrap.dedent("""
    # kward rpc with one fault: the session's read-path bookkeeping (run when a read_file
    # result is recorded, right after its line is written) finds `vanishing.txt` gone, as
    # when the file is removed or swapped between the tool's read and that bookkeeping.
    import errno, os, sys
    import kward.sessions.replay as replay
    real = replay.realpath_below
    def vanished(root, path):
        if "vanishing" in path:
            with open(os.environ["FAULT_LOG"], "a") as f:
                f.write(path + "\\n")
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.path.join(str(root), path))
        return real(root, path)
    replay.realpath_below = vanished
    from kward.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.slow
def test_a_path_vanishing_while_its_result_is_recorded_neither_fails_the_turn_nor_doubles_history(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    (ws / "vanishing.txt").write_text("now you see me\n", encoding="utf-8")
    script = write_script(isolated_home / "scripts", [
        [tool("read_file", {"path": "vanishing.txt"}, id="first")], [text("read it")],
        [tool("read_file", {"path": "vanishing.txt"}, id="second")], [text("read it again")],
    ])
    fault_log = isolated_home / "faults.log"
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script), FAULT_LOG=str(fault_log))
    with RpcClient(isolated_home, cwd=ws, env=env, argv=[sys.executable, "-c", BOOT, "rpc"]) as k:
        s = k.request("sessions/create", {"workspaceRoot": str(ws)})
        for call_id in ("first", "second"):
            turn = k.request("turns/start", {"sessionId": s["id"], "input": f"read {call_id}"})
            k.wait_notification(lambda n, t=turn["id"]: n["method"] == "turn/event"
                                and n["params"]["turnId"] == t and n["params"]["type"] == "turnFinished")
            events = [n["params"] for n in k.notifications
                      if n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]]
            check_turn_events(events, "completed")
            assert results(events)[call_id] == {"content": "now you see me\n", "isError": False, "images": []}
        live = transcript(k, s["id"])
        assert k.protocol_errors == [] and k.stderr == ""
    assert fault_log.read_text().splitlines() == ["vanishing.txt", "vanishing.txt"]  # the fault did fire
    assert tool_call_ids(live) == ["first", "second"]
    with open(s["path"], encoding="utf-8") as f:
        stored = [json.loads(line) for line in f]
    assert [r["message"]["role"] for r in stored if r["type"] == "message"] == \
        ["user", "assistant", "tool", "assistant"] * 2
    assert resumed_transcript(isolated_home, s["path"]) == live


def test_a_record_whose_live_update_fails_is_never_applied_twice(tmp_path, monkeypatch):
    """In-process: whatever goes wrong while a written record is applied to the live
    state, that line is never read back and applied a second time."""
    ws = tmp_path / "ws"
    ws.mkdir()
    session = create_session(tmp_path / "sessions", str(ws))
    session.append_message(typed(user("a")))
    real_add = Replay.add_message

    def add_then_fail(self, message):
        real_add(self, message)
        raise RuntimeError("bookkeeping bug")

    monkeypatch.setattr(Replay, "add_message", add_then_fail)
    with pytest.raises(RuntimeError):
        session.append_message(typed(assistant("b")))
    monkeypatch.undo()
    session.append_message(typed(user("c")))
    session.refresh()
    assert [m["content"] for m in recorded(session.entry_messages())] == ["a", "b", "c"]
    again = load_session(session.path, str(tmp_path))
    assert [m["content"] for m in recorded(again.conversation)] == ["a", "b", "c"]
    again.close(delete_if_unused=False)
    session.close(delete_if_unused=False)


def test_a_turn_in_a_removed_workspace_fails_with_a_clear_error(kward):
    k = kward([[text("never")]])
    s = k.session()
    os.rmdir(k.ws)
    _, events = k.run(s["id"], "anyone there?")
    error = check_turn_events(events, "failed")["error"]
    assert error["reason"] == "workspace_not_found" and str(k.ws) in error["message"]
    assert "No such file or directory" in error["message"]
