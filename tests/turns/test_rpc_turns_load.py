"""Turns under load over the real `kward rpc`: many sessions running turns at once with
cancellations at random points (exactly one turnFinished per turn, gap-free sequences, FIFO
per session), and a client that stops reading stdout while a turn streams (bounded memory,
the overloaded error while the backlog is over the high-water mark, nothing lost)."""

import inspect
import json
import os
import random
import threading
import time

import pytest

from lib.processes import proc_status_kb
from lib.rpc_client import frame, kward_env, spawn_kward
from lib.scripted_kward import kward  # noqa: F401 (fixtures)
from lib.scripts import delay, reasoning, text, tool, write_script
from lib.turn_events import check_turn_events
from lib.waiting import wait_until

SESSIONS = 16
TURNS_PER_SESSION = 4


QUESTION = {"question": "Go?", "header": "Go",
            "options": [{"label": "Yes", "description": "go"}, {"label": "No", "description": "stop"}]}


@pytest.mark.slow
def test_many_concurrent_turns_each_finish_exactly_once_with_gap_free_sequences(kward):
    """16 sessions x 4 turns. Every first turn waits on a ui/question, so the later turns
    are queued for sure; some running and some queued turns are canceled at known points,
    then the questions are answered and more turns are canceled at random points."""
    rng = random.Random(20240604)
    k = kward([[tool("ask_user_question", {"questions": [QUESTION]})]] + [
        [text("a", repeat=20), delay(0.02), tool("list_directory", {"path": "."})],
        [reasoning("r", repeat=5), text("b", repeat=30)],
        [text("c"), delay(0.05), text("d", repeat=10)],
    ] * 4, files={"f.txt": "x\n"})
    sessions = [k.session(name=f"load {i}")["id"] for i in range(SESSIONS)]  # named: kept when others open
    order: dict[str, list[str]] = {sid: [k.start(sid, "turn 0")["id"]] for sid in sessions}
    questions = {}
    k.client.wait(lambda: len({q["sessionId"] for q in k.notified("ui/question")}) == SESSIONS, 10,
                  "a question from every session")
    for q in k.notified("ui/question"):
        questions[q["sessionId"]] = q["questionRequestId"]
    for n in range(1, TURNS_PER_SESSION):
        for sid in sessions:
            turn = k.start(sid, f"turn {n}", streamingBehavior="followUp")
            assert turn["status"] == "queued"
            order[sid].append(turn["id"])
    all_turns = [t for ids in order.values() for t in ids]

    expected = {}
    for sid in sessions[:4]:  # running, waiting for the answer
        expected[order[sid][0]] = "canceled"
    for sid in sessions[4:8]:  # queued behind the waiting turn
        expected[order[sid][rng.randrange(1, TURNS_PER_SESSION)]] = "canceled"
    for turn_id in expected:
        reply = k.request("turns/cancel", {"turnId": turn_id})
        assert reply["cancelRequested"] is True
    for sid in sessions[4:]:
        k.request("ui/answerQuestion", {"sessionId": sid, "questionRequestId": questions[sid], "answers": ["Yes"]})

    late = rng.sample([t for t in all_turns if t not in expected], 12)
    for turn_id in late:
        when = rng.choice(["now", "started", "delta"])
        if when == "started":
            k.wait_event(turn_id, "turnStarted", timeout=30)
        elif when == "delta":
            k.wait_notification(lambda n, t=turn_id: n["method"] == "turn/event" and n["params"]["turnId"] == t
                       and n["params"]["type"] in ("assistantDelta", "turnFinished"), 30)
        k.request("turns/cancel", {"turnId": turn_id})
    for turn_id in all_turns:
        k.wait_event(turn_id, "turnFinished", timeout=30)

    for turn_id in all_turns:
        events = k.events(turn_id)
        status = check_turn_events(events)["status"]
        if turn_id in expected:
            assert status == expected[turn_id]
        elif turn_id in late:  # a cancel that arrived after the final answer leaves the turn completed
            assert status in ("canceled", "completed")
        else:
            assert status == "completed"
        assert k.request("turns/events", {"turnId": turn_id})["events"] == events
    for sid in sessions[4:8]:
        queued_cancel = next(t for t in order[sid] if t in expected)
        assert "turnStarted" not in [e["type"] for e in k.events(queued_cancel)]

    # FIFO per session: a turn starts only after the one before it finished
    arrival = {}
    for i, n in enumerate(k.client.notifications):
        if n["method"] == "turn/event":
            arrival.setdefault((n["params"]["turnId"], n["params"]["type"]), i)
    for sid, ids in order.items():
        finished_at = -1
        for turn_id in ids:
            started = arrival.get((turn_id, "turnStarted"))
            if started is not None:
                assert started > finished_at, f"turn {turn_id} of {sid} started before the previous one finished"
            finished_at = arrival[(turn_id, "turnFinished")]
        state = k.request("runtime/state", {"sessionId": sid})
        assert state["isStreaming"] is False and state["pendingMessageCount"] == 0
    assert {n["params"]["turnId"] for n in k.client.notifications if n["method"] == "turn/event"} == set(all_turns)


