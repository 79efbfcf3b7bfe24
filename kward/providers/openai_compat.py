"""OpenAICompatible: the chat completions client against any base URL (e.g. a local model
server such as llama.cpp, vLLM or Ollama). The key is optional; the base URL comes from
KWARD_OPENAI_COMPAT_BASE_URL or config `openai_compat_base_url`.

Differences from OpenRouter: no attribution headers, reasoning as the OpenAI
`reasoning_effort` field, and `stream_options.include_usage` to get the usage chunk.

Thread contract: as `OpenRouterProvider`.
"""

from __future__ import annotations

from typing import Any

from kward.providers.http import HttpTransport
from kward.providers.openrouter import ApiKey, OpenRouterProvider
from kward.providers.settings import ProviderSettings
from kward.providers.wire_common import reasoning_enabled


class OpenAICompatibleProvider(OpenRouterProvider):
    """Any OpenAI-style chat completions endpoint; `api_key` may return None."""

    name = "OpenAICompatible"
    auth_hint = "Check the API key configured for the OpenAI-compatible server (openai_compat_api_key)."
    no_base_url = ("No OpenAI-compatible base URL configured. Set KWARD_OPENAI_COMPAT_BASE_URL or the "
                   "config key openai_compat_base_url (for example http://127.0.0.1:8080/v1).")

    def __init__(self, settings: ProviderSettings, api_key: ApiKey | None = None, *,
                 http: HttpTransport | None = None):
        super().__init__(settings, api_key or (lambda: None), http=http)

    def auth_headers(self) -> dict[str, str]:
        key = self._api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _reasoning(self, body: dict[str, Any], effort: str | None) -> None:
        body["stream_options"] = {"include_usage": True}
        if reasoning_enabled(effort):
            body["reasoning_effort"] = str(effort).lower()
