"""Codex end to end: the real `kward rpc` against the loopback fake Codex backend.

Each test drives sessions/create + turns/start and checks both sides: the events the
client receives and the exact requests (headers and JSON body) the fake received.
"""

import time

import pytest

from kward.resources.system_prompt import static_instructions as build_instructions
from lib import fake_codex as fc
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_http import served
from lib.loopback_kward import (
    FILE_TEXT, TRACEPARENT, chat_schemas, create_session, responses_tools, run_turn, start_kward, start_turn,
)
from lib.turn_events import deltas, failed_error, finished, payload, types, wait_event, wait_turn

ACCOUNT = "acct_e2e_codex"
TOKEN = make_jwt(ACCOUNT)
USAGE_TOKENS = {"input": 900, "output": 40, "cacheRead": 256, "cacheWrite": 0, "reasoning": 12, "total": 940}


fake = served(FakeCodex)


@pytest.fixture
def kward(isolated_home, fake):
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url, OPENAI_ACCESS_TOKEN=TOKEN) as client:
        client.home = isolated_home
        client.session = create_session(client, isolated_home)
        yield client
    assert client.protocol_errors == []


def user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


@pytest.mark.slow
def test_text_streams_in_order_with_exact_request(kward, fake, isolated_home):
    (isolated_home / "ws" / "AGENTS.md").write_text("Always answer in haiku.\n")
    fake.script("responses", fc.text(["Hel", "lo", " wor", "ld"]))
    events = run_turn(kward, kward.session["id"], "Say hello", trace={"traceparent": TRACEPARENT})
    assert finished(events) == {"status": "completed"}
    assert types(events) == ["turnQueued", "turnStarted", "assistantDelta", "assistantDelta", "assistantDelta",
                             "assistantDelta", "assistantMessage", "answer", "turnDiff", "turnFinished"]
    assert deltas(events) == ["Hel", "lo", " wor", "ld"]
    assert payload(events, "answer") == {"content": "Hello world"}
    message = payload(events, "assistantMessage")["message"]
    assert (message["content"], message["provider"], message["model"]) == ("Hello world", "Codex", "gpt-5.5")

    [req] = fake.requests("responses")
    h = req.headers
    assert h["authorization"] == f"Bearer {TOKEN}"
    assert h["chatgpt-account-id"] == ACCOUNT  # from the JWT claims of OPENAI_ACCESS_TOKEN
    assert h["originator"] == "kward" and h["openai-beta"] == "responses=experimental"
    assert h["accept"] == "text/event-stream" and h["content-type"] == "application/json"
    assert h["session_id"] == kward.session["persistentId"]
    assert h["traceparent"] == TRACEPARENT
    instructions = build_instructions(isolated_home / ".kward", str(isolated_home / "ws"))
    assert instructions.startswith("You are Kward") and "Always answer in haiku." in instructions
    assert req.json == {
        "model": "gpt-5.5", "instructions": instructions, "input": [user("Say hello")],
        "tools": responses_tools(chat_schemas(kward)), "tool_choice": "auto", "parallel_tool_calls": False,
        "store": False, "stream": True, "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": kward.session["persistentId"], "reasoning": {"effort": "medium", "summary": "auto"},
    }
    assert {"read_file", "run_shell_command", "edit_file"} <= {t["name"] for t in req.json["tools"]}

    # A turn without a trace member sends no traceparent; the history carries the answer.
    fake.script("responses", fc.text(["again"]))
    assert finished(run_turn(kward, kward.session["id"], "More"))["status"] == "completed"
    second = fake.requests("responses")[1]
    assert "traceparent" not in second.headers
    assert second.json["input"] == [
        user("Say hello"),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello world"}]},
        user("More")]


@pytest.mark.slow
def test_reasoning_deltas_and_replay(kward, fake):
    fake.script("responses", fc.reasoning_then_text(["Need to ", "think."], ["Done"], encrypted="gAAAA-enc-1"),
                fc.text(["ok"]))
    events = run_turn(kward, kward.session["id"], "Think")
    assert finished(events)["status"] == "completed"
    assert [t for t in types(events) if t.endswith("Delta")] == ["reasoningDelta", "reasoningDelta", "assistantDelta"]
    assert deltas(events, "reasoningDelta") == ["Need to ", "think."] and deltas(events) == ["Done"]
    assert payload(events, "assistantMessage")["message"]["reasoning_summary"] == "Need to think."

    run_turn(kward, kward.session["id"], "Next")
    replay = fake.requests("responses")[1].json["input"]
    assert replay == [
        user("Think"),
        {"type": "reasoning", "encrypted_content": "gAAAA-enc-1",
         "summary": [{"type": "summary_text", "text": "Need to think."}]},  # replayed without its id
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done"}]},
        user("Next")]


