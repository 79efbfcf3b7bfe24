"""OpenRouter and OpenAICompatible end to end: the real `kward rpc` against the loopback
fake OpenRouter server (which also serves as the OpenAI-compatible server)."""

import time

import pytest

from kward.resources.system_prompt import static_instructions as build_instructions
from lib import fake_openrouter as fo
from lib.fake_http import served
from lib.fake_openrouter import FakeOpenRouter
from lib.loopback_kward import (
    FILE_TEXT, TRACEPARENT, chat_schemas, create_session, run_turn, start_kward, start_turn,
)
from lib.turn_events import deltas, failed_error, finished, payload, types, wait_event, wait_turn

KEY = "sk-or-v1-e2e0123456789abcdef"
USAGE_TOKENS = {"input": 194, "output": 20, "cacheRead": 64, "cacheWrite": 100, "reasoning": 8, "total": 214}


fake = served(FakeOpenRouter)


@pytest.fixture
def kward(isolated_home, fake):
    with start_kward(isolated_home, KWARD_OPENROUTER_BASE_URL=fake.base_url, OPENROUTER_API_KEY=KEY) as client:
        client.session = create_session(client, isolated_home)
        yield client
    assert client.protocol_errors == []


def system(home):
    return {"role": "system", "content": build_instructions(home / ".kward", str(home / "ws"))}


@pytest.mark.slow
def test_text_streams_in_order_with_exact_request(kward, fake, isolated_home):
    (isolated_home / "ws" / "AGENTS.md").write_text("Be terse.\n")
    fake.script("chat", fo.text(["Hel", "lo", "!"]))
    events = run_turn(kward, kward.session["id"], "Say hello", trace={"traceparent": TRACEPARENT})
    assert finished(events) == {"status": "completed"}
    assert types(events) == ["turnQueued", "turnStarted", "assistantDelta", "assistantDelta", "assistantDelta",
                             "assistantMessage", "answer", "turnDiff", "turnFinished"]
    assert deltas(events) == ["Hel", "lo", "!"] and payload(events, "answer") == {"content": "Hello!"}
    message = payload(events, "assistantMessage")["message"]
    assert (message["provider"], message["model"]) == ("OpenRouter", "openai/gpt-5.5")

    [req] = fake.requests("chat")
    assert req.path == "/api/v1/chat/completions"
    h = req.headers
    assert h["authorization"] == f"Bearer {KEY}" and h["x-title"] == "kward"
    assert h["accept"] == "text/event-stream" and h["content-type"] == "application/json"
    assert h["traceparent"] == TRACEPARENT
    assert "chatgpt-account-id" not in h
    assert "Be terse." in system(isolated_home)["content"]
    assert req.json == {
        "model": "openai/gpt-5.5", "messages": [system(isolated_home), {"role": "user", "content": "Say hello"}],
        "stream": True, "tools": chat_schemas(kward), "tool_choice": "auto", "usage": {"include": True},
    }

    fake.script("chat", fo.text(["again"]))
    run_turn(kward, kward.session["id"], "More")
    second = fake.requests("chat")[1]
    assert "traceparent" not in second.headers
    assert second.json["messages"][1:] == [{"role": "user", "content": "Say hello"},
                                           {"role": "assistant", "content": "Hello!"},
                                           {"role": "user", "content": "More"}]


@pytest.mark.slow
def test_reasoning_deltas_and_details_replay(kward, fake):
    fake.script("chat", fo.reasoning_then_text(["Thinking ", "hard."], ["Done"]), fo.text(["ok"]))
    events = run_turn(kward, kward.session["id"], "Think")
    assert finished(events)["status"] == "completed"
    assert [t for t in types(events) if t.endswith("Delta")] == ["reasoningDelta", "reasoningDelta", "assistantDelta"]
    assert deltas(events, "reasoningDelta") == ["Thinking ", "hard."] and deltas(events) == ["Done"]

    run_turn(kward, kward.session["id"], "Next")
    assert fake.requests("chat")[1].json["messages"][1:] == [
        {"role": "user", "content": "Think"},
        {"role": "assistant", "content": "Done",
         "reasoning_details": [{"type": "reasoning.text", "text": "Thinking hard.", "index": 0, "format": "unknown"}]},
        {"role": "user", "content": "Next"}]


