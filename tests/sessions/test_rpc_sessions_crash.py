"""`kward rpc` killed with SIGKILL at random moments while sessions are written, many
times over: afterwards every session file still resumes in a fresh
process, and every record whose response or event the client had received is in the file.

Each round starts a process with the Scripted provider, resumes every session of the
earlier rounds (so a torn last line left by the previous kill is appended after), starts a
turn on each that writes large records (reasoning, long text, read_file results of 40 KB;
four model calls), sends sessions/rename (and sometimes sessions/create) while they run,
and kills the process when a randomly chosen number of notifications has arrived. The
choices come from a fixed seed; where the kill lands inside the server's work is up to the
scheduler, which is the point.
"""

from __future__ import annotations

import json
import random
import signal
from dataclasses import dataclass, field

import pytest

from lib.processes import child
from lib.rpc_sessions import start, workspace  # noqa: F401  (fixtures)
from lib.scripts import reasoning, text, tool
from lib.session_records import lenient_records, session_files

ROUNDS = 20
BIG = "".join(f"line {i:05d} of the big file, padded to make the tool result large\n" for i in range(560))
TOOL_STEP = [reasoning("r" * 3000), text("t" * 30000), tool("read_file", path="big.txt")]
STEPS = [TOOL_STEP, TOOL_STEP, TOOL_STEP, [text("answer " + "a" * 60000)]]
# queued, started, 3 x (reasoning, delta, message, toolCall, toolResult), delta, message, answer, finished
EVENTS_PER_TURN = 2 + 3 * 5 + 4


@dataclass
class Acked:
    """What the client received for one session file, over every round."""

    assistant: list[dict] = field(default_factory=list)  # assistantMessage payloads
    tool_results: set[str] = field(default_factory=set)  # toolCallIds of toolResult events
    users: set[str] = field(default_factory=set)  # inputs of turns that reached assistantMessage
    renames: list[tuple[list[str], int]] = field(default_factory=list)  # per round: (names sent, acked)


def fingerprint(message: dict) -> tuple:
    calls = tuple(c["id"] for c in message.get("tool_calls") or [])
    return message["role"], message.get("content"), message.get("reasoning_summary"), calls


def response_of(client, request_id) -> dict | None:
    with client._cond:
        return client._responses.get(json.dumps(request_id))


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing_acknowledged(start, workspace, isolated_home):
    (workspace / "big.txt").write_text(BIG)
    # every live message is checked against the file: no automatic compaction of these big sessions
    (isolated_home / ".kward").mkdir(exist_ok=True)
    (isolated_home / ".kward" / "config.json").write_text(json.dumps({"compaction": {"enabled": False}}))
    rng = random.Random(20240611)
    acked: dict[str, Acked] = {}
    paths: list[str] = []
    torn_seen = killed_mid_turn = 0

    for round_no in range(ROUNDS):
        k = start(STEPS)
        ids: dict[str, str] = {}  # RPC id -> path
        if round_no in (0, 7):
            for n in range(2):
                s = k.create(name=f"crash {round_no}.{n}")
                paths.append(s["path"])
                acked[s["path"]] = Acked()
                ids[s["id"]] = s["path"]
        for path in paths:
            if path not in ids.values():
                ids[k.resume(path)["id"]] = path  # every earlier file still resumes after a kill

        inputs = {sid: f"round {round_no} {path[-16:]}" for sid, path in ids.items()}
        starts = k.send_many([("turns/start", {"sessionId": sid, "input": text}) for sid, text in inputs.items()])

        def refused(msg: dict | None) -> bool:  # documented backpressure: "retry later"
            return msg is not None and msg.get("error", {}).get("data", {}).get("reason") == "overloaded"

        def done() -> bool:
            finished = sum(1 for n in k.notifications if n["params"].get("type") == "turnFinished")
            not_started = sum(refused(response_of(k, rid)) for rid in starts)
            errors = any("error" in msg and not refused(msg) for msg in k._responses.values())
            return finished >= len(ids) - not_started or errors

        expected = len(ids) * EVENTS_PER_TURN
        kill_at = rng.choice([0, 3, rng.randrange(expected), rng.randrange(expected), expected + 1])
        renames: dict[str, list[tuple[str, int]]] = {p: [] for p in ids.values()}
        creates = []
        for checkpoint in sorted(rng.sample(range(expected), 4)):
            if checkpoint >= kill_at:
                break
            k.wait(lambda: len(k.notifications) >= checkpoint or done(), 30, f"{checkpoint} notifications")
            for sid, path in ids.items():
                if rng.random() < 0.6:
                    name = f"name {round_no}.{checkpoint} {path[-16:]}"
                    renames[path].append((name, k.send("sessions/rename", {"sessionId": sid, "name": name})))
            if rng.random() < 0.15:
                creates.append(k.send("sessions/create", {"name": f"created {round_no}.{checkpoint}"}))
        k.wait(lambda: len(k.notifications) >= kill_at or done(), 30, f"{kill_at} notifications")
        killed_mid_turn += not done()
        k.proc.kill()
        k.wait_exit()
        assert all(e.startswith("EOF inside") for e in k.protocol_errors), k.protocol_errors  # a frame cut short
        errors = [msg for msg in k._responses.values() if "error" in msg]
        assert all(refused(msg) and msg["id"] in starts for msg in errors), errors

        # what the client had received before the kill
        for n in k.notifications:
            p = n["params"]
            path = ids.get(p.get("sessionId"))
            if p["type"] == "assistantMessage":
                acked[path].assistant.append(p["payload"]["message"])
                acked[path].users.add(inputs[p["sessionId"]])
            elif p["type"] == "toolResult":
                acked[path].tool_results.add(p["payload"]["toolCallId"])
        for path, sent in renames.items():
            got = sum(1 for _, rid in sent if response_of(k, rid) is not None)
            assert all(response_of(k, rid) is not None for _, rid in sent[:got])  # answered in order
            acked[path].renames.append(([name for name, _ in sent], got))
        for cid in creates:
            msg = response_of(k, cid)
            if msg is not None:
                paths.append(msg["result"]["path"])
                acked[msg["result"]["path"]] = Acked()

        for path in paths:
            records, bad = lenient_records(path)
            torn_seen += len(bad)
            check_acked(path, records, acked[path])

    # a fresh process resumes every file in the sessions directory, acknowledged or not
    files = [str(p) for p in session_files(isolated_home)]
    assert set(paths) <= set(files)
    fresh = start(STEPS)
    for path in files:
        r = fresh.resume(path)
        records, bad = lenient_records(path)
        messages = [rec["message"] for rec in records if rec.get("type") == "message"]
        transcript = fresh.transcript(r["id"])["messages"]
        assert len(transcript) == len(messages), path  # every whole record loads
        names = [rec.get("name") for rec in records if rec.get("type") == "session_info"]
        assert r.get("name") == (names[-1] if names else None), path
        if path in acked:
            check_final_name(names, acked[path])
        for line in bad:  # only a record cut short by a kill is unreadable
            assert line.startswith(b'{"type":"') and not line.endswith(b"}"), line[:100]
    assert fresh.close() == 0
    assert killed_mid_turn >= ROUNDS // 2
    print(f"{ROUNDS} kills ({killed_mid_turn} mid-turn), {len(files)} files, {torn_seen} torn line sightings")


