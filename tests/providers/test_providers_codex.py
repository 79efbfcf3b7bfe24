"""The Codex provider against the loopback fake Codex server (every scenario of tests/lib/fake_codex.py)."""

import json
import threading
import time

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.providers.base import ModelRequest, ProviderError
from kward.providers.codex import CodexProvider
from kward.providers.retry import RetryPolicy
from kward.providers.settings import ProviderSettings
from lib import fake_codex as fc
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_http import served
from lib.fake_sink import RecordingSink
from lib.session_records import typed_all

TOKEN = make_jwt("acct_test")
TOOLS = [{"type": "function", "function": {"name": "shell", "description": "Run a command",
                                           "parameters": {"type": "object",
                                                          "properties": {"cmd": {"type": "string"}},
                                                          "required": ["cmd"]}}}]
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


fake = served(FakeCodex)


def make_provider(fake, creds=None, **settings):
    settings.setdefault("retry", RetryPolicy((0.01, 0.02)))
    return CodexProvider(ProviderSettings(base_url=fake.base_url, **settings),
                         creds or (lambda: (TOKEN, None)))


@pytest.fixture
def provider(fake):
    return make_provider(fake)


def request(messages=None, effort="medium", **kw):
    return ModelRequest(instructions="You are kward.", messages=typed_all(messages or [{"role": "user", "content": "List files"}]),
                        tools=TOOLS, model="gpt-5.5", reasoning_effort=effort, **kw)


def run(provider, req=None, cancel=None):
    sink = RecordingSink()
    return provider.complete(req or request(), sink, cancel or CancelToken()), sink


def test_text_request_shape_and_usage(fake, provider):
    fake.script("responses", fc.text(["Hel", "lo"]))
    resp, sink = run(provider, request(headers={"traceparent": TRACE}, session_id="sess-1"))
    assert sink.texts == ["Hel", "lo"] and resp.text == "Hello" and resp.tool_calls == []
    assert (resp.provider, resp.model) == ("Codex", "gpt-5.5")
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens, u.total_tokens, u.cost) == \
        (900, 40, 256, 12, 940, None)
    [rec] = fake.requests("responses")
    assert rec.path == "/backend-api/codex/responses"
    h = rec.headers
    assert h["authorization"] == f"Bearer {TOKEN}"
    assert h["chatgpt-account-id"] == "acct_test"
    assert h["originator"] == "kward" and h["openai-beta"] == "responses=experimental"
    assert h["accept"] == "text/event-stream" and h["content-type"] == "application/json"
    assert h["session_id"] == "sess-1" and h["traceparent"] == TRACE
    assert rec.json == {
        "model": "gpt-5.5", "instructions": "You are kward.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files"}]}],
        "tools": [{"type": "function", "name": "shell", "description": "Run a command",
                   "parameters": TOOLS[0]["function"]["parameters"], "strict": False}],
        "tool_choice": "auto", "parallel_tool_calls": False, "store": False, "stream": True,
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "sess-1",
        "reasoning": {"effort": "medium", "summary": "auto"},
    }


@pytest.mark.parametrize("knobs", [{"crlf": True}, {"split": (1, 2, 3)}, {"split": 1, "crlf": True}])
def test_crlf_and_tiny_chunks_give_identical_deltas(fake, provider, knobs):
    deltas = ["H\u00e9", "llo \u2028 ", "\U0001F600!"]
    fake.script("responses", fc.text(deltas, **knobs))
    resp, sink = run(provider)
    assert sink.texts == deltas and resp.text == "".join(deltas)