@pytest.mark.slow
def test_tool_call_round_trip(kward, fake, isolated_home):
    fake.script("chat", fo.tool_call("read_file", '{"path":"a.txt"}', "call_or_1", parts=4),
                fo.text(["It says hello."]))
    events = run_turn(kward, kward.session["id"], "Read a.txt")
    assert finished(events)["status"] == "completed"
    assert types(events)[2:] == ["assistantMessage", "toolCall", "toolResult", "assistantDelta",
                                 "assistantMessage", "answer", "turnDiff", "turnFinished"]
    call = payload(events, "toolCall")
    assert (call["toolCallId"], call["toolName"], call["args"]) == ("call_or_1", "read", {"path": "a.txt"})
    assert payload(events, "toolResult")["result"]["content"] == FILE_TEXT

    first, second = fake.requests("chat")
    assert second.json["tools"] == first.json["tools"] == chat_schemas(kward)
    assert second.json["messages"] == [
        system(isolated_home),
        {"role": "user", "content": "Read a.txt"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "call_or_1", "type": "function",
                         "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_or_1", "content": FILE_TEXT},
    ]


@pytest.mark.slow
def test_parallel_tool_calls_joined_by_index(kward, fake):
    fake.script("chat", fo.tool_call("read_file", '{"path":"a.txt"}', "call_a", parts=3,
                                     second=("list_directory", '{"path":"."}', "call_b")),
                fo.text(["Both done."]))
    events = run_turn(kward, kward.session["id"], "Look around")
    assert finished(events)["status"] == "completed"
    calls = [e["payload"] for e in events if e["type"] == "toolCall"]
    assert [(c["toolCallId"], c["args"]) for c in calls] == [("call_a", {"path": "a.txt"}), ("call_b", {"path": "."})]
    results = [e["payload"]["toolCallId"] for e in events if e["type"] == "toolResult"]
    assert results == ["call_a", "call_b"]
    messages = fake.requests("chat")[1].json["messages"]
    assert messages[2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "list_directory", "arguments": '{"path":"."}'}}]}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_a", "content": FILE_TEXT}
    assert messages[4]["role"] == "tool" and messages[4]["tool_call_id"] == "call_b"
    assert "a.txt" in messages[4]["content"]


@pytest.mark.slow
def test_reasoning_effort_reaches_the_body(kward, fake):
    efforts = ["minimal", "low", "medium", "high", "xhigh", "off"]
    for n, effort in enumerate(efforts):
        assert kward.request("reasoning/set", {"effort": effort})["reasoningEffort"] == effort
        fake.script("chat", fo.text(["ok"]))
        run_turn(kward, kward.session["id"])
        body = fake.requests("chat")[n].json
        if effort == "off":
            assert "reasoning" not in body
        else:
            assert body["reasoning"] == {"effort": effort}


@pytest.mark.slow
def test_429_then_success_honours_retry_after(kward, fake):
    fake.script("chat", fo.rate_limited(retry_after="0.05"), fo.text(["ok"]))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed"
    retry = payload(events, "modelRetry")
    assert {k: retry[k] for k in ("provider", "model", "attempt", "maxAttempts", "delaySeconds")} == \
        {"provider": "OpenRouter", "model": "openai/gpt-5.5", "attempt": 2, "maxAttempts": 3, "delaySeconds": 0.05}
    assert "429" in retry["error"] and "Rate limit exceeded" in retry["error"]
    first, second = fake.requests("chat")
    assert second.t - first.t >= 0.05 and second.json == first.json
    assert deltas(events) == ["ok"]


@pytest.mark.slow
def test_retry_after_beyond_the_cap_is_reported_not_waited_for(kward, fake):
    fake.script("chat", fo.rate_limited(retry_after="120"), fo.text(["must not be used"]))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert error["reason"] == "rate_limited" and "wait 120 s" in error["message"]
    assert "modelRetry" not in types(events) and len(fake.requests("chat")) == 1


