"""A fake ChatGPT Codex backend (Responses API over SSE) on 127.0.0.1, for tests.

Routes (paths mirror production, so clients only swap the base URL):

- `POST /backend-api/codex/responses` -> route "responses" (scripted scenarios below)
- `GET  /backend-api/codex/models`    -> route "models" (default: `DEFAULT_MODELS`;
  401 without an Authorization header)

`FakeCodex().base_url` is `http://127.0.0.1:<port>/backend-api/codex`. Scenario factories
(module functions) build the real event sequences of the Responses stream; each takes
the `Scenario` knobs as keyword arguments (`crlf=True`, `split=(1, 2, 3)`, `delay=...`).
`make_jwt` builds an unsigned access token carrying a ChatGPT account id.

Example::

    with FakeCodex() as fake:
        fake.script("responses", rate_limited(retry_after="0"), text(["Hi"]))
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterable

from .fake_http import FakeServer, RecordedRequest, Scenario, json_response
from .fake_http import hang_before_headers  # noqa: F401 (one of this module's scenarios too)
from .tokens import openai_jwt

USAGE = {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 256}, "output_tokens": 40,
         "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 940}

DEFAULT_MODELS = [
    {"slug": "gpt-5.5", "display_name": "GPT-5.5", "context_window": 400000, "visibility": "list",
     "default_reasoning_level": "medium", "supports_reasoning_summaries": True,
     "supported_reasoning_levels": [{"effort": e} for e in ("low", "medium", "high", "xhigh")],
     "input_modalities": ["text", "image"], "priority": 1},
    {"slug": "gpt-5.1-codex-mini", "display_name": "GPT-5.1 Codex Mini", "context_window": 272000,
     "visibility": "list", "default_reasoning_level": "medium",
     "supported_reasoning_levels": [{"effort": "medium"}, {"effort": "high"}], "priority": 2},
    {"slug": "internal-hidden", "display_name": "Hidden", "context_window": 1000, "visibility": "hide"},
]


def make_jwt(account_id: str | None = "acct_test", *, plan: str = "plus", email: str = "test@example.com",
             exp: float | None = None) -> str:
    """An unsigned access token carrying `account_id`, valid for an hour unless `exp` says."""
    return openai_jwt(account_id, exp=exp if exp is not None else time.time() + 3600, plan=plan, email=email)


def encode_events(events: Iterable[dict[str, Any]], ensure_ascii: bool = False) -> list[bytes]:
    """`event: <type>` + `data: <json>` + blank line per event, sequence numbers filled in."""
    out = []
    for n, event in enumerate(events):
        event = {**event, "sequence_number": n}
        data = json.dumps(event, ensure_ascii=ensure_ascii, separators=(",", ":"))
        out.append(f"event: {event['type']}\ndata: {data}\n\n".encode("utf-8"))
    return out


def stream(events: Iterable[dict[str, Any]], name: str = "stream", **knobs: Any) -> Scenario:
    """A 200 SSE scenario from raw event dicts."""
    return Scenario(pieces=encode_events(events), name=name, **knobs)


def created(resp_id: str = "resp_1") -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": resp_id, "status": "in_progress"}}


def completed(usage: dict[str, Any] | None = None, resp_id: str = "resp_1") -> dict[str, Any]:
    return {"type": "response.completed",
            "response": {"id": resp_id, "status": "completed", "usage": usage or USAGE}}


def text_events(deltas: Iterable[str], item_id: str = "msg_1", index: int = 0) -> list[dict[str, Any]]:
    deltas = list(deltas)
    full = "".join(deltas)
    base = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {"type": "message", "id": item_id, "role": "assistant", "content": []}},
        {"type": "response.content_part.added", **base, "part": {"type": "output_text", "text": "", "annotations": []}},
        *({"type": "response.output_text.delta", **base, "delta": d} for d in deltas),
        {"type": "response.output_text.done", **base, "text": full},
        {"type": "response.content_part.done", **base, "part": {"type": "output_text", "text": full, "annotations": []}},
        {"type": "response.output_item.done", "output_index": index,
         "item": {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                  "content": [{"type": "output_text", "text": full, "annotations": []}]}},
    ]


def reasoning_events(deltas: Iterable[str], item_id: str = "rs_1", index: int = 0,
                     encrypted: str = "gAAAA-encrypted-test") -> list[dict[str, Any]]:
    deltas = list(deltas)
    base = {"item_id": item_id, "output_index": index, "summary_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {"type": "reasoning", "id": item_id, "summary": []}},
        {"type": "response.reasoning_summary_part.added", **base, "part": {"type": "summary_text", "text": ""}},
        *({"type": "response.reasoning_summary_text.delta", **base, "delta": d} for d in deltas),
        {"type": "response.reasoning_summary_text.done", **base, "text": "".join(deltas)},
        {"type": "response.output_item.done", "output_index": index,
         "item": {"type": "reasoning", "id": item_id, "encrypted_content": encrypted,
                  "summary": [{"type": "summary_text", "text": "".join(deltas)}]}},
    ]


def call_events(name: str, arguments: str, call_id: str = "call_1", item_id: str = "fc_1",
                index: int = 0, parts: int = 3) -> list[dict[str, Any]]:
    step = max(1, -(-len(arguments) // parts))
    pieces = [arguments[i:i + step] for i in range(0, len(arguments), step)] or [""]
    base = {"item_id": item_id, "output_index": index}
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {**item, "arguments": "", "status": "in_progress"}},
        *({"type": "response.function_call_arguments.delta", **base, "delta": p} for p in pieces),
        {"type": "response.function_call_arguments.done", **base, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": index,
         "item": {**item, "arguments": arguments, "status": "completed"}},
    ]


def partial_text_events(deltas: Iterable[str]) -> list[dict[str, Any]]:
    """The start of a message: item added, part added, the text deltas (no done events)."""
    deltas = list(deltas)
    return text_events(deltas)[:2 + len(deltas)] if deltas else []


# --- scenario factories -----------------------------------------------------------------

def text(deltas: Iterable[str] = ("Hel", "lo"), usage: dict[str, Any] | None = None, **knobs: Any) -> Scenario:
    """A plain text answer ending in response.completed with usage."""
    return stream([created(), *text_events(deltas), completed(usage)], name="text", **knobs)


def reasoning_then_text(summary: Iterable[str] = ("Need to ", "think."), deltas: Iterable[str] = ("Done",),
                        encrypted: str = "gAAAA-encrypted-test", **knobs: Any) -> Scenario:
    """A reasoning item (summary deltas, encrypted_content) followed by a text message."""
    return stream([created(), *reasoning_events(summary, encrypted=encrypted),
                   *text_events(deltas, index=1), completed()], name="reasoning_then_text", **knobs)


def function_call(name: str = "shell", arguments: str = '{"cmd":"ls"}', call_id: str = "call_1",
                  parts: int = 3, **knobs: Any) -> Scenario:
    """A single tool call, its arguments streamed in `parts` deltas; no text."""
    return stream([created(), *call_events(name, arguments, call_id, parts=parts), completed()],
                  name="function_call", **knobs)


def http_error(status: int, payload: Any, headers: dict[str, str] | None = None) -> Scenario:
    """A non-stream error answer with a JSON body."""
    return json_response(status, payload, headers).with_(name=f"http_error {status}")


def rate_limited(retry_after: str | None = "0", message: str = "Rate limit reached. Please try again later.") -> Scenario:
    """429 rate_limit_exceeded (retryable), optionally with Retry-After."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return http_error(429, {"error": {"type": "rate_limit_exceeded", "message": message}}, headers)


