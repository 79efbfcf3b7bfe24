"""OpenRouter and OpenAICompatible providers against the loopback fake OpenRouter server."""

import threading
import time

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.providers.base import ModelRequest, ProviderError
from kward.providers.openai_compat import OpenAICompatibleProvider
from kward.providers.openrouter import OpenRouterProvider
from kward.providers.retry import RetryPolicy
from kward.providers.settings import ProviderSettings
from lib import fake_openrouter as fo
from lib.fake_http import served
from lib.fake_openrouter import FakeOpenRouter
from lib.fake_sink import RecordingSink
from lib.session_records import typed_all

KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"
TOOLS = [{"type": "function", "function": {"name": "shell", "description": "Run a command",
                                           "parameters": {"type": "object",
                                                          "properties": {"cmd": {"type": "string"}}}}}]
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


fake = served(FakeOpenRouter)


def make_provider(fake, key=KEY, **settings):
    settings.setdefault("retry", RetryPolicy((0.01, 0.02)))
    return OpenRouterProvider(ProviderSettings(base_url=fake.base_url, **settings), lambda: key)


@pytest.fixture
def provider(fake):
    return make_provider(fake)


def request(messages=None, effort="high", tools=TOOLS, **kw):
    return ModelRequest(instructions="You are kward.", messages=typed_all(messages or [{"role": "user", "content": "List files"}]),
                        tools=tools, model="openai/gpt-5.5", reasoning_effort=effort, **kw)


def run(provider, req=None):
    sink = RecordingSink()
    return provider.complete(req or request(), sink, CancelToken()), sink


def test_text_request_shape_and_usage_with_cost(fake, provider):
    fake.script("chat", fo.text(["Hel", "lo"]))
    resp, sink = run(provider, request(headers={"traceparent": TRACE}))
    assert sink.texts == ["Hel", "lo"] and resp.text == "Hello" and resp.provider == "OpenRouter"
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens,
            u.total_tokens, u.cost) == (194, 20, 64, 100, 8, 214, 0.00095)
    [rec] = fake.requests("chat")
    assert rec.path == "/api/v1/chat/completions"
    assert rec.headers["authorization"] == f"Bearer {KEY}" and rec.headers["x-title"] == "kward"
    assert rec.headers["traceparent"] == TRACE and rec.headers["accept"] == "text/event-stream"
    assert rec.json == {
        "model": "openai/gpt-5.5",
        "messages": [{"role": "system", "content": "You are kward."}, {"role": "user", "content": "List files"}],
        "stream": True, "tools": TOOLS, "tool_choice": "auto", "usage": {"include": True},
        "reasoning": {"effort": "high"},
    }


@pytest.mark.parametrize("knobs", [{"crlf": True}, {"split": (1, 2, 3)}, {"split": 1, "crlf": True}])
def test_crlf_and_tiny_chunks(fake, provider, knobs):
    deltas = ["H\u00e9", "llo \u2028 ", "\U0001F600!"]
    fake.script("chat", fo.text(deltas, **knobs))
    resp, sink = run(provider)
    assert sink.texts == deltas and resp.usage.cost == 0.00095


def test_reasoning_then_text(fake, provider):
    fake.script("chat", fo.reasoning_then_text(["Thinking ", "hard."], ["Done"]))
    resp, sink = run(provider)
    assert sink.events == [("reasoning", "Thinking "), ("reasoning", "hard."), ("text", "Done")]
    assert resp.message_extras["reasoning_details"] == [
        {"type": "reasoning.text", "text": "Thinking hard.", "index": 0, "format": "unknown"}]