@pytest.mark.slow
def test_tool_call_round_trip(kward, fake):
    fake.script("responses", fc.function_call("read_file", '{"path":"a.txt"}', "call_read_1"),
                fc.text(["The file says hello."]))
    events = run_turn(kward, kward.session["id"], "Read a.txt")
    assert finished(events)["status"] == "completed"
    assert types(events)[2:] == ["assistantMessage", "toolCall", "toolResult", "assistantDelta",
                                 "assistantMessage", "answer", "turnDiff", "turnFinished"]
    call = payload(events, "toolCall")
    assert (call["toolCallId"], call["toolName"], call["args"]) == ("call_read_1", "read", {"path": "a.txt"})
    result = payload(events, "toolResult")
    assert result["result"]["isError"] is False and result["result"]["content"] == FILE_TEXT

    first, second = fake.requests("responses")
    assert second.json["tools"] == first.json["tools"] == responses_tools(chat_schemas(kward))
    assert second.json["input"] == [
        user("Read a.txt"),
        {"type": "function_call", "call_id": "call_read_1", "name": "read_file", "arguments": '{"path":"a.txt"}'},
        {"type": "function_call_output", "call_id": "call_read_1", "output": FILE_TEXT},
    ]
    assert second.headers["session_id"] == first.headers["session_id"]


@pytest.mark.slow
def test_reasoning_before_a_tool_call_is_replayed_with_it(kward, fake):
    fake.script("responses",
                fc.stream([fc.created(), *fc.reasoning_events(["Look at ", "the file."], encrypted="gAAAA-enc-2"),
                           *fc.call_events("read_file", '{"path":"a.txt"}', "call_r", index=1), fc.completed()]),
                fc.text(["Read."]))
    events = run_turn(kward, kward.session["id"], "What is in a.txt?")
    assert finished(events)["status"] == "completed"
    assert types(events)[2:5] == ["reasoningDelta", "reasoningDelta", "assistantMessage"]
    assert fake.requests("responses")[1].json["input"] == [
        user("What is in a.txt?"),
        {"type": "reasoning", "encrypted_content": "gAAAA-enc-2",
         "summary": [{"type": "summary_text", "text": "Look at the file."}]},
        {"type": "function_call", "call_id": "call_r", "name": "read_file", "arguments": '{"path":"a.txt"}'},
        {"type": "function_call_output", "call_id": "call_r", "output": FILE_TEXT},
    ]


@pytest.mark.slow
def test_reasoning_effort_reaches_the_body(kward, fake):
    efforts = ["low", "medium", "high", "xhigh", "off"]
    for n, effort in enumerate(efforts):
        assert kward.request("reasoning/set", {"effort": effort})["reasoningEffort"] == effort
        fake.script("responses", fc.text(["ok"]))
        run_turn(kward, kward.session["id"])
        body = fake.requests("responses")[n].json
        if effort == "off":
            assert "reasoning" not in body and body["include"] == []
        else:
            assert body["reasoning"] == {"effort": effort, "summary": "auto"}
            assert body["include"] == ["reasoning.encrypted_content"]


@pytest.mark.slow
def test_429_then_success_honours_retry_after(kward, fake):
    fake.script("responses", fc.rate_limited(retry_after="0.05"), fc.text(["ok"]))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed"
    assert types(events)[:4] == ["turnQueued", "turnStarted", "modelRetry", "assistantDelta"]
    retry = payload(events, "modelRetry")
    assert {k: retry[k] for k in ("provider", "model", "attempt", "maxAttempts", "delaySeconds")} == \
        {"provider": "Codex", "model": "gpt-5.5", "attempt": 2, "maxAttempts": 3, "delaySeconds": 0.05}
    assert "429" in retry["error"] and "rate limit" in retry["error"].lower()
    first, second = fake.requests("responses")
    assert second.t - first.t >= 0.05  # Retry-After (not the 0.01 s configured delay) was waited for
    assert second.json == first.json


@pytest.mark.slow
def test_429_every_time_fails_rate_limited(kward, fake):
    fake.script("responses", *[fc.rate_limited(retry_after=None) for _ in range(3)])
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert error["reason"] == "rate_limited"
    assert "after 3 attempts" in error["message"] and "429" in error["message"]
    assert [e["payload"]["delaySeconds"] for e in events if e["type"] == "modelRetry"] == [0.01, 0.02]
    assert len(fake.requests("responses")) == 3