def usage_limit(resets_at: float | None = None, plan_type: str = "plus") -> Scenario:
    """429 usage_limit_reached (never retried) with plan_type and resets_at."""
    return http_error(429, {"error": {"type": "usage_limit_reached",
                                      "message": "The usage limit has been reached",
                                      "plan_type": plan_type,
                                      "resets_at": int(resets_at or time.time() + 3 * 3600)}})


def failed_mid_stream(code: str = "server_error", message: str = "The server had an error.",
                      deltas: Iterable[str] = ("Partial",), **knobs: Any) -> Scenario:
    """Some text deltas, then response.failed with error {code, message}."""
    failed = {"type": "response.failed",
              "response": {"id": "resp_1", "status": "failed", "error": {"code": code, "message": message}}}
    return stream([created(), *partial_text_events(deltas), failed], name="failed_mid_stream", **knobs)


def error_event(code: str = "server_error", message: str = "Something broke.",
                deltas: Iterable[str] = (), **knobs: Any) -> Scenario:
    """Optional text deltas, then a top-level `error` event."""
    events = [created(), *partial_text_events(deltas)]
    return stream([*events, {"type": "error", "code": code, "message": message, "param": None}],
                  name="error_event", **knobs)


def truncated(deltas: Iterable[str] = ("Cut",), **knobs: Any) -> Scenario:
    """Text deltas, then the body ends cleanly without response.completed."""
    return stream([created(), *partial_text_events(deltas)], name="truncated", **knobs)


def dropped(deltas: Iterable[str] = ("Cut",), **knobs: Any) -> Scenario:
    """Text deltas, then the socket is aborted without the final chunk."""
    return stream([created(), *partial_text_events(deltas)], name="dropped", end="drop", **knobs)


def hang(deltas: Iterable[str] = ("Hel",), **knobs: Any) -> Scenario:
    """Text deltas, then silence until the client disconnects or the server stops."""
    return stream([created(), *partial_text_events(deltas)], name="hang", end="hang", **knobs)


class FakeCodex(FakeServer):
    """The fake Codex backend; see the module docstring. Use as a context manager."""

    PREFIX = "/backend-api/codex"
    ROUTES = {("POST", PREFIX + "/responses"): "responses", ("GET", PREFIX + "/models"): "models"}

    def __init__(self, models: list[dict[str, Any]] | None = None):
        super().__init__()
        self.models = list(DEFAULT_MODELS if models is None else models)

    def default(self, route: str | None, record: RecordedRequest) -> Scenario | None:
        if route == "models":
            if record.bearer is None:
                return json_response(401, {"detail": "Unauthorized"})
            return json_response(200, {"models": self.models}, {"ETag": '"models-1"'})
        return None