def test_reasoning_then_text_and_replay(fake, provider):
    fake.script("responses", fc.reasoning_then_text(["Need to ", "list."], ["Done"]), fc.text(["ok"]))
    resp, sink = run(provider)
    assert sink.events == [("reasoning", "Need to "), ("reasoning", "list."), ("text", "Done")]
    assert resp.reasoning == "Need to list."
    items = resp.message_extras["reasoning_items"]
    assert items == [{"type": "reasoning", "encrypted_content": "gAAAA-encrypted-test",
                      "summary": [{"type": "summary_text", "text": "Need to list."}]}]
    history = [{"role": "user", "content": "List files"},
               {"role": "assistant", "content": "Done", "reasoning_items": items, "model": "gpt-5.5"},
               {"role": "user", "content": "again"}]
    run(provider, request(history))
    sent = fake.requests("responses")[1].json["input"]
    assert sent[1] == items[0] and "id" not in sent[1]
    assert sent[2] == {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done"}]}
    # reasoning from another model is not replayed
    history[1]["model"] = "gpt-5.4"
    fake.script("responses", fc.text(["ok"]))
    run(provider, request(history))
    assert all(i["type"] != "reasoning" for i in fake.requests("responses")[2].json["input"])


def test_function_call_and_history_after_tool_call(fake, provider):
    fake.script("responses", fc.function_call("shell", '{"cmd":"ls -la"}', "call_9"), fc.text(["two files"]))
    resp, sink = run(provider)
    assert sink.texts == [] and resp.text == ""
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [("call_9", "shell", '{"cmd":"ls -la"}')]
    history = [{"role": "user", "content": "List files"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "call_9", "type": "function", "function": {"name": "shell", "arguments": '{"cmd":"ls -la"}'}}]},
               {"role": "tool", "tool_call_id": "call_9", "name": "shell", "content": "a.py\nb.py"}]
    resp, _ = run(provider, request(history))
    assert resp.text == "two files"
    assert fake.requests("responses")[1].json["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files"}]},
        {"type": "function_call", "call_id": "call_9", "name": "shell", "arguments": '{"cmd":"ls -la"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "a.py\nb.py"},
    ]


def test_reasoning_off_and_account_from_credentials(fake):
    provider = make_provider(fake, lambda: (TOKEN, "acct_explicit"))
    fake.script("responses", fc.text(["x"]))
    run(provider, request(effort="off"))
    rec = fake.requests("responses")[0]
    assert "reasoning" not in rec.json and rec.json["include"] == []
    assert rec.headers["chatgpt-account-id"] == "acct_explicit"


def test_credentials_without_an_account_use_the_jwt_account(fake):
    provider = make_provider(fake, lambda: (make_jwt("acct_from_env"), None))  # as OPENAI_ACCESS_TOKEN gives it
    fake.script("responses", fc.text(["x"]))
    run(provider)
    assert fake.requests()[0].headers["chatgpt-account-id"] == "acct_from_env"


def test_not_logged_in(fake):
    provider = make_provider(fake, lambda: None)
    with pytest.raises(ProviderError) as info:
        run(provider)
    err = info.value
    assert err.reason == "not_logged_in" and err.kind == "auth"
    assert "`kward login`" in err.message and "OPENAI_ACCESS_TOKEN" in err.message
    assert fake.requests() == []


def test_429_then_success_honours_retry_after(fake, provider):
    fake.script("responses", fc.rate_limited(retry_after="0.2"), fc.text(["ok"]))
    t0 = time.monotonic()
    resp, sink = run(provider)
    assert resp.text == "ok" and time.monotonic() - t0 >= 0.2
    [info] = sink.retries
    assert (info.provider, info.model, info.attempt, info.max_attempts, info.delay_seconds) == \
        ("Codex", "gpt-5.5", 2, 3, 0.2)
    assert "rate limiting" in info.error and "HTTP 429" in info.error
    assert len(fake.requests("responses")) == 2