@pytest.mark.slow
def test_server_error_is_retried_with_the_configured_delay(kward, fake):
    fake.script("responses", fc.http_error(503, {"error": {"code": "server_is_overloaded", "message": "Busy."}}),
                fc.text(["ok"]))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed"
    retry = payload(events, "modelRetry")
    assert (retry["attempt"], retry["maxAttempts"], retry["delaySeconds"]) == (2, 3, 0.01)
    assert "503" in retry["error"] and "Busy." in retry["error"]


@pytest.mark.slow
def test_rejected_token_says_log_in_again(kward, fake):
    fake.script("responses", fc.http_error(401, {"detail": "Token expired"}))
    error = failed_error(run_turn(kward, kward.session["id"]))
    assert error["reason"] == "not_logged_in" and "401" in error["message"]
    assert "`kward login`" in error["message"] and "OPENAI_ACCESS_TOKEN" in error["message"]
    assert len(fake.requests("responses")) == 1


@pytest.mark.slow
def test_incomplete_response_fails_the_turn(kward, fake):
    fake.script("responses", fc.stream([fc.created(), *fc.partial_text_events(["Long"]),
                                        {"type": "response.incomplete",
                                         "response": {"status": "incomplete",
                                                      "incomplete_details": {"reason": "max_output_tokens"}}}]))
    error = failed_error(run_turn(kward, kward.session["id"]))
    assert error["reason"] == "provider_error" and "max_output_tokens" in error["message"]


def test_usage_limit_is_not_retried(kward, fake):
    fake.script("responses", fc.usage_limit(resets_at=time.time() + 2 * 3600 + 600, plan_type="plus"),
                fc.text(["must not be used"]))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert "modelRetry" not in types(events) and "assistantDelta" not in types(events)
    assert len(fake.requests("responses")) == 1
    assert error["reason"] == "usage_limit"
    message = error["message"]
    assert "usage limit" in message.lower() and "Plan: plus" in message
    assert "resets at" in message and "wait until then or switch provider" in message


@pytest.mark.parametrize("scenario", ["failed", "error_event"])
@pytest.mark.slow
def test_mid_stream_error_after_output_fails_the_turn(kward, fake, scenario):
    if scenario == "failed":
        fake.script("responses", fc.failed_mid_stream("server_error", "The upstream crashed.", ["Partial"]))
    else:
        fake.script("responses", fc.error_event("server_error", "The upstream crashed.", ["Partial"]))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert deltas(events) == ["Partial"]
    assert "modelRetry" not in types(events)  # output was shown: never retried (no duplicates)
    assert len(fake.requests("responses")) == 1
    assert error["reason"] == "provider_error"
    assert "The upstream crashed." in error["message"] and "try again" in error["message"].lower()


@pytest.mark.slow
def test_error_event_before_output_is_retried(kward, fake):
    fake.script("responses", fc.error_event("server_error", "Transient."), fc.text(["ok"]))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed"
    assert payload(events, "modelRetry")["attempt"] == 2 and deltas(events) == ["ok"]


@pytest.mark.slow
def test_context_overflow_is_reported_not_retried(kward, fake):
    fake.script("responses", fc.failed_mid_stream("context_length_exceeded",
                                                  "Your input exceeds the context window of this model.", []))
    error = failed_error(run_turn(kward, kward.session["id"]))
    assert error["reason"] == "context_overflow" and "Compact" in error["message"]
    assert len(fake.requests("responses")) == 1


@pytest.mark.parametrize("factory", [fc.truncated, fc.dropped], ids=["ended", "dropped"])
@pytest.mark.slow
def test_stream_cut_short_fails_with_a_clear_error(kward, fake, factory):
    fake.script("responses", factory(["Cut"]))
    events = run_turn(kward, kward.session["id"])
    error = failed_error(events)
    assert deltas(events) == ["Cut"] and error["reason"] == "provider_error"
    assert "Codex" in error["message"] and "try again" in error["message"].lower()
    if factory is fc.truncated:
        assert "ended before the response was complete" in error["message"]
    assert len(fake.requests("responses")) == 1


def test_stream_cut_before_output_is_retried(kward, fake):
    fake.script("responses", fc.truncated([]), fc.text(["ok"]))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed"
    assert "ended before the response was complete" in payload(events, "modelRetry")["error"]


