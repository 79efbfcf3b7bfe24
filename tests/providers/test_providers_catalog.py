"""Model listings (endpoint, fallbacks, cache) and reasoning-effort validation."""

import pytest

from kward.errors import InvalidParams
from kward.providers import catalog
from kward.providers.codex import CodexProvider
from kward.providers.openai_compat import OpenAICompatibleProvider
from kward.providers.openrouter import OpenRouterProvider
from kward.providers.settings import ProviderSettings
from lib.fake_codex import FakeCodex, make_jwt
from lib.fake_http import json_response
from lib.fake_openrouter import FakeOpenRouter


def test_codex_models_from_endpoint():
    with FakeCodex() as fake:
        provider = CodexProvider(ProviderSettings(base_url=fake.base_url), lambda: (make_jwt("acct_m"), None))
        listing = catalog.codex_models(provider)
        assert listing.source == "endpoint"
        assert [e.id for e in listing.entries] == ["gpt-5.5", "gpt-5.1-codex-mini"]
        mini = listing.entries[1]
        assert mini.efforts == ("medium", "high") and mini.context_window == 272000
        rec = fake.requests("models")[0]
        assert rec.query["client_version"] == [catalog.CODEX_CLIENT_VERSION]
        assert rec.headers["chatgpt-account-id"] == "acct_m"


def test_codex_models_fall_back_to_builtin():
    with FakeCodex() as fake:
        fake.script("models", json_response(500, {"detail": "down"}))
        provider = CodexProvider(ProviderSettings(base_url=fake.base_url), lambda: (make_jwt(), None))
        listing = catalog.codex_models(provider)
        assert listing.source == "builtin" and "HTTP 500" in listing.error
        assert listing.entries[0].id == "gpt-5.5" and listing.entries[0].context_window == 400_000
        # not logged in: built-in table, no request
        listing = catalog.codex_models(CodexProvider(ProviderSettings(base_url=fake.base_url), lambda: None))
        assert listing.source == "builtin" and len(fake.requests()) == 1


def test_openrouter_models_for_the_key_then_catalog_then_defaults():
    with FakeOpenRouter() as fake:
        settings = ProviderSettings(base_url=fake.base_url)
        listing = catalog.openrouter_models(OpenRouterProvider(settings, lambda: "sk-or-v1-k"))
        assert listing.source == "user" and [e.id for e in listing.entries] == [m["id"] for m in fake.user_models]
        assert fake.requests("models_user")[0].headers["authorization"] == "Bearer sk-or-v1-k"
        llama = catalog.openrouter_catalog(OpenRouterProvider(settings, lambda: None)).entries[2]
        assert not llama.reasoning and llama.context_window == 131072
        assert "authorization" not in fake.requests("models")[0].headers
        # no key: /models/user is skipped, the catalog is used
        listing = catalog.openrouter_models(OpenRouterProvider(settings, lambda: None))
        assert listing.source == "catalog" and len(listing.entries) == 3
        fake.script("models_user", json_response(404, {"error": {"code": 404, "message": "No eligible endpoints found"}}))
        fake.script("models", json_response(503, {}))
        listing = catalog.openrouter_models(OpenRouterProvider(settings, lambda: "k"))
        assert listing.source == "defaults" and listing.entries == list(catalog.OPENROUTER_DEFAULTS)


def test_compat_models():
    with FakeOpenRouter() as fake:
        provider = OpenAICompatibleProvider(ProviderSettings(base_url=fake.base_url))
        listing = catalog.compat_models(provider)
        assert listing.source == "endpoint" and listing.entries[0].provider == "OpenAICompatible"
    assert catalog.compat_models(OpenAICompatibleProvider(ProviderSettings())).entries == []