class HeldReader:
    """Reads a child's stdout frames on a thread that can be paused (the client stops
    reading); keeps responses and, for turn events, only what the checks need."""

    def __init__(self, stream):
        self._fd = stream.fileno()
        self._cond = threading.Condition()
        self._reading = threading.Event()
        self._reading.set()
        self.responses: dict[int, dict] = {}
        self.events: dict[str, list[tuple[int, str]]] = {}  # turnId -> [(sequence, type)]
        self.deltas: dict[str, int] = {}
        self.finished: dict[str, dict] = {}
        self.eof = False
        self.failure = None
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def pause(self):
        self._reading.clear()

    def resume(self):
        self._reading.set()

    def _loop(self):
        buf = bytearray()
        try:
            while True:
                self._reading.wait()
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                while True:
                    end = buf.find(b"\r\n\r\n")
                    if end < 0:
                        break
                    if not buf.startswith(b"Content-Length: "):
                        raise ValueError(f"not a frame: {bytes(buf[:80])!r}")
                    size = int(buf[16:end])
                    if len(buf) < end + 4 + size:
                        break
                    msg = json.loads(bytes(buf[end + 4:end + 4 + size]))
                    del buf[:end + 4 + size]
                    self._take(msg)
        except Exception as exc:  # reported by wait()
            self.failure = exc
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _take(self, msg):
        with self._cond:
            if "id" in msg:
                self.responses[msg["id"]] = msg
            elif msg["method"] == "turn/event":
                p = msg["params"]
                self.events.setdefault(p["turnId"], []).append((p["sequence"], p["type"]))
                if p["type"] == "assistantDelta":
                    self.deltas[p["turnId"]] = self.deltas.get(p["turnId"], 0) + len(p["payload"]["delta"])
                elif p["type"] == "turnFinished":
                    self.finished[p["turnId"]] = p["payload"]
            self._cond.notify_all()

    def wait(self, predicate, timeout=30.0):
        with self._cond:
            assert self._cond.wait_for(lambda: predicate() or self.eof, timeout), "timed out"
            assert self.failure is None, self.failure
            assert predicate(), "stdout closed"

    def response(self, id, timeout=30.0):
        self.wait(lambda: id in self.responses, timeout)
        return self.responses[id]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def outbox_sizes():
    """The outbox's high-water mark and byte limit (its constructor defaults), so the test
    streams enough to cross them whatever they are tuned to."""
    from kward.rpc.transport import Outbox

    params = inspect.signature(Outbox.__init__).parameters
    return params["high_water"].default, params["limit"].default


def delta_frame_bytes(delta):
    sample = {"jsonrpc": "2.0", "method": "turn/event", "params": {
        "sequence": 99999, "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": "s" * 36, "turnId": "t" * 36,
        "type": "assistantDelta", "payload": {"delta": delta}}}
    return len(frame(json.dumps(sample, separators=(",", ":")).encode()))


