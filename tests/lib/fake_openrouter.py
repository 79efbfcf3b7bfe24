"""A fake OpenRouter API (streamed chat completions) on 127.0.0.1, for tests.

Routes (paths mirror production; the same paths serve OpenAI-compatible tests):

- `POST /api/v1/chat/completions` -> route "chat" (scripted scenarios below)
- `GET  /api/v1/models`           -> route "models" (default: `{"data": self.catalog}`)
- `GET  /api/v1/models/user`      -> route "models_user" (default: 401 without a Bearer
  key, else `{"data": self.user_models}`)
- `GET  /api/v1/key`              -> route "key" (default: 401 without a key, else key info)

`FakeOpenRouter().base_url` is `http://127.0.0.1:<port>/api/v1`. Factories build
`data: {chat.completion.chunk}` streams (OpenAI's streaming format) with the optional
`: OPENROUTER PROCESSING` comment first and `data: [DONE]` last; each accepts the
`Scenario` knobs as keyword arguments (`crlf=True`, `split=(1, 2, 3)`, ...).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from .fake_http import FakeServer, RecordedRequest, Scenario, json_response
from .fake_http import hang_before_headers  # noqa: F401 (one of this module's scenarios too)

PROCESSING = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"
USAGE = {"prompt_tokens": 194, "completion_tokens": 20, "total_tokens": 214,
         "prompt_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 100, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 8}, "cost": 0.00095,
         "cost_details": {"upstream_inference_cost": None}, "is_byok": False}


def _model(mid: str, name: str, ctx: int, params: list[str]) -> dict[str, Any]:
    return {"id": mid, "name": name, "context_length": ctx, "supported_parameters": params,
            "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
            "pricing": {"prompt": "0.000001", "completion": "0.000002"}}


CATALOG = [
    _model("openai/gpt-5.5", "OpenAI: GPT-5.5", 400000, ["tools", "reasoning", "include_reasoning"]),
    _model("anthropic/claude-sonnet-4.5", "Anthropic: Claude Sonnet 4.5", 1000000, ["tools", "reasoning"]),
    _model("meta-llama/llama-3.1-8b-instruct", "Meta: Llama 3.1 8B Instruct", 131072, ["tools"]),
]


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One chat.completion.chunk with the usual envelope fields filled in."""
    out: dict[str, Any] = {"id": "gen-test-1", "object": "chat.completion.chunk", "created": 1730000000,
                           "model": "openai/gpt-5.5", "provider": "OpenAI"}
    if delta is not None or finish is not None:
        out["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish,
                           "native_finish_reason": finish, "logprobs": None}]
    out.update(extra)
    return out


def encode(chunks: Iterable[dict[str, Any] | bytes], processing: bool = True, done: bool = True) -> list[bytes]:
    """SSE pieces: optional processing comment, one `data:` event per chunk, `[DONE]`."""
    out = [PROCESSING] if processing else []
    for c in chunks:
        out.append(c if isinstance(c, bytes) else
                   b"data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n")
    if done:
        out.append(DONE)
    return out


def stream(chunks: Iterable[dict[str, Any] | bytes], name: str = "stream", processing: bool = True,
           done: bool = True, **knobs: Any) -> Scenario:
    """A 200 SSE scenario from chunk dicts (or raw byte pieces)."""
    headers = {"X-Generation-Id": "gen-test-1", **knobs.pop("headers", {})}
    return Scenario(pieces=encode(chunks, processing, done), name=name, headers=headers, **knobs)


def _content(deltas: Iterable[str]) -> list[dict[str, Any]]:
    return [chunk({"role": "assistant", "content": ""}), *(chunk({"content": d}) for d in deltas)]


# --- scenario factories -----------------------------------------------------------------

def text(deltas: Iterable[str] = ("Hel", "lo"), usage: dict[str, Any] | None = None, **knobs: Any) -> Scenario:
    """Role chunk, content chunks, finish_reason stop, the usage chunk (with cost), [DONE]."""
    return stream([*_content(deltas), chunk({}, "stop"), chunk(None, usage=usage or USAGE, choices=[])],
                  name="text", **knobs)


def reasoning_then_text(reasoning: Iterable[str] = ("Thinking ", "hard."), deltas: Iterable[str] = ("Done",),
                        **knobs: Any) -> Scenario:
    """`delta.reasoning` chunks (with reasoning_details), then content."""
    chunks = [chunk({"role": "assistant", "content": "", "reasoning": r,
                     "reasoning_details": [{"type": "reasoning.text", "text": r, "index": 0, "format": "unknown"}]})
              for r in reasoning]
    return stream([*chunks, *(chunk({"content": d}) for d in deltas), chunk({}, "stop"),
                   chunk(None, usage=USAGE, choices=[])], name="reasoning_then_text", **knobs)


