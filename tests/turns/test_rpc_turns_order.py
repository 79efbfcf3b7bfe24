"""Inputs never overtake each other: with a turn running and one queued behind it, a later
turns/start (steer, or no streamingBehavior on a steering provider) queues behind the
queued turn instead of being steered into the running one, so the inputs are stored and
sent to the model in the order they were given. One worker (`KWARD_RPC_WORKERS=1`), the
real `kward rpc` against the loopback fake Codex backend (a steering provider); the
running turn is held by a pending ui/question, never by timing."""

import json

from lib import fake_codex as fc
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_http import served
from lib.loopback_kward import create_session, start_kward, start_turn
from lib.turn_events import finished, wait_turn

TOKEN = make_jwt("acct_order")
QUESTION = {"question": "Which color?", "header": "Color",
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}

fake = served(FakeCodex)


def user_texts(request):
    """The user inputs a Responses request carried, in order."""
    return [part["text"] for item in request.json["input"]
            if item.get("type") == "message" and item.get("role") == "user"
            for part in item["content"] if part.get("type") == "input_text"]


def test_a_later_input_queues_behind_a_queued_turn_instead_of_steering_ahead_of_it(isolated_home, fake):
    fake.script("responses", fc.function_call("ask_user_question", json.dumps({"questions": [QUESTION]}), "call_ask"),
                fc.text(["zero done"]), fc.text(["one done"]), fc.text(["two done"]), fc.text(["three done"]))
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url, OPENAI_ACCESS_TOKEN=TOKEN,
                     KWARD_RPC_WORKERS="1") as client:
        sid = create_session(client, isolated_home)["id"]
        t0 = start_turn(client, sid, "input 0")
        q = client.wait_notification(lambda n: n["method"] == "ui/question", 10, "ui/question")["params"]
        t1 = client.request("turns/start", {"sessionId": sid, "input": "input 1", "streamingBehavior": "followUp"})
        t2 = client.request("turns/start", {"sessionId": sid, "input": "input 2"})  # omitted: would steer
        t3 = client.request("turns/start", {"sessionId": sid, "input": "input 3", "streamingBehavior": "steer"})
        assert len({t0["id"], t1["id"], t2["id"], t3["id"]}) == 4  # none joined the running turn
        assert t1["status"] == t2["status"] == t3["status"] == "queued"
        client.request("ui/answerQuestion", {"sessionId": sid, "questionRequestId": q["questionRequestId"],
                                             "answers": ["Red"]})
        for turn in (t0, t1, t2, t3):
            assert finished(wait_turn(client, turn["id"], 20))["status"] == "completed"
        stored = [part["text"] for m in client.request("sessions/transcript", {"sessionId": sid})["messages"]
                  if m["role"] == "user" for part in m["content"]]
        assert stored == ["input 0", "input 1", "input 2", "input 3"]
        sent = [user_texts(r) for r in fake.requests("responses")]
        assert sent == [["input 0"], ["input 0"], ["input 0", "input 1"], ["input 0", "input 1", "input 2"],
                        ["input 0", "input 1", "input 2", "input 3"]]
    assert client.protocol_errors == []