def check_acked(path: str, records: list[dict], acked: Acked) -> None:
    assert records and records[0]["type"] == "session" and records[0]["version"] == 1, path
    messages = [r["message"] for r in records if r.get("type") == "message"]
    stored = [fingerprint(m) for m in messages]
    position = 0
    for message in acked.assistant:  # in the file, in the order the events came
        fp = fingerprint(message)
        assert fp in stored[position:], (path, fp[:1], fp[3])
        position = stored.index(fp, position) + 1
    tool_ids = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    ends = {r.get("toolCallId") for r in records if r.get("type") == "tool_execution_end"}
    assert acked.tool_results <= tool_ids and acked.tool_results <= ends, path
    users = {m["content"] for m in messages if m["role"] == "user"}
    assert acked.users <= users, path
    names = [r.get("name") for r in records if r.get("type") == "session_info"]
    for sent, got in acked.renames:
        assert set(sent[:got]) <= set(names), path


def check_final_name(names: list[str | None], acked: Acked) -> None:
    """Per round, the renames in the file are a prefix of those sent, at least as long as
    the acknowledged ones; the file's last name is what a resume shows."""
    for sent, got in acked.renames:
        written = [n for n in names if n in sent]
        assert written == sent[: len(written)] and len(written) >= got, (written, sent, got)


CREATE_AND_DIE = """
    import os, signal, sys
    from kward.sessions.manager import SessionManager
    sessions_dir, workspace, point = sys.argv[1:4]
    real = getattr(os, point)

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    manager = SessionManager(sessions_dir, default_workspace=workspace)
    setattr(os, point, die)
    manager.create()
"""


@pytest.mark.parametrize("point", ["write", "fsync", "link", "unlink"])
def test_sigkill_while_a_session_file_is_created_leaves_no_broken_session(tmp_path, point):
    """Creating is atomic: killed before the header is whole and durable, there is no
    session file at all; killed after, the file resumes (a stray hidden temp file is no
    session)."""
    from kward.sessions.opening import load_session

    ws = tmp_path / "ws"
    ws.mkdir()
    sessions_dir = tmp_path / "sessions"
    proc = child(CREATE_AND_DIE, str(sessions_dir), str(ws), point)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    files = list(sessions_dir.glob("*/*.jsonl"))
    assert len(files) == (1 if point == "unlink" else 0), files
    for path in files:
        session = load_session(str(path), str(ws))
        assert session.conversation == [] and session.header.cwd == str(ws.resolve())
        session.close(delete_if_unused=False)