def test_entry_wire_shape():
    from kward.providers.model_service import ModelChoice
    from kward.rpc.wire.models import model_entry

    entry = catalog.codex_entry("gpt-5.3-codex-spark")
    assert model_entry(ModelChoice(entry, current=True, reasoning_effort="high")) == {
        "provider": "Codex", "id": "gpt-5.3-codex-spark", "name": "GPT-5.3 Codex Spark", "reasoning": True,
        "reasoningEffort": "high", "contextWindow": 128_000, "current": True, "model": "gpt-5.3-codex-spark",
        "reasoningEfforts": ["low", "medium", "high", "xhigh"]}


def test_normalize_effort_accepts_every_level_and_refuses_other_words():
    for level in ["off", "minimal", "low", "medium", "high", "xhigh", "max"]:
        assert catalog.normalize_effort(level) == level
        assert catalog.normalize_effort(f" {level.upper()} ") == level
    for bad in ["extreme", "", None, 3, "minimal,low", "maximum"]:
        with pytest.raises(InvalidParams) as info:
            catalog.normalize_effort(bad, param="value")
        assert info.value.code == -32602 and info.value.data["param"] == "value"
        assert "off, minimal, low, medium, high, xhigh, max" in info.value.message


def test_effective_effort_maps_to_the_nearest_offered_level():
    def entry(*efforts):
        return catalog.ModelEntry("Codex", "m", "m", efforts=efforts)

    full = catalog.codex_entry("gpt-5.5")  # low, medium, high, xhigh
    mini = catalog.codex_entry("gpt-5.1-codex-mini")  # medium, high
    three = catalog.codex_entry("gpt-5.1")  # low, medium, high
    cases = {
        full: {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"},
        mini: {"minimal": "medium", "low": "medium", "medium": "medium", "high": "high", "xhigh": "high",
               "max": "high"},
        three: {"minimal": "low", "xhigh": "high", "max": "high"},
        entry("low", "high"): {"medium": "high", "minimal": "low", "xhigh": "high"},  # a tie goes up
        entry("minimal", "low", "medium", "high", "xhigh"): {"minimal": "minimal", "max": "xhigh"},
    }
    for model, expected in cases.items():
        for requested, sent in expected.items():
            assert catalog.effective_effort(requested, model) == sent, (model.efforts, requested)
            assert catalog.effective_effort(requested.upper(), model) == sent
    for model in (full, mini, entry()):
        assert catalog.effective_effort("off", model) is None and catalog.effective_effort(None, model) is None
    no_reasoning = catalog.ModelEntry("OpenRouter", "x/y", "Y", efforts=())
    for level in ["minimal", "low", "medium", "high", "xhigh", "max"]:
        assert catalog.effective_effort(level, no_reasoning) is None
        unknown = catalog.ModelEntry("OpenAICompatible", "local", "local", efforts=None)
        assert catalog.effective_effort(level, unknown) == ("xhigh" if level == "max" else level)
        assert catalog.effective_effort(level, None) == ("xhigh" if level == "max" else level)
    assert catalog.effective_effort("turbo", mini) == "turbo"  # not a level: passed on as given


def test_cache_keeps_real_listings_only():
    now = [0.0]
    cache = catalog.ModelCatalog(ttl=10, clock=lambda: now[0])
    calls = []

    def loader(source):
        def load():
            calls.append(source)
            return catalog.ModelList([], source)
        return load

    assert cache.get("k", loader("endpoint")).origin == "api"
    hit = cache.get("k", loader("endpoint"))
    assert calls == ["endpoint"] and hit.cached and hit.origin == "cache" and hit.source == "endpoint"
    assert cache.get("k", loader("endpoint"), refresh=True).origin == "api" and len(calls) == 2
    assert not cache.peek("k").cached
    now[0] = 11
    assert cache.get("k", loader("builtin")).origin == "builtin"
    assert cache.get("k", loader("builtin")).origin == "builtin"
    assert calls == ["endpoint", "endpoint", "builtin", "builtin"]
    for fallback in ("defaults", "none"):
        assert catalog.ModelList([], fallback).origin == "builtin"
    for fetched in ("user", "catalog"):
        assert catalog.ModelList([], fetched).origin == "api"