@pytest.mark.slow
def test_a_client_that_stops_reading_gets_every_event_once_it_reads_again(isolated_home):
    """While the client does not read, the outbox fills to its byte limit and the turn waits
    (memory stays bounded); past the high-water mark new turns are refused as overloaded;
    once the client reads again every event of the turn arrives, in order, none missing,
    and the session file holds the whole turn."""
    high, limit = outbox_sizes()
    chunk = "x" * 50
    size = delta_frame_bytes(chunk)
    # step 1 leaves between the high-water mark and the limit queued (its deltas, then the
    # assistant message holding their text); step 2 streams twice the limit on top
    first = (high + limit) // 2 // (size + len(chunk))
    second = 2 * limit // size
    unread_slack = 256 * 1024  # the pipe, the reader's last chunk, the writer's blocked batch
    assert first * size - unread_slack > high and first * (size + len(chunk)) + unread_slack < limit
    ws = isolated_home / "ws"
    ws.mkdir()
    script = write_script(isolated_home / "scripts", [
        [text(chunk, repeat=first), tool("run_shell_command", {"command": "touch backlog.marker"})],
        [text(chunk, repeat=second), tool("run_shell_command", {"command": "touch late.marker"})],
        [text("done")],
    ])
    env = kward_env(isolated_home, KWARD_PROVIDER="scripted", KWARD_SCRIPT=str(script))
    proc = spawn_kward(isolated_home, cwd=ws, env=env)
    reader = HeldReader(proc.stdout)
    next_id = iter(range(1, 1000))

    def send(method, params):
        id = next(next_id)
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        proc.stdin.flush()
        return id

    try:
        sid = reader.response(send("sessions/create", {"workspaceRoot": str(ws), "name": "a"}))["result"]["id"]
        other = reader.response(send("sessions/create", {"workspaceRoot": str(ws), "name": "b"}))["result"]["id"]
        session_file = reader.response(send("runtime/state", {"sessionId": sid}))["result"]["sessionFile"]
        baseline_kb = proc_status_kb(proc.pid, "VmRSS")
        reader.pause()
        paused_at = time.monotonic()
        start_id = send("turns/start", {"sessionId": sid, "input": "stream a lot"})

        # the first step's output is queued, unread: over the high-water mark
        wait_until(lambda: (ws / "backlog.marker").exists(), 30, "the first step to end")
        refused_id = send("turns/start", {"sessionId": other, "input": "too soon"})
        info_id = send("workspace/info", {})

        # the second step fills the outbox to its limit, then the turn waits for the client:
        # the server uses (next to) no CPU over a 0.25 s measuring window
        def idle():
            before = cpu_ticks(proc.pid)
            time.sleep(0.25)
            return cpu_ticks(proc.pid) - before <= 2
        wait_until(idle, 30, "the server to block on the unread output", interval=0)
        # the case under test: the client reads nothing for 4 s, and for 2 s at least after
        # the server blocked (it blocks ~1.3 s after the pause here); this wait is the case
        # itself, not synchronisation; memory must not grow meanwhile, nor the turn go on
        time.sleep(max(0.0, paused_at + 4 - time.monotonic(), 2.0))
        held_kb = proc_status_kb(proc.pid, "VmRSS")
        # stalled before the end of its output: the backlog cannot grow any more
        assert not (ws / "late.marker").exists(), "the turn ran on although nobody read its output"
        assert held_kb - baseline_kb < (2 * limit + (8 << 20)) // 1024, \
            f"RSS grew by {(held_kb - baseline_kb) // 1024} MiB while the client did not read"

        reader.resume()
        turn_id = reader.response(start_id)["result"]["id"]
        refused = reader.response(refused_id)["error"]
        assert refused["code"] == -32001 and refused["message"] == "Server overloaded; retry later"
        assert refused["data"]["reason"] == "overloaded"
        assert reader.response(info_id)["result"]["root"] == os.path.realpath(ws)
        reader.wait(lambda: turn_id in reader.finished, 60)

        events = reader.events[turn_id]
        assert [seq for seq, _ in events] == list(range(1, len(events) + 1))
        types = [t for _, t in events]
        assert types.count("assistantDelta") == first + second + 1 and types[-3:] == ["answer", "turnDiff", "turnFinished"]
        assert reader.deltas[turn_id] == len(chunk) * (first + second) + len("done")
        assert reader.finished[turn_id] == {"status": "completed"}
        assert (ws / "late.marker").exists()
        assert set(reader.events) == {turn_id}  # the refused turn never existed

        # the backlog drained: turns are accepted again; the session file holds the turn
        again = reader.response(send("turns/start", {"sessionId": other, "input": "now"}))["result"]
        reader.wait(lambda: again["id"] in reader.finished, 30)
        with open(session_file, encoding="utf-8") as f:
            messages = [r["message"] for r in map(json.loads, f) if r["type"] == "message"]
        assert [len(m["content"]) for m in messages if m["role"] == "assistant"] == \
            [len(chunk) * first, len(chunk) * second, len("done")]
    finally:
        proc.stdin.close()
        reader.resume()
        assert proc.wait(15) == 0
        stderr = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert stderr == b""