@pytest.mark.slow
def test_insufficient_credits_is_not_retried(kward, fake):
    fake.script("chat", fo.insufficient_credits(), fo.text(["must not be used"]))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert "modelRetry" not in types(events) and len(fake.requests("chat")) == 1
    assert error["reason"] == "usage_limit"
    assert "402" in error["message"] and "credits" in error["message"]
    assert "switch to another provider or model" in error["message"]


@pytest.mark.slow
def test_bad_key_says_check_the_key(kward, fake):
    fake.script("chat", fo.http_error(401, "User not found."))
    error = failed_error(run_turn(kward, kward.session["id"]))
    assert error["reason"] == "not_logged_in"
    assert "OPENROUTER_API_KEY" in error["message"] and "401" in error["message"]
    assert len(fake.requests("chat")) == 1


@pytest.mark.parametrize("done", [False, True], ids=["no_done", "with_done"])
@pytest.mark.slow
def test_mid_stream_error_fails_the_turn(kward, fake, done):
    fake.script("chat", fo.mid_stream_error(["Partial"], message="Provider disconnected", done=done))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert deltas(events) == ["Partial"] and "modelRetry" not in types(events)
    assert error["reason"] == "provider_error"
    assert "Provider disconnected" in error["message"] and "try again" in error["message"].lower()
    assert len(fake.requests("chat")) == 1


@pytest.mark.parametrize("factory", [fo.truncated, fo.dropped], ids=["ended", "dropped"])
@pytest.mark.slow
def test_stream_cut_short_fails_with_a_clear_error(kward, fake, factory):
    fake.script("chat", factory(["Cut"]))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert deltas(events) == ["Cut"] and error["reason"] == "provider_error"
    assert "OpenRouter" in error["message"] and "try again" in error["message"].lower()
    assert len(fake.requests("chat")) == 1


@pytest.mark.parametrize("ping", [False, True], ids=["silent", "processing_comments"])
@pytest.mark.slow
def test_hanging_stream_is_cancelled_quickly(kward, fake, ping):
    fake.script("chat", fo.hang(["Hel"], ping=ping).with_(ping_every=0.05), fo.text(["after"]))
    turn = start_turn(kward, kward.session["id"], "hang")
    assert wait_event(kward, turn["id"], "assistantDelta")["payload"] == {"delta": "Hel"}
    t0 = time.monotonic()
    kward.request("turns/cancel", {"turnId": turn["id"]})
    events = wait_turn(kward, turn["id"], timeout=5)
    latency = time.monotonic() - t0
    print(f"cancel latency (OpenRouter, ping={ping}): {latency * 1000:.1f} ms")
    assert finished(events) == {"status": "canceled"} and "error" not in types(events)
    assert latency < 2.0
    assert fake.requests("chat")[0].disconnected.wait(5)
    assert finished(run_turn(kward, kward.session["id"], "again"))["status"] == "completed"


@pytest.mark.slow
def test_crlf_and_tiny_chunks(kward, fake):
    pieces = ["Hé", "llo ✓ ", "\u2028 naïve ", "日本"]
    fake.script("chat", fo.text(pieces, crlf=True, split=(1, 2, 3)),
                fo.tool_call("read_file", '{"path":"a.txt"}', "call_t", crlf=True, split=1), fo.text(["ok"], split=1))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed" and deltas(events) == pieces
    events = run_turn(kward, kward.session["id"])
    assert payload(events, "toolCall")["args"] == {"path": "a.txt"} and deltas(events) == ["ok"]


@pytest.mark.slow
def test_usage_and_cost_accumulate(kward, fake):
    fake.script("chat", fo.text(["a"]), fo.tool_call("read_file", '{"path":"a.txt"}'), fo.text(["b"]))
    run_turn(kward, kward.session["id"])
    stats = kward.request("runtime/stats", {"sessionId": kward.session["id"]})
    assert stats["tokens"] == USAGE_TOKENS and stats["cost"] == pytest.approx(0.00095)
    run_turn(kward, kward.session["id"])
    stats = kward.request("runtime/stats", {"sessionId": kward.session["id"]})
    assert stats["tokens"] == {k: 3 * v for k, v in USAGE_TOKENS.items()}
    assert stats["cost"] == pytest.approx(3 * 0.00095)


