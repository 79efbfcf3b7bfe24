"""`kward rpc --listen unix://PATH`: several clients on one server that outlives them.

Two clients (their own initialize, answers and ids; notifications by attachment), a
client dropped mid-turn and another attaching and replaying what it missed with no gap,
a question answered by the client that attached, a turn cancelled with its client when
that client asked for it, the socket's modes, a stale socket replaced, a second server
refused, a peer of another user refused (the check, on a socketpair), and --idle-exit."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys

import pytest

from kward.rpc import listen
from lib.daemon_helpers import Daemon
from lib.rpc_client import kward_command, kward_env, spawn_kward
from lib.scripts import text, tool, wait_for_steer
from lib.waiting import wait_until

QUESTION = {"question": "Which color?", "header": "Color",
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}


@pytest.fixture
def daemon(isolated_home):
    started: list[Daemon] = []

    def start(steps=None, **kw) -> Daemon:
        ws = isolated_home / f"ws{len(started)}"
        ws.mkdir()
        d = Daemon(isolated_home, ws, steps, **kw)
        started.append(d)
        return d

    yield start
    for d in started:
        if d.proc.poll() is None:
            assert d.stop() == 0
        assert d.stderr == "", d.stderr


def test_two_clients_have_their_own_initialize_answers_and_notifications(daemon):
    d = daemon([[text("for a")], [text("for b")]])
    a, b = d.connect(), d.connect()
    ia = a.request("initialize", {"clientInfo": {"name": "a"}, "capabilities": {"experimentalApi": True}})
    ib = b.request("initialize", {"capabilities": {"optOutNotificationMethods": ["turn/event:assistantDelta"]}})
    assert ia["capabilities"]["rpc"]["experimentalApi"]["enabled"] is True
    assert ia["capabilities"]["rpc"]["connection"] == {"transport": "unix", "severalClients": True, "attach": True,
                                                       "closeBehaviors": ["keepTurns", "cancelTurns"]}
    assert ib["capabilities"]["rpc"]["experimentalApi"]["enabled"] is False
    assert a.request("$/ping")["pid"] == b.request("$/ping")["pid"] == d.proc.pid
    sa, sb = a.session(), b.session()
    ta = a.start(sa["id"], "one")
    tb = b.start(sb["id"], "two")
    ea, eb = a.finish(ta["id"]), b.finish(tb["id"])
    assert ea[-1]["payload"]["status"] == eb[-1]["payload"]["status"] == "completed"
    # no cross-talk: each hears only its own session, and each answer reached only its asker
    assert {n["params"]["sessionId"] for n in a.notifications if n["method"] == "turn/event"} == {sa["id"]}
    assert {n["params"]["sessionId"] for n in b.notifications if n["method"] == "turn/event"} == {sb["id"]}
    assert any(e["type"] == "assistantDelta" for e in ea)
    assert not any(e["type"] == "assistantDelta" for e in eb)  # (b's own opt-out)
    assert a.protocol_errors == b.protocol_errors == []
    # the same request id on both connections is answered to each
    ra = a.send("$/ping", None, id=7)
    rb = b.send("$/ping", None, id=7)
    assert a.response(ra)["result"]["pong"] and b.response(rb)["result"]["pong"]
    assert a.response_counts['7'] == 1 and b.response_counts['7'] == 1


def test_a_dropped_client_leaves_its_turn_running_and_another_attaches_and_replays(daemon):
    d = daemon([[text("chunk ", repeat=30, interval=0.02), wait_for_steer(20)], [text("done")]])
    first = d.connect()
    first.request("initialize")
    session = first.session()
    turn = first.start(session["id"], "work")
    seen = wait_until(lambda: [n["params"]["sequence"] for n in first.notifications
                               if n["method"] == "turn/event" and n["params"]["turnId"] == turn["id"]][5:] and
                      [n["params"]["sequence"] for n in first.notifications if n["method"] == "turn/event"],
                      20, "some events")
    last_seen = max(seen)
    first.drop()  # (a crashed window)
    second = d.connect()
    second.request("initialize")
    attached = second.request("sessions/attach", {"sessionId": session["id"]})
    assert attached["session"]["id"] == session["id"]
    [info] = attached["turns"]
    assert info["id"] == turn["id"] and info["status"] == "running" and info["lastSequence"] >= last_seen
    replay = second.request("turns/events", {"turnId": turn["id"], "afterSequence": last_seen})
    assert replay["truncated"] is False
    second.request("turns/start", {"sessionId": session["id"], "input": "finish", "streamingBehavior": "steer"})
    live = second.finish(turn["id"])
    sequences = [e["sequence"] for e in replay["events"]] + [e["sequence"] for e in live]
    got = sorted(set(sequences))
    assert got == list(range(last_seen + 1, got[-1] + 1))  # nothing missed between the replay and the live events
    assert live[-1]["payload"]["status"] == "completed", [e["payload"] for e in live if e["type"] in ("error", "turnFinished")]


def test_a_question_is_sent_again_to_a_client_that_attaches_and_its_answer_counts(daemon):
    d = daemon([[tool("ask_user_question", {"questions": [QUESTION]}, id="ask")], [text("you chose")]])
    first = d.connect()
    first.request("initialize")
    session = first.session()
    turn = first.start(session["id"], "ask me")
    asked = first.wait_notification(lambda n: n["method"] == "ui/question", 20, "the question")["params"]
    first.drop()
    second = d.connect()
    second.request("initialize")
    second.request("sessions/attach", {"sessionId": session["id"]})
    again = second.wait_notification(lambda n: n["method"] == "ui/question", 20, "the question again")["params"]
    assert again["questionRequestId"] == asked["questionRequestId"]
    second.request("ui/answerQuestion", {"sessionId": session["id"], "questionRequestId": again["questionRequestId"],
                                         "answers": [{"question": "Which color?", "answer": "Blue"}]})
    events = second.finish(turn["id"])
    result = next(e["payload"] for e in events if e["type"] == "toolResult")
    assert "Blue" in result["content"]


def test_close_behavior_cancel_turns_cancels_a_departed_clients_turn(daemon):
    d = daemon([[wait_for_steer(30), text("never")]])
    first = d.connect()
    first.request("initialize", {"capabilities": {"closeBehavior": "cancelTurns"}})
    session = first.session()
    turn = first.start(session["id"], "wait")
    first.wait_event(turn["id"], "turnStarted")
    first.close()
    other = d.connect()
    other.request("initialize")
    wait_until(lambda: other.request("turns/status", {"turnId": turn["id"]})["status"] == "canceled", 20,
               "the turn cancelled")
    assert other.error("initialize", {"capabilities": {"closeBehavior": "sometimes"}}).reason == "invalid_params"


def test_the_socket_is_private_a_second_server_is_refused_and_a_stale_one_replaced(daemon, isolated_home):
    d = daemon()
    mode = os.stat(d.path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(d.path)).st_mode) == 0o700
    second = subprocess.run(kward_command(None, "--listen", f"unix://{d.path}"), capture_output=True,
                            text=True, env=kward_env(isolated_home), timeout=30)
    assert second.returncode == 1 and "already listens on" in second.stderr
    d.proc.kill()  # (no clean-up: the socket file stays behind, stale)
    d.proc.wait(10)
    assert os.path.exists(d.path)
    again = daemon()  # (the same path)
    assert again.connect().request("$/ping")["pid"] == again.proc.pid
    d.proc = again.proc  # (the fixture checks the first one's stderr, which is empty)


def test_a_file_in_the_sockets_place_or_an_open_directory_is_refused(isolated_home, tmp_path):
    path = tmp_path / "run" / "kward.sock"
    path.parent.mkdir(mode=0o700)
    path.write_text("not a socket")
    proc = subprocess.run(kward_command(None, "--listen", f"unix://{path}"), capture_output=True, text=True,
                          env=kward_env(isolated_home), timeout=30)
    assert proc.returncode == 1 and "is not a socket" in proc.stderr
    assert path.read_text() == "not a socket"
    bad = subprocess.run(kward_command(None, "--listen", "tcp://0.0.0.0:1"), capture_output=True, text=True,
                         env=kward_env(isolated_home), timeout=30)
    assert bad.returncode == 1 and "not an address kward knows" in bad.stderr
    path.unlink()
    os.chmod(path.parent, 0o755)
    refused = subprocess.run(kward_command(None, "--listen", f"unix://{path}"), capture_output=True, text=True,
                             env=kward_env(isolated_home), timeout=30)
    assert refused.returncode == 1 and "is open to others (mode 755; 700 expected)" in refused.stderr
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o755  # (a directory of the user's: left as it is)
    with pytest.raises(listen.ListenError, match="open to others"):
        listen.listen(str(path))


def test_a_peer_of_another_user_is_refused(monkeypatch):
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        assert listen.peer_uid(left) == os.getuid() and listen.same_user(left)
        monkeypatch.setattr(listen, "peer_uid", lambda sock: os.getuid() + 1)
        assert not listen.same_user(left)
        monkeypatch.setattr(listen, "peer_uid", lambda sock: None)  # a platform that cannot tell
        assert not listen.same_user(left)
    finally:
        left.close()
        right.close()


def test_idle_exit_ends_a_server_with_no_client_and_no_turn(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    d = Daemon(isolated_home, ws, idle_exit=0.5)
    client = d.connect()
    assert client.request("$/ping")["pong"] is True
    client.close()
    assert d.wait_exit(20) == 0 and d.stderr == ""
    assert not os.path.exists(d.path)  # its socket file went with it


def test_shutdown_from_any_client_ends_the_server(daemon):
    d = daemon()
    a, b = d.connect(), d.connect()
    a.request("initialize")
    b.request("initialize")
    assert b.request("shutdown") == {"ok": True}
    assert d.wait_exit(20) == 0


def test_listen_options_are_checked(isolated_home):
    for args, words in ((["--idle-exit", "0"], "--idle-exit must be a number"),
                        (["--listen"], "--listen needs a value"),
                        (["--idle-exit", "5"], "--idle-exit is for a listening server")):
        proc = spawn_kward(isolated_home, argv=kward_command(None, *args), stdin=subprocess.DEVNULL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and words in err.decode(), err


def test_the_python_client_connects_and_catches_up_after_a_drop(daemon):
    from kward.client import Client

    d = daemon([[text("piece ", repeat=20, interval=0.01), wait_for_steer(20)], [text("end")]])
    with Client.connect(f"unix://{d.path}") as first:
        first.initialize()
        session = first.create_session(d.ws)
        turn = first.start_turn(session["id"], "go")
        seen = {}
        with first.subscribe(lambda m: m.get("method") == "turn/event") as events:
            for message in events:
                seen[message["params"]["turnId"]] = message["params"]["sequence"]
                if message["params"]["sequence"] >= 6:
                    break
    with Client.connect(f"unix://{d.path}").reconnect() as again:  # (the first is gone; its turn runs on)
        again.initialize()
        attached, missed = again.catch_up(session["id"], seen)
        assert [t["id"] for t in attached["turns"]] == [turn["id"]]
        assert [e["sequence"] for e in missed] == list(range(seen[turn["id"]] + 1, attached["turns"][0]["lastSequence"] + 1))
        with again.subscribe(lambda m: m.get("method") == "turn/event") as live:
            again.start_turn(session["id"], "done now", streaming_behavior="steer")
            for message in live:
                if message["params"]["type"] == "turnFinished" and message["params"]["turnId"] == turn["id"]:
                    assert message["params"]["payload"]["status"] == "completed"
                    break
    import pytest as _pytest

    with _pytest.raises(OSError):
        Client.connect(f"unix://{d.path}.missing")
    with _pytest.raises(ValueError):
        Client.connect("stdio://")


def test_an_approval_request_is_sent_again_to_a_client_that_attaches(daemon, isolated_home):
    from lib.config_files import write_config

    write_config(isolated_home / ".kward", {"security": {"approvalMode": "ask", "approvalTimeoutSeconds": 60}})
    d = daemon([[tool("write_file", {"path": "made.txt", "content": "hi\n"})], [text("written")]])
    answers = {"capabilities": {"serverRequests": ["tool/requestApproval"]}}
    first = d.connect()
    first.request("initialize", answers)
    session = first.session()
    turn = first.start(session["id"], "write")
    asked = first.wait_server_request("tool/requestApproval")
    assert asked["params"]["turnId"] == turn["id"]
    first.drop()  # (gone before answering)
    second = d.connect()
    second.request("initialize", answers)
    second.request("sessions/attach", {"sessionId": session["id"]})
    again = second.wait_server_request("tool/requestApproval")
    assert again["params"]["toolCallId"] == asked["params"]["toolCallId"]
    second.reply(again["id"], {"decision": "approve"})
    events = second.finish(turn["id"])
    assert events[-1]["payload"]["status"] == "completed"
    assert (d.ws / "made.txt").read_text() == "hi\n"


def test_a_client_that_stops_reading_is_dropped_and_the_others_go_on(daemon):
    import json as _json

    from kward.rpc.framing import FrameReader

    d = daemon([[text("x" * 60_000, repeat=400)]])
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.connect(d.path)

    def send(id_, method, params=None):
        body = _json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}).encode()
        stuck.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    reader = FrameReader(stuck.makefile("rb"), 1 << 30)
    send(1, "initialize")
    send(2, "sessions/create", {"workspaceRoot": str(d.ws)})
    answers = [_json.loads(reader.read()) for _ in range(2)]
    session_id = answers[1]["result"]["id"]
    other = d.connect()
    other.request("initialize")
    assert other.request("$/ping")["connections"] == 2
    send(3, "turns/start", {"sessionId": session_id, "input": "flood me"})  # ... and it reads no more
    # while the flood waits for the stuck client (at most 5 s), the other is served as ever
    mine = other.session()
    assert other.request("sessions/attach", {"sessionId": mine["id"]})["turns"] == []
    assert other.request("$/ping")["connections"] == 2
    wait_until(lambda: other.request("$/ping")["connections"] == 1, 60, "the stuck client dropped")
    flood = other.request("sessions/attach", {"sessionId": session_id})["turns"][0]  # (the turn went on)
    assert other.request("sessions/detach", {"sessionId": session_id}) == {"detached": True}
    wait_until(lambda: other.request("turns/status", {"turnId": flood["id"]})["status"] == "completed", 60,
               "the flood turn finished without its client")
    assert stuck.recv(1 << 20) is not None  # (its socket was closed by the server: reading ends)
    stuck.close()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root, to connect as another user")
def test_a_connection_from_another_user_is_closed_at_once(daemon):
    import tempfile
    from pathlib import Path

    outside = Path(tempfile.mkdtemp(prefix="kward-peer-"))  # (the test's own tmp is closed to others)
    try:
        _another_user_refused(daemon, outside)
    finally:
        import shutil

        shutil.rmtree(outside, ignore_errors=True)


def _another_user_refused(daemon, outside):
    d = daemon(path=outside / "run" / "kward.sock")
    # open the way to the socket (kward made it private), so that only the peer check is left
    os.chmod(outside, 0o711)
    os.chmod(os.path.dirname(d.path), 0o711)
    os.chmod(d.path, 0o666)
    code = ("import os, socket, sys\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "body = b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$/ping\"}'\n"
            "try:\n"
            "    s.sendall(b'Content-Length: %d\\r\\n\\r\\n' % len(body) + body)\n"
            "    print(repr(s.recv(1000)))\n"
            "except OSError as exc:\n"
            "    print('closed', type(exc).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code, d.path], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in ("b''", "closed ConnectionResetError", "closed BrokenPipeError"), out.stdout
    assert d.connect().request("$/ping")["connections"] == 1  # (only this one: the other was never served)


def test_a_turn_waiting_for_an_answer_does_not_keep_an_abandoned_server_alive(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    d = Daemon(isolated_home, ws, [[tool("ask_user_question", {"questions": [QUESTION]})], [text("never")]],
               idle_exit=0.5)
    client = d.connect()
    client.request("initialize")
    session = client.session()
    client.start(session["id"], "ask")
    client.wait_notification(lambda n: n["method"] == "ui/question", 20, "the question")
    client.close()  # nobody is left to answer it
    assert d.wait_exit(20) == 0 and d.stderr == ""


def test_a_server_whose_socket_file_is_removed_exits_when_its_last_client_leaves(isolated_home):
    ws = isolated_home / "ws"
    ws.mkdir()
    d = Daemon(isolated_home, ws)
    client = d.connect()
    client.request("$/ping")
    os.unlink(d.path)
    assert client.request("$/ping")["pong"] is True  # (served while the client stays)
    client.close()
    assert d.wait_exit(20) == 0 and d.stderr == ""


def test_listen_stdio_is_the_default_server(isolated_home):
    from lib.rpc_client import RpcClient

    with RpcClient(isolated_home, args=["--listen", "stdio://"]) as k:
        caps = k.request("initialize")["capabilities"]["rpc"]["connection"]
        assert caps["transport"] == "stdio" and k.request("$/ping")["pid"] == k.proc.pid
        assert k.close() == 0 and k.stderr == ""


def test_at_most_64_clients_at_once(daemon):
    from kward.rpc.daemon import MAX_CONNECTIONS

    d = daemon()
    held = []
    try:
        for _ in range(MAX_CONNECTIONS):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(d.path)
            held.append(s)
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.connect(d.path)
        extra.settimeout(10)
        assert extra.recv(100) == b""  # closed at once, unserved
        extra.close()
    finally:
        for s in held:
            s.close()
    assert wait_until(lambda: _fresh_ping(d), 20, "a client served again once the others left")


def _fresh_ping(d):
    """A `$/ping` on a new connection (None: it was refused, the others not gone yet)."""
    from lib.daemon_helpers import SocketClient

    client = SocketClient(d.path)
    try:
        return client.request("$/ping", timeout=2)["pong"]
    except Exception:
        return None
    finally:
        client.close()


def test_a_question_goes_to_another_attached_client_when_its_turns_client_leaves(daemon):
    d = daemon([[tool("ask_user_question", {"questions": [QUESTION]}, id="ask")], [text("chosen")]])
    owner, watcher = d.connect(), d.connect()
    owner.request("initialize")
    watcher.request("initialize")
    session = owner.session()
    watcher.request("sessions/attach", {"sessionId": session["id"]})
    turn = owner.start(session["id"], "ask")
    asked = owner.wait_notification(lambda n: n["method"] == "ui/question", 20, "the question")["params"]
    assert not [n for n in watcher.notifications if n["method"] == "ui/question"]  # (the owner's to answer)
    owner.drop()
    sent = watcher.wait_notification(lambda n: n["method"] == "ui/question", 20, "the question, to the watcher")
    assert sent["params"]["questionRequestId"] == asked["questionRequestId"]
    watcher.request("ui/answerQuestion", {"sessionId": session["id"], "questionRequestId": asked["questionRequestId"],
                                          "answers": [{"question": "Which color?", "answer": "Red"}]})
    assert watcher.finish(turn["id"])[-1]["payload"]["status"] == "completed"