def test_tool_calls_joined_by_index_and_history(fake, provider):
    fake.script("chat", fo.tool_call("shell", '{"cmd":"ls -la"}', "call_1", second=("read", '{"path":"a"}', "call_2")),
                fo.text(["ok"]))
    resp, sink = run(provider)
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("call_1", "shell", '{"cmd":"ls -la"}'), ("call_2", "read", '{"path":"a"}')]
    history = [{"role": "user", "content": "List files"},
               {"role": "assistant", "content": "", "model": "openai/gpt-5.5",
                "reasoning_details": [{"type": "reasoning.text", "text": "t"}],
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "shell", "arguments": '{"cmd":"ls -la"}'}}]},
               {"role": "tool", "tool_call_id": "call_1", "name": "shell", "content": "a.py"}]
    run(provider, request(history))
    assert fake.requests("chat")[1].json["messages"] == [
        {"role": "system", "content": "You are kward."},
        {"role": "user", "content": "List files"},
        {"role": "assistant", "content": "", "reasoning_details": [{"type": "reasoning.text", "text": "t"}],
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "shell", "arguments": '{"cmd":"ls -la"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
    ]


def test_reasoning_off_sends_no_reasoning(fake, provider):
    fake.script("chat", fo.text(["x"]))
    run(provider, request(effort="off", tools=[]))
    body = fake.requests()[0].json
    assert "reasoning" not in body and "tools" not in body


def test_429_then_success(fake, provider):
    fake.script("chat", fo.rate_limited("0"), fo.text(["ok"]))
    resp, sink = run(provider)
    assert resp.text == "ok"
    [info] = sink.retries
    assert (info.provider, info.model, info.attempt, info.max_attempts, info.delay_seconds) == \
        ("OpenRouter", "openai/gpt-5.5", 2, 3, 0.0)


def test_402_not_retried(fake, provider):
    fake.script("chat", fo.insufficient_credits(), fo.text(["never"]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "usage_limit" and "credits" in info.value.message
    assert len(fake.requests()) == 1


def test_401_says_check_the_key(fake, provider):
    fake.script("chat", fo.http_error(401, "User not found."))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.reason == "not_logged_in" and "OPENROUTER_API_KEY" in info.value.message


def test_mid_stream_error_chunk(fake, provider):
    fake.script("chat", fo.mid_stream_error(["Partial"], message="Provider disconnected"), fo.text(["never"]))
    sink = RecordingSink()
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), sink, CancelToken())
    assert sink.texts == ["Partial"] and "Provider disconnected" in info.value.message
    assert len(fake.requests()) == 1


def test_mid_stream_error_before_output_is_retried(fake, provider):
    fake.script("chat", fo.mid_stream_error([], done=True), fo.text(["ok"]))
    resp, sink = run(provider)
    assert resp.text == "ok" and len(sink.retries) == 1


def test_truncated_and_dropped(fake, provider):
    fake.script("chat", fo.truncated(["Cut"]), fo.dropped(["Cut"]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "stream_incomplete"
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "network"


def test_cancel_hanging_stream_then_reuse(fake, provider):
    fake.script("chat", fo.hang(["Hel"], ping=True, ping_every=0.05), fo.text(["next"]))
    sink, token, box = RecordingSink(), CancelToken(), {}
    thread = threading.Thread(target=lambda: box.setdefault("r", _capture(provider, sink, token)))
    thread.start()
    assert sink.first_text.wait(5)
    t0 = time.monotonic()
    token.cancel()
    thread.join(5)
    elapsed = box["r"][1] - t0
    print(f"cancel of a blocked OpenRouter read took {elapsed * 1000:.2f} ms")
    assert isinstance(box["r"][0], Canceled) and elapsed < 1.0
    assert run(provider)[0].text == "next"


def _capture(provider, sink, token):
    try:
        provider.complete(request(), sink, token)
        return None, time.monotonic()
    except BaseException as exc:  # noqa: BLE001
        return exc, time.monotonic()


@pytest.mark.slow
def test_idle_timeout(fake):
    provider = make_provider(fake, idle_timeout=0.3)
    fake.script("chat", fo.hang(["Hel"]))
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.kind == "timeout" and "0.3 s" in info.value.message


def test_no_key(fake):
    provider = OpenRouterProvider(ProviderSettings(base_url=fake.base_url), lambda: None)
    with pytest.raises(ProviderError) as info:
        run(provider)
    assert info.value.reason == "not_logged_in" and "OPENROUTER_API_KEY" in info.value.message
    assert fake.requests() == []


# --- OpenAI-compatible ----------------------------------------------------------------

def test_compat_without_key(fake):
    provider = OpenAICompatibleProvider(ProviderSettings(base_url=fake.base_url,
                                                         retry=RetryPolicy(())))
    fake.script("chat", fo.text(["local"], processing=False))
    resp, sink = run(provider, request(effort="low"))
    assert resp.text == "local" and resp.provider == "OpenAICompatible"
    rec = fake.requests()[0]
    assert "authorization" not in rec.headers and "x-title" not in rec.headers
    assert rec.json["reasoning_effort"] == "low" and "reasoning" not in rec.json
    assert rec.json["stream_options"] == {"include_usage": True}


def test_compat_with_key_and_missing_base_url(fake):
    provider = OpenAICompatibleProvider(ProviderSettings(base_url=fake.base_url), lambda: "local-key")
    fake.script("chat", fo.text(["x"]))
    run(provider)
    assert fake.requests()[0].headers["authorization"] == "Bearer local-key"
    with pytest.raises(ProviderError) as info:
        run(OpenAICompatibleProvider(ProviderSettings()))
    assert info.value.reason == "invalid_config" and "KWARD_OPENAI_COMPAT_BASE_URL" in info.value.message


def test_a_chunk_with_error_null_is_not_an_error(fake, provider):
    fake.script("chat", fo.stream([fo.chunk({"role": "assistant", "content": "fi"}, error=None),
                                   fo.chunk({"content": "ne"}, error=None), fo.chunk(finish="stop", error=None)]))
    resp, sink = run(provider)
    assert resp.text == "fine" and sink.retries == []


def test_tool_calls_without_a_stored_result_get_an_interrupted_result(fake, provider):
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": "shell", "arguments": "{}"}} for i in (1, 2)]
    history = [{"role": "user", "content": "x"},
               {"role": "assistant", "content": "", "tool_calls": calls},
               {"role": "tool", "tool_call_id": "call_2", "name": "shell", "content": "done"},
               {"role": "user", "content": "again"},
               {"role": "assistant", "content": "", "tool_calls": [dict(calls[0], id="call_3")]}]
    fake.script("chat", fo.text(["ok"]))
    run(provider, request(history))
    sent = [(m["role"], m.get("tool_call_id"), m.get("content")) for m in fake.requests("chat")[0].json["messages"]]
    interrupted = "Error: tool call interrupted before it returned a result."
    assert sent == [("system", None, "You are kward."), ("user", None, "x"), ("assistant", None, ""),
                    ("tool", "call_2", "done"), ("tool", "call_1", interrupted), ("user", None, "again"),
                    ("assistant", None, ""), ("tool", "call_3", interrupted)]
