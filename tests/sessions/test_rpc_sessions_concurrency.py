"""16 RPC sessions written concurrently: two `kward rpc` processes run
a scripted turn on 8 sessions each, all at once, while a third process that has all 16 open
renames them; every line of every file is then whole JSON, nothing is interleaved, and the
counts and order are exactly what was written.

Each turn asks the user a question (ask_user_question -> ui/question) at its start and in
its middle. The first gate lets all 16 turns be accepted before any of them streams (no
overload refusal, the most writing at once); the second makes sure the third process's
renames land in the middle of every turn.
"""

from __future__ import annotations

import pytest

from lib.rpc_client import frame
from lib.rpc_sessions import start, workspace  # noqa: F401 (fixtures)
from lib.scripts import reasoning, text, tool
from lib.session_records import messages_of, names_of, strict_records

SESSIONS_PER_PROCESS = 8
BIG = "".join(f"{i:05d} {'x' * 60}\n" for i in range(200))  # ~13 KB read_file results
QUESTION = tool("ask_user_question", questions=[{
    "question": "Go on?", "header": "Gate",
    "options": [{"label": "yes", "description": "go on"}, {"label": "no", "description": "stop"}]}])
READ = [reasoning("thinking " * 100), text("w" * 5000), tool("read_file", path="big.txt")]
STEPS = [[QUESTION], READ, READ, [text("halfway"), QUESTION], READ, READ, [text("final " + "f" * 5000)]]
ROLES = ["user"] + ["assistant", "tool"] * 6 + ["assistant"]
RENAMES_WHILE_STREAMING, RENAMES_AT_THE_GATE = 2, 3


def at_the_gate(writer, gate: int) -> list[dict]:
    """Wait until every turn of `writer` asks its `gate`-th question; those questions."""
    def asked():
        questions = [n["params"] for n in writer.notifications if n["method"] == "ui/question"]
        return questions[(gate - 1) * SESSIONS_PER_PROCESS:] if len(questions) == gate * SESSIONS_PER_PROCESS else None

    return writer.wait(asked, 30, f"gate {gate}")


def open_the_gate(writer, questions: list[dict]) -> None:
    """Answer the questions in one write, so the turns go on together."""
    requests = []
    for q in questions:
        writer._next_id += 1
        requests.append((writer._next_id, frame({"jsonrpc": "2.0", "id": writer._next_id, "method": "ui/answerQuestion",
                                                 "params": {"sessionId": q["sessionId"], "answers": ["yes"],
                                                            "questionRequestId": q["questionRequestId"]}})))
    writer.write(b"".join(f for _, f in requests))
    for request_id, _ in requests:
        assert writer.response(request_id)["result"] == {"ok": True}


@pytest.mark.slow
def test_sixteen_sessions_written_concurrently(start, workspace):
    (workspace / "big.txt").write_text(BIG)
    writers = [start(STEPS, loop=False) for _ in range(2)]
    renamer = start()
    sessions = []  # (writer, session payload, id in the renamer)
    for w, writer in enumerate(writers):
        for n in range(SESSIONS_PER_PROCESS):
            s = writer.create(name=f"s{w}.{n}")
            sessions.append((writer, s, renamer.resume(s["path"])["id"]))
    turns = [(writer, writer.start_turn(s["id"], f"go {s['name']}")) for writer, s, _ in sessions]
    expected_names = {s["path"]: [s["name"]] for _, s, _ in sessions}
    rename_ids = []

    def rename_all(label: str) -> None:
        for _, s, rid in sessions:
            name = f"{s['name']} {label}"
            expected_names[s["path"]].append(name)
            rename_ids.append(renamer.send("sessions/rename", {"sessionId": rid, "name": name}))

    gate1 = [at_the_gate(writer, 1) for writer in writers]
    for writer, questions in zip(writers, gate1):
        open_the_gate(writer, questions)  # all 16 turns stream from here on
    for round_no in range(RENAMES_WHILE_STREAMING):
        rename_all(f"streaming {round_no}")
    gate2 = [at_the_gate(writer, 2) for writer in writers]  # every turn stopped halfway
    for round_no in range(RENAMES_AT_THE_GATE):
        rename_all(f"at the gate {round_no}")
    for rid in rename_ids:
        assert "result" in renamer.response(rid, timeout=30)
    for writer, questions in zip(writers, gate2):
        open_the_gate(writer, questions)
    for writer, turn in turns:
        assert writer.outcome(turn["id"], timeout=60) == "completed"

    for writer, s, rid in sessions:
        records = strict_records(s["path"])  # every line whole JSON, newline-terminated
        assert records[0]["type"] == "session" and records[0]["id"] == s["persistentId"]
        kinds: dict[str, int] = {}
        for r in records:
            kinds[r["type"]] = kinds.get(r["type"], 0) + 1
        assert kinds == {"session": 1, "message": len(ROLES), "tool_execution_end": 6,
                         "session_info": 1 + RENAMES_WHILE_STREAMING + RENAMES_AT_THE_GATE}, s["path"]
        messages = messages_of(records)
        assert [m["role"] for m in messages] == ROLES
        assert messages[0]["content"] == f"go {s['name']}"
        calls, results = messages[1:-1:2], messages[2::2]
        for call, result in zip(calls, results):
            assert result["tool_call_id"] == call["tool_calls"][0]["id"]
        assert [r["name"] for r in results] == ["ask_user_question", "read_file", "read_file"] * 2
        assert [r["content"] for r in results if r["name"] == "read_file"] == [BIG] * 4
        assert [c["content"] for c in calls] == ["", "w" * 5000, "w" * 5000, "halfway", "w" * 5000, "w" * 5000]
        assert messages[-1]["content"] == "final " + "f" * 5000
        ends = [r["toolCallId"] for r in records if r["type"] == "tool_execution_end"]
        assert ends == [m["tool_call_id"] for m in results]
        assert names_of(records) == expected_names[s["path"]]  # the renames, in the order sent
        types = [r["type"] for r in records]
        assert "session_info" in types[types.index("message"):len(types) - types[::-1].index("message")]
        # both processes' views agree with the file
        final = expected_names[s["path"]][-1]
        assert writer.transcript(s["id"])["session"]["name"] == final
        view = renamer.transcript(rid)
        assert view["session"]["name"] == final and len(view["messages"]) == len(ROLES)
        assert view["messages"] == writer.transcript(s["id"])["messages"]