def test_usage_limit_is_not_retried(fake, provider):
    resets = time.time() + 2 * 3600 + 120
    fake.script("responses", fc.usage_limit(resets_at=resets, plan_type="plus"), fc.text(["never"]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    err = info.value
    assert err.kind == "usage_limit" and not err.retryable
    assert "resets at" in err.message and "Plan: plus" in err.message and "(in about 2 h" in err.message
    assert err.data["resetsAt"] == int(resets)
    assert len(fake.requests("responses")) == 1


def test_server_errors_retried_then_final_message(fake, provider):
    fake.script("responses", *[fc.http_error(503, {"error": {"message": "overloaded"}})] * 3)
    sink = RecordingSink()
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), sink, CancelToken())
    assert info.value.message.startswith("Codex request failed after 3 attempts: Codex had a server error (HTTP 503)")
    assert [r.attempt for r in sink.retries] == [2, 3]
    assert [r.delay_seconds for r in sink.retries] == [0.01, 0.02]


def test_bad_request_detail_not_retried(fake, provider):
    fake.script("responses", fc.http_error(400, {"detail": "Store must be set to false"}))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "bad_request" and "Store must be set to false" in info.value.message
    assert len(fake.requests()) == 1


def test_401_refreshes_once_then_succeeds(fake):
    tokens = [make_jwt("acct_test", email="old@x"), make_jwt("acct_test", email="new@x")]
    refreshed = []

    def refresh():
        refreshed.append(tokens.pop(0))
        return True

    provider = CodexProvider(ProviderSettings(base_url=fake.base_url, retry=RetryPolicy(())),
                             lambda: (tokens[0], None), refresh=refresh)
    fake.script("responses", fc.http_error(401, {"detail": "expired"}), fc.text(["ok"]))
    resp, _ = run(provider)
    assert resp.text == "ok" and len(refreshed) == 1
    auths = [r.headers["authorization"] for r in fake.requests()]
    assert auths[0] != auths[1]


def test_401_without_refresh_says_log_in(fake, provider):
    fake.script("responses", fc.http_error(401, {"detail": "Unauthorized"}))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.reason == "not_logged_in" and "OPENAI_ACCESS_TOKEN" in info.value.message


def test_failed_mid_stream_after_output_is_final(fake, provider):
    fake.script("responses", fc.failed_mid_stream("server_error", "boom", ["Partial"]), fc.text(["never"]))
    sink = RecordingSink()
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), sink, CancelToken())
    assert sink.texts == ["Partial"] and "boom" in info.value.message
    assert len(fake.requests()) == 1 and sink.retries == []


def test_error_event_before_output_is_retried(fake, provider):
    fake.script("responses", fc.error_event("rate_limit_exceeded", "Please try again in 30ms."), fc.text(["ok"]))
    resp, sink = run(provider)
    assert resp.text == "ok" and sink.retries[0].delay_seconds == pytest.approx(0.03)


def test_context_overflow_is_not_retried(fake, provider):
    fake.script("responses", fc.failed_mid_stream("context_length_exceeded",
                                                  "Your input exceeds the context window of this model.", []))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "context_overflow" and "Compact" in info.value.message
    assert len(fake.requests()) == 1


def test_truncated_stream_is_an_error(fake, provider):
    fake.script("responses", fc.truncated(["Cut"]))
    sink = RecordingSink()
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), sink, CancelToken())
    assert info.value.kind == "stream_incomplete" and sink.texts == ["Cut"]
    assert len(fake.requests()) == 1  # output was shown: not retried


def test_truncated_before_output_is_retried(fake, provider):
    fake.script("responses", fc.truncated([]), fc.text(["ok"]))
    resp, sink = run(provider)
    assert resp.text == "ok" and len(sink.retries) == 1