@pytest.mark.slow
def test_no_cost_when_usage_reports_none(kward, fake):
    usage = {k: v for k, v in fo.USAGE.items() if k not in ("cost", "cost_details")}
    fake.script("chat", fo.text(["a"], usage=usage))
    run_turn(kward, kward.session["id"])
    stats = kward.request("runtime/stats", {"sessionId": kward.session["id"]})
    assert stats["tokens"] == USAGE_TOKENS and "cost" not in stats


# --- OpenAICompatible: the same client against any base URL, key optional ------------------

def compat(home, fake, **env):
    return start_kward(home, KWARD_PROVIDER="openai-compatible", KWARD_OPENAI_COMPAT_BASE_URL=fake.base_url, **env)


@pytest.mark.slow
def test_openai_compatible_turn_without_key(isolated_home, fake):
    fake.script("chat", fo.reasoning_then_text(["Hmm"], ["Hi"]), fo.tool_call("read_file", '{"path":"a.txt"}', "c1"),
                fo.text(["done"]))
    with compat(isolated_home, fake) as c:
        s = create_session(c, isolated_home)
        c.request("reasoning/set", {"effort": "high"})
        events = run_turn(c, s["id"], "Hello", trace={"traceparent": TRACEPARENT})
        assert finished(events)["status"] == "completed"
        assert deltas(events, "reasoningDelta") == ["Hmm"] and deltas(events) == ["Hi"]
        events = run_turn(c, s["id"], "Read it")
        assert payload(events, "toolResult")["result"]["content"] == FILE_TEXT
        stats = c.request("runtime/stats", {"sessionId": s["id"]})
        assert stats["tokens"] == {k: 3 * v for k, v in USAGE_TOKENS.items()}
    first, second, third = fake.requests("chat")
    assert "authorization" not in first.headers and "x-title" not in first.headers
    assert first.headers["traceparent"] == TRACEPARENT and "traceparent" not in second.headers
    assert first.json == {"model": "default", "messages": [system(isolated_home), {"role": "user", "content": "Hello"}],
                          "stream": True, "tools": second.json["tools"], "tool_choice": "auto",
                          "stream_options": {"include_usage": True}, "reasoning_effort": "high"}
    assert third.json["messages"][-2:] == [
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file",
                                                                     "arguments": '{"path":"a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": FILE_TEXT}]


@pytest.mark.slow
def test_openai_compatible_key_model_and_models_list(isolated_home, fake):
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text(
        '{"openai_compat_api_key": "local-secret-key", "openai_compat_model": "meta-llama/llama-3.1-8b-instruct"}')
    fake.script("chat", fo.rate_limited("0.01"), fo.text(["ok"]))
    with compat(isolated_home, fake) as c:
        s = create_session(c, isolated_home)
        models = c.request("models/list")["models"]
        events = run_turn(c, s["id"])
    assert [m["id"] for m in models] == [m["id"] for m in fo.CATALOG]
    assert {m["provider"] for m in models} == {"OpenAICompatible"}
    assert [m["id"] for m in models if m["current"]] == ["meta-llama/llama-3.1-8b-instruct"]
    assert fake.requests("models")[0].headers["authorization"] == "Bearer local-secret-key"
    assert payload(events, "modelRetry")["provider"] == "OpenAICompatible"
    req = fake.requests("chat")[-1]
    assert req.headers["authorization"] == "Bearer local-secret-key"
    assert req.json["model"] == "meta-llama/llama-3.1-8b-instruct" and "reasoning_effort" not in req.json


def test_openai_compatible_without_base_url_says_what_to_set(isolated_home):
    with start_kward(isolated_home, KWARD_PROVIDER="openai-compatible") as c:
        s = create_session(c, isolated_home)
        error = failed_error(run_turn(c, s["id"]))
        assert error["reason"] == "invalid_config" and "KWARD_OPENAI_COMPAT_BASE_URL" in error["message"]
        # models/list still answers (the current model only) instead of failing with -32603
        assert [m["id"] for m in c.request("models/list")["models"]] == ["default"]