@pytest.mark.parametrize("scenario", ["hang", "hang_before_headers"])
@pytest.mark.slow
def test_hanging_stream_is_cancelled_quickly(kward, fake, scenario):
    if scenario == "hang":
        fake.script("responses", fc.hang(["Hel"]), fc.text(["after"]))
    else:
        fake.script("responses", fc.hang_before_headers(), fc.text(["after"]))
    turn = start_turn(kward, kward.session["id"], "hang")
    if scenario == "hang":
        assert wait_event(kward, turn["id"], "assistantDelta")["payload"] == {"delta": "Hel"}
    else:
        fake.wait_requests(1, "responses")
    t0 = time.monotonic()
    kward.request("turns/cancel", {"turnId": turn["id"]})
    events = wait_turn(kward, turn["id"], timeout=5)
    latency = time.monotonic() - t0
    print(f"cancel latency ({scenario}): {latency * 1000:.1f} ms")
    assert finished(events) == {"status": "canceled"}
    assert "turnCancelRequested" in types(events) and "error" not in types(events)
    assert latency < 2.0  # the provider promises 200 ms; generous for loaded CI machines
    [req] = fake.requests("responses")
    assert req.disconnected.wait(5)  # the socket was really closed, not left hanging
    # The connection pool is still usable: the next turn works.
    assert finished(run_turn(kward, kward.session["id"], "again"))["status"] == "completed"


@pytest.mark.slow
def test_cancel_during_retry_backoff(kward, fake):
    fake.script("responses", fc.rate_limited(retry_after="30"), fc.text(["never"]))
    turn = start_turn(kward, kward.session["id"], "x")
    assert wait_event(kward, turn["id"], "modelRetry")["payload"]["delaySeconds"] == 30
    t0 = time.monotonic()
    kward.request("turns/cancel", {"turnId": turn["id"]})
    events = wait_turn(kward, turn["id"], timeout=5)
    assert finished(events) == {"status": "canceled"} and time.monotonic() - t0 < 2.0
    assert len(fake.requests("responses")) == 1


@pytest.mark.slow
def test_crlf_and_tiny_chunks(kward, fake):
    pieces = ["Hé", "llo ✓ ", "\u2028 naïve ", "日本"]
    fake.script("responses", fc.text(pieces, crlf=True, split=(1, 2, 3)),
                fc.reasoning_then_text(["Thinking ", "✓"], ["ok"], crlf=True, split=1))
    events = run_turn(kward, kward.session["id"])
    assert finished(events)["status"] == "completed"
    assert deltas(events) == pieces
    events = run_turn(kward, kward.session["id"])
    assert deltas(events, "reasoningDelta") == ["Thinking ", "✓"] and deltas(events) == ["ok"]


@pytest.mark.slow
def test_usage_accumulates_without_cost(kward, fake):
    fake.script("responses", fc.text(["a"]), fc.function_call("read_file", '{"path":"a.txt"}'), fc.text(["b"]))
    run_turn(kward, kward.session["id"])
    stats = kward.request("runtime/stats", {"sessionId": kward.session["id"]})
    assert stats["tokens"] == USAGE_TOKENS and "cost" not in stats
    run_turn(kward, kward.session["id"])  # two model calls (tool call, then text)
    stats = kward.request("runtime/stats", {"sessionId": kward.session["id"]})
    assert stats["tokens"] == {k: 3 * v for k, v in USAGE_TOKENS.items()}
    assert "cost" not in stats
    assert (stats["assistantMessages"], stats["toolCalls"], stats["toolResults"]) == (3, 1, 1)


@pytest.mark.slow
def test_a_stalled_stream_times_out_with_a_clear_error(isolated_home, fake):
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url, OPENAI_ACCESS_TOKEN=TOKEN,
                     KWARD_STREAM_IDLE_TIMEOUT="0.3") as client:
        session = create_session(client, isolated_home)
        fake.script("responses", fc.hang(["Hel"]))
        t0 = time.monotonic()
        events = run_turn(client, session["id"])
        error = failed_error(events)
        assert deltas(events) == ["Hel"] and time.monotonic() - t0 < 5
        assert "no data received for 0.3 s" in error["message"] and error["reason"] == "provider_error"


@pytest.mark.slow
def test_a_bad_idle_timeout_in_config_is_reported_not_fatal(isolated_home, fake):
    """(KWARD_STREAM_IDLE_TIMEOUT=soon stops `kward rpc` at start: tests/config/test_env_settings.py.)"""
    (isolated_home / ".kward").mkdir()
    (isolated_home / ".kward" / "config.json").write_text('{"stream_idle_timeout": "soon"}')
    with start_kward(isolated_home, KWARD_CODEX_BASE_URL=fake.base_url, OPENAI_ACCESS_TOKEN=TOKEN) as client:
        session = create_session(client, isolated_home)
        error = failed_error(run_turn(client, session["id"]))
        assert "stream_idle_timeout" in error["message"] and error["reason"] == "invalid_config"
        assert fake.requests("responses") == []
