"""runtime/state, runtime/stats, tools/list and the turn capabilities over the real
`kward rpc` with the Scripted provider."""

import json

import pytest

from lib.scripted_kward import kward  # noqa: F401
from lib.scripts import text, tool
from lib.turn_events import check_turn_events

QUESTION = {"question": "Go on?", "header": "Go",
            "options": [{"label": "Yes", "description": "go"}, {"label": "No", "description": "stop"}]}
TOOL_NAMES = ["list_directory", "read_file", "write_file", "edit_file", "run_shell_command", "search_files",
              "ask_user_question", "web_search"]


def test_tools_list_returns_every_schema(kward):
    k = kward()
    tools = k.request("tools/list")["tools"]
    assert [t["function"]["name"] for t in tools] == TOOL_NAMES
    for t in tools:
        assert t["type"] == "function" and set(t["function"]) == {"name", "description", "parameters"}
        params = t["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"]) and t["function"]["description"]
    schema = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert schema["read_file"]["required"] == ["path"]
    assert schema["read_file"]["properties"]["offset"]["type"] == "integer"
    assert schema["read_file"]["properties"]["limit"]["type"] == "integer"
    assert schema["write_file"]["required"] == ["content", "path"]
    edit_item = schema["edit_file"]["properties"]["edits"]["items"]
    assert edit_item["required"] == ["new_text", "old_text"] and schema["edit_file"]["required"] == ["edits", "path"]
    assert schema["run_shell_command"]["required"] == ["command"]
    assert schema["run_shell_command"]["properties"]["timeout_seconds"]["type"] == "integer"
    assert schema["search_files"]["required"] == ["pattern"]
    assert set(schema["search_files"]["properties"]) == {"pattern", "path", "glob", "case_sensitive", "max_results"}
    questions = schema["ask_user_question"]["properties"]["questions"]
    assert (questions["minItems"], questions["maxItems"]) == (1, 4)
    assert (questions["items"]["properties"]["options"]["minItems"],
            questions["items"]["properties"]["options"]["maxItems"]) == (2, 4)


def test_capabilities_report_native_steering_for_the_scripted_provider(kward):
    caps = kward().request("initialize")["capabilities"]
    assert caps["turns"]["busyInput"]["steer"] == "native"
    assert caps["turns"]["busyInput"]["defaultWhenBusy"] == "steer"
    assert caps["turns"]["eventReplay"]["limit"] == 1000
    assert caps["extensionUi"]["question"] == {"supported": True, "notification": "ui/question",
                                               "method": "ui/answerQuestion", "maxQuestions": 4,
                                               "multiSelect": False, "preview": False}


@pytest.mark.slow
def test_runtime_state_of_a_fresh_and_of_a_busy_session(kward):
    k = kward([[tool("ask_user_question", {"questions": [QUESTION]})], [text("bye")]], model="fake-model-2")
    s = k.session()
    sid = s["id"]
    state = k.request("runtime/state", {"sessionId": sid})
    assert state["model"]["provider"] == "Scripted" and state["model"]["id"] == "fake-model-2"
    assert state["model"]["contextWindow"] == 200_000 and state["model"]["current"] is True
    assert state["sessionFile"] == s["path"] and state["sessionId"] == s["persistentId"]
    assert state["rpcSessionId"] == sid and state["persistentSessionId"] == s["persistentId"]
    assert state["sessionName"] is None and state["workspaceRoot"] == s["workspaceRoot"]
    assert state["isStreaming"] is False and state["pendingMessageCount"] == 0 and state["messageCount"] == 0
    assert state["steeringMode"] == "in-flight" and state["followUpMode"] == "one-at-a-time"
    assert state["defaultProvider"] == "Scripted" and state["defaultModel"] == "Scripted/fake-model-2"
    assert state["thinkingLevel"] == "off" and state["isCompacting"] is False and state["transport"] == "kward-rpc"

    turn = k.start(sid, "ask me")
    q = k.wait_notification(lambda n: n["method"] == "ui/question")["params"]
    busy = k.request("runtime/state", {"sessionId": sid})
    assert busy["isStreaming"] is True and busy["sessionName"] == "ask me"
    assert busy["messageCount"] == 2  # the user message and the assistant's tool call
    k.request("ui/answerQuestion", {"sessionId": sid, "questionRequestId": q["questionRequestId"],
                                    "answers": ["Yes"]})
    check_turn_events(k.finish(turn["id"]), "completed")
    # as soon as turnFinished arrived the session is idle again
    idle = k.request("runtime/state", {"sessionId": sid})
    assert idle["isStreaming"] is False and idle["pendingMessageCount"] == 0 and idle["messageCount"] == 4