def test_dropped_connection(fake, provider):
    fake.script("responses", fc.dropped(["Cut"]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "network"


def cancel_while_running(provider, fake, wait_for_delta=True):
    sink, token, result = RecordingSink(), CancelToken(), {}

    def worker():
        try:
            provider.complete(request(), sink, token)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            result["error"] = exc
        result["t"] = time.monotonic()

    thread = threading.Thread(target=worker)
    thread.start()
    if wait_for_delta:
        assert sink.first_text.wait(5)
    else:
        fake.wait_requests(1)
    t0 = time.monotonic()
    token.cancel()
    thread.join(5)
    assert not thread.is_alive()
    return result, (result["t"] - t0)


def test_cancel_hanging_stream_then_reuse(fake, provider, record_property):
    fake.script("responses", fc.hang(["Hel"]), fc.text(["next"]))
    result, elapsed = cancel_while_running(provider, fake)
    print(f"cancel of a blocked Codex read took {elapsed * 1000:.2f} ms")
    record_property("cancel_ms", round(elapsed * 1000, 2))
    assert isinstance(result["error"], Canceled) and elapsed < 1.0
    assert fake.requests()[0].disconnected.wait(2)
    resp, _ = run(provider)
    assert resp.text == "next"


def test_cancel_before_headers(fake, provider):
    fake.script("responses", fc.hang_before_headers(), fc.text(["next"]))
    result, elapsed = cancel_while_running(provider, fake, wait_for_delta=False)
    print(f"cancel while waiting for headers took {elapsed * 1000:.2f} ms")
    assert isinstance(result["error"], Canceled) and elapsed < 1.0
    assert run(provider)[0].text == "next"


def test_cancel_during_retry_wait(fake):
    provider = make_provider(fake, retry=RetryPolicy((30.0,)))
    fake.script("responses", fc.http_error(500, {"error": {"message": "x"}}))
    sink, token = RecordingSink(), CancelToken()
    timer = threading.Timer(0.05, token.cancel)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(Canceled):
        provider.complete(request(), sink, token)
    assert time.monotonic() - t0 < 2 and len(sink.retries) == 1


@pytest.mark.slow
def test_idle_timeout(fake):
    provider = make_provider(fake, idle_timeout=0.3)
    fake.script("responses", fc.hang(["Hel"]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "timeout"
    assert "no data received for 0.3 s" in info.value.message


def test_connections_are_reused(fake, provider):
    fake.script("responses", fc.text(["a"]), fc.text(["b"]), fc.text(["c"]))
    for _ in range(3):
        run(provider)
    ports = {r.client_port for r in fake.requests()}
    assert len(ports) == 1


def test_image_and_compaction_history(fake, provider):
    history = [{"role": "compactionSummary", "summary": "Earlier: we listed files."},
               {"role": "user", "content": [{"type": "text", "text": "see"},
                                            {"type": "image", "data": "QUJD", "mimeType": "image/png"}]},
               {"role": "system", "content": "Extra rule."}]
    fake.script("responses", fc.text(["ok"]))
    run(provider, request(history))
    body = fake.requests()[0].json
    assert body["instructions"] == "You are kward.\n\nExtra rule."
    assert body["input"] == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Earlier: we listed files."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "see"},
                                                        {"type": "input_image", "image_url": "data:image/png;base64,QUJD"}]},
    ]
    assert json.dumps(body)  # serializable


def test_incomplete_response_is_an_error(fake, provider):
    incomplete = {"type": "response.incomplete",
                  "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}
    fake.script("responses", fc.stream([fc.created(), incomplete]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert "max_output_tokens" in info.value.message and not info.value.retryable


def test_message_without_deltas_is_recovered_and_unknown_events_ignored(fake, provider):
    events = fc.text_events(["whole"])
    events = [e for e in events if e["type"] != "response.output_text.delta"]
    fake.script("responses", fc.stream([fc.created(), {"type": "codex.rate_limits", "x": 1}, *events, fc.completed()]))
    resp, sink = run(provider)
    assert sink.texts == ["whole"] and resp.text == "whole"


def test_foreign_call_ids_are_normalized_consistently(fake, provider):
    history = [{"role": "user", "content": "x"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "toolu_01:abc/def", "type": "function", "function": {"name": "shell", "arguments": {"cmd": "ls"}}}]},
               {"role": "tool", "tool_call_id": "toolu_01:abc/def", "content": [{"type": "text", "text": "out"}]}]
    fake.script("responses", fc.text(["ok"]))
    run(provider, request(history))
    items = fake.requests()[0].json["input"]
    assert items[1] == {"type": "function_call", "call_id": "toolu_01_abc_def", "name": "shell",
                        "arguments": '{"cmd": "ls"}'}
    assert items[2] == {"type": "function_call_output", "call_id": "toolu_01_abc_def", "output": "out"}


def test_tool_calls_without_a_stored_result_get_an_interrupted_result(fake, provider):
    """kward died after storing the calls but before their results: the request must still
    pair every function_call with an output, or the API answers 400 on every turn."""
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": "shell", "arguments": "{}"}} for i in (1, 2)]
    history = [{"role": "user", "content": "x"},
               {"role": "assistant", "content": "", "tool_calls": calls},
               {"role": "tool", "tool_call_id": "call_1", "name": "shell", "content": "done"},
               {"role": "user", "content": "still there?"},
               {"role": "assistant", "content": "", "tool_calls": [dict(calls[0], id="call_3")]}]
    fake.script("responses", fc.text(["ok"]))
    run(provider, request(history))
    items = [(i["type"], i.get("call_id"), i.get("output")) for i in fake.requests("responses")[0].json["input"]]
    interrupted = "Error: tool call interrupted before it returned a result."
    assert items == [("message", None, None),
                     ("function_call", "call_1", None), ("function_call", "call_2", None),
                     ("function_call_output", "call_1", "done"), ("function_call_output", "call_2", interrupted),
                     ("message", None, None),
                     ("function_call", "call_3", None), ("function_call_output", "call_3", interrupted)]


def test_deltas_without_item_ids_are_not_delivered_twice(fake, provider):
    events = [{k: v for k, v in e.items() if k not in ("item_id", "output_index")} if e["type"].endswith(".delta")
              else e for e in fc.text_events(["Hel", "lo"])]
    fake.script("responses", fc.stream([fc.created(), *events, fc.completed()]))
    resp, sink = run(provider)
    assert sink.texts == ["Hel", "lo"] and resp.text == "Hello"
    by_index = [dict(e, item_id="other") if e["type"].endswith(".delta") else e for e in fc.text_events(["Hi"])]
    fake.script("responses", fc.stream([fc.created(), *by_index, fc.completed()]))
    resp, sink = run(provider)
    assert sink.texts == ["Hi"] and resp.text == "Hi"


@pytest.mark.parametrize("limit", ["time", "bytes"])
@pytest.mark.slow
def test_draining_after_the_final_event_is_bounded(fake, provider, monkeypatch, limit):
    """A server that keeps trickling bytes after response.completed cannot hold the turn."""
    from kward.providers import streaming

    if limit == "time":
        monkeypatch.setattr(streaming, "DRAIN_TIMEOUT", 0.3)
        ping = b": still here\n\n"
    else:
        monkeypatch.setattr(streaming, "DRAIN_TIMEOUT", 60.0)
        monkeypatch.setattr(streaming, "DRAIN_MAX_BYTES", 1000)
        ping = b": " + b"x" * 400 + b"\n\n"
    fake.script("responses", fc.text(["done"]).with_(end="hang", ping=ping, ping_every=0.02), fc.text(["next"]))
    result = {}
    worker = threading.Thread(target=lambda: result.update(text=run(provider)[0].text))
    worker.start()
    worker.join(20)
    assert not worker.is_alive() and result == {"text": "done"}
    assert fake.requests()[0].disconnected.wait(5)  # the connection was dropped, not pooled
    assert run(provider)[0].text == "next"


def test_an_oversized_stream_line_is_a_retryable_error(fake, provider, monkeypatch):
    from kward.providers import streaming
    from kward.providers.sse import SSEParser

    monkeypatch.setattr(streaming, "SSEParser", lambda: SSEParser(max_line=4096))
    fake.script("responses", fc.stream([fc.created()]).with_(pieces=[b"data: " + b"x" * 10000]), fc.text(["ok"]))
    resp, sink = run(provider)
    assert resp.text == "ok" and len(sink.retries) == 1
    assert "malformed stream (a line longer than 4096 bytes)" in sink.retries[0].error