def tool_call(name: str = "shell", arguments: str = '{"cmd":"ls"}', call_id: str = "call_1", parts: int = 3,
              second: tuple[str, str, str] | None = None, **knobs: Any) -> Scenario:
    """A tool call whose arguments arrive in `parts` fragments joined by `index`;
    `second=(name, arguments, call_id)` adds a parallel call at index 1."""

    def frags(index: int, n: str, args: str, cid: str) -> list[dict[str, Any]]:
        step = max(1, -(-len(args) // parts))
        first = chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                       "function": {"name": n, "arguments": ""}}]})
        rest = [chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + step]}}]})
                for i in range(0, len(args), step)]
        return [first, *rest]

    chunks = [chunk({"role": "assistant", "content": None}), *frags(0, name, arguments, call_id)]
    if second:
        chunks += frags(1, *second)
    return stream([*chunks, chunk({}, "tool_calls"), chunk(None, usage=USAGE, choices=[])],
                  name="tool_call", **knobs)


def http_error(status: int, message: str = "error", headers: dict[str, str] | None = None,
               metadata: dict[str, Any] | None = None) -> Scenario:
    """A non-stream error: `{"error": {"code": status, "message": ..., "metadata": ...}}`."""
    error: dict[str, Any] = {"code": status, "message": message}
    if metadata:
        error["metadata"] = metadata
    return json_response(status, {"error": error}, headers).with_(name=f"http_error {status}")


def rate_limited(retry_after: str | None = "0") -> Scenario:
    """429 with Retry-After (retryable)."""
    return http_error(429, "Rate limit exceeded", {"Retry-After": retry_after} if retry_after is not None else {})


def insufficient_credits() -> Scenario:
    """402: never retried."""
    return http_error(402, "Insufficient credits. Add more using https://openrouter.ai/credits")


def mid_stream_error(deltas: Iterable[str] = ("Partial",), code: str = "server_error",
                     message: str = "Provider disconnected", done: bool = False, **knobs: Any) -> Scenario:
    """Content chunks, then the unified error chunk (top-level error + finish_reason error)."""
    err = chunk({"content": ""}, "error", error={"code": code, "message": message})
    return stream([*_content(deltas), err], name="mid_stream_error", done=done, **knobs)


def truncated(deltas: Iterable[str] = ("Cut",), **knobs: Any) -> Scenario:
    """Content chunks, then the body ends cleanly: no finish_reason, no [DONE]."""
    return stream(_content(deltas), name="truncated", done=False, **knobs)


def dropped(deltas: Iterable[str] = ("Cut",), **knobs: Any) -> Scenario:
    """Content chunks, then the socket is aborted without the final chunk."""
    return stream(_content(deltas), name="dropped", done=False, end="drop", **knobs)


def hang(deltas: Iterable[str] = ("Hel",), ping: bool = False, **knobs: Any) -> Scenario:
    """Content chunks, then silence (or processing comments when `ping`) until the client
    disconnects or the server stops."""
    return stream(_content(deltas), name="hang", done=False, end="hang",
                  ping=PROCESSING if ping else None, **knobs)


class FakeOpenRouter(FakeServer):
    """The fake OpenRouter API; see the module docstring. Use as a context manager."""

    PREFIX = "/api/v1"
    ROUTES = {("POST", PREFIX + "/chat/completions"): "chat", ("GET", PREFIX + "/models"): "models",
              ("GET", PREFIX + "/models/user"): "models_user", ("GET", PREFIX + "/key"): "key"}

    def __init__(self, catalog: list[dict[str, Any]] | None = None,
                 user_models: list[dict[str, Any]] | None = None):
        super().__init__()
        self.catalog = list(CATALOG if catalog is None else catalog)
        self.user_models = list(self.catalog[:2] if user_models is None else user_models)

    def default(self, route: str | None, record: RecordedRequest) -> Scenario | None:
        authed = record.bearer is not None
        if route == "models":
            return json_response(200, {"data": self.catalog})
        if route in ("models_user", "key") and not authed:
            return json_response(401, {"error": {"code": 401, "message": "No auth credentials found"}})
        if route == "models_user":
            return json_response(200, {"data": self.user_models})
        if route == "key":
            return json_response(200, {"data": {"label": "sk-or-v1-abc...xyz", "limit": None, "usage": 0.5,
                                                "is_free_tier": False}})
        return None