def test_runtime_stats_counts_tokens_cost_and_context_usage(kward):
    k = kward([
        {"events": [text("Listing."), tool("list_directory", {"path": "."}), tool("read_file", {"path": "a.txt"})],
         "usage": {"input_tokens": 1000, "output_tokens": 20, "reasoning_tokens": 5, "cost": 0.25}},
        {"events": [text("Two files.")], "usage": {"input_tokens": 1200, "output_tokens": 10,
                                                   "cache_read_tokens": 800, "total_tokens": 1210, "cost": 0.5}},
        {"events": [text("Still two.")], "usage": {"input_tokens": 1300, "output_tokens": 5, "cost": 0.125}},
    ], files={"a.txt": "alpha\n", "b.txt": "beta\n"})
    s = k.session()
    sid = s["id"]
    fresh = k.request("runtime/stats", {"sessionId": sid})
    assert fresh["userMessages"] == fresh["assistantMessages"] == fresh["totalMessages"] == 0
    assert fresh["toolCalls"] == fresh["toolResults"] == 0
    assert "contextUsage" not in fresh and "cost" not in fresh
    assert fresh["rpcSessionId"] == sid and fresh["sessionFile"] == s["path"]
    assert fresh["persistentSessionId"] == fresh["sessionId"] == s["persistentId"]

    check_turn_events(k.run(sid, "what is here?")[1], "completed")
    check_turn_events(k.run(sid, "and now?")[1], "completed")
    stats = k.request("runtime/stats", {"sessionId": sid})
    assert {key: stats[key] for key in ("userMessages", "assistantMessages", "toolCalls", "toolResults",
                                        "totalMessages")} == {
        "userMessages": 2, "assistantMessages": 3, "toolCalls": 2, "toolResults": 2, "totalMessages": 7}
    assert stats["tokens"] == {"input": 3500, "output": 35, "cacheRead": 800, "cacheWrite": 0, "reasoning": 5,
                               "total": 1020 + 1210 + 1305}
    assert stats["cost"] == 0.875
    usage = stats["contextUsage"]
    assert usage["estimated"] is True and usage["contextWindow"] == 200_000
    assert usage["tokens"] == 1305  # the last reported total; nothing was added after it
    assert usage["percent"] == round(100 * 1305 / 200_000, 1)
    assert stats["sessionName"] == "what is here?"


def test_runtime_state_survives_an_unusable_script(kward):
    k = kward(raw="{not json")
    session = k.session()
    state = k.request("runtime/state", {"sessionId": session["id"]})
    assert state["rpcSessionId"] == session["id"] and state["model"] is None
    assert state["providerError"]["reason"] == "invalid_config" and "not valid JSON" in state["providerError"]["message"]
    stats = k.request("runtime/stats", {"sessionId": session["id"]})
    assert stats["totalMessages"] == 0 and "contextUsage" not in stats


def test_estimated_usage_is_marked_estimated(kward):
    k = kward([[text("counted by kward")], {"events": [text("reported")], "usage": {"input_tokens": 7, "output_tokens": 2}}],
              loop=False)
    session = k.session()
    k.run(session["id"])
    k.run(session["id"])
    lines = [json.loads(line) for line in open(session["path"])]
    recorded = [r["message"]["usage"] for r in lines if r.get("type") == "message" and r["message"]["role"] == "assistant"]
    assert [u["estimated"] for u in recorded] == [True, False]
    assert recorded[1]["input_tokens"] == 7 and recorded[1]["total_tokens"] == 9
