"""OpenRouter: streamed chat completions with an API key (https://openrouter.ai/docs).

The key comes from a callable passed in by the auth layer (`OPENROUTER_API_KEY`, else
the credential store: the OS keyring or config.json), called once per attempt on the
request's thread; None means no key. `OpenAICompatibleProvider` (openai_compat.py)
reuses this class against any base URL with an optional key.

Thread contract: one provider serves many sessions concurrently; `complete` runs on each
turn's worker thread (see `streaming.StreamingProvider`); no per-request state is kept.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from kward.providers.base import ModelRequest, ProviderError, ProviderSetup, StreamSink
from kward.providers.chat_wire import (
    ChatAssembler,
    build_messages,
    build_tools,
    error_detail,
    history_has_tool_calls,
)
from kward.providers.http import HttpTransport
from kward.providers.retry import classify, parse_retry_after
from kward.providers.settings import ProviderSettings
from kward.providers.streaming import (
    Assembler,
    PreparedRequest,
    StreamingProvider,
    http_settings,
)
from kward.providers.wire_common import reasoning_enabled

ApiKey = Callable[[], str | None]


class OpenRouterProvider(StreamingProvider):
    """OpenRouter chat completions, streamed. See the module docstring."""

    name = "OpenRouter"
    auth_hint = "Check your OpenRouter API key (`kward login openrouter`, or OPENROUTER_API_KEY)."

    def __init__(self, settings: ProviderSettings, api_key: ApiKey, *, http: HttpTransport | None = None):
        super().__init__(settings, http=http)
        self._api_key = api_key

    @classmethod
    def create(cls, setup: ProviderSetup) -> OpenRouterProvider:
        """Built by selection (`kward.providers.specs`): the key callable is the setup's."""
        return cls(http_settings(setup), setup.secret)

    def auth_headers(self) -> dict[str, str]:
        """Authorization (and attribution) headers; raises `not_logged_in` without a key."""
        key = self._api_key()
        if not key:
            raise ProviderError(
                "No OpenRouter API key. Run `kward login openrouter` (a UI: auth/loginWithApiKey) or set "
                "OPENROUTER_API_KEY.",
                provider=self.name, kind="auth", reason="not_logged_in",
                data={"provider": self.name, "kind": "auth"})
        headers = {"Authorization": f"Bearer {key}", "X-Title": self.settings.app_title}
        if self.settings.app_url:
            headers["HTTP-Referer"] = self.settings.app_url
        return headers

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "messages": build_messages(request), "stream": True}
        if request.tools:
            body["tools"] = build_tools(request.tools)
            body["tool_choice"] = "auto"
        elif history_has_tool_calls(request):
            body["tools"] = []  # some upstreams reject tool history without a tools field
        if request.max_output_tokens:
            body["max_tokens"] = request.max_output_tokens
        self._reasoning(body, request.reasoning_effort)
        return body

    def _reasoning(self, body: dict[str, Any], effort: str | None) -> None:
        body["usage"] = {"include": True}
        if reasoning_enabled(effort):
            body["reasoning"] = {"effort": str(effort).lower()}

    def _prepare(self, request: ModelRequest) -> PreparedRequest:
        headers = dict(request.headers)
        headers.update(self.auth_headers())
        key = headers.get("Authorization", "")[7:]
        return PreparedRequest(self.base_url + "/chat/completions", headers, self.build_body(request), (key,))

    def _assembler(self, request: ModelRequest, sink: StreamSink) -> Assembler:
        return ChatAssembler(self.name, request.model, sink, self.auth_hint)

    def _http_error(self, status: int, headers: dict[str, str], body: str) -> ProviderError:
        code, detail = "", body.strip()
        try:
            parsed: Any = json.loads(body) if body.strip() else {}
        except ValueError:
            parsed = {}
        if isinstance(parsed, dict) and parsed.get("error") is not None:
            code, detail = error_detail(parsed["error"])
            code = "" if code.isdigit() else code
        elif isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
            detail = parsed["message"]
        return classify(self.name, status=status, code=code, detail=detail,
                        retry_after=parse_retry_after(headers.get("retry-after")), auth_hint=self.auth_hint)
