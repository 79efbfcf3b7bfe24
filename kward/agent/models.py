"""Models and reasoning efforts: list them, tell the current one, change them in config.

The current provider/model/effort always comes from `AgentEngine.selection()` (config +
environment); changing them writes config.json, after which the next selection picks the
change up (the engine rebuilds its selection when config.json changes). Listings come
from the providers' endpoints through a time-limited `ModelCatalog`, with the fallbacks of
`kward.providers.catalog`; `list` and `openrouter_catalog` say where theirs came from
(`source`: api, cache or builtin, and `sourceError` for a fallback).

Reasoning levels: every level of `EFFORTS` is accepted and stored as requested, for
every model; `request_effort` gives the level a turn's model request carries
(`catalog.effective_effort` for the model, the one place that maps levels), and the
current model entry reports it as `effectiveReasoningEffort` when it differs. `models/set`
keeps the stored level: the mapping adapts it to the new model.

What is known about the current model (name, context window, reasoning levels) comes, in
this order, from a fresh cached listing, the built-in tables, the provider's listing
(only when loading is allowed and the first two do not know the model), else a bare entry
whose levels are unknown.

Thread contract: any thread; `list`, `openrouter_catalog`, `describe(load=True)` and
`request_effort` may do network I/O and belong on worker threads.
"""

from __future__ import annotations

import re
from typing import Any

from kward.cancel import CancelToken
from kward.config import ConfigStore
from kward.errors import InvalidParams
from kward.providers.catalog import (ModelCatalog, ModelEntry, ModelList, builtin_entry, effective_effort, find_entry,
                                     normalize_effort)
from kward.providers.select import LABELS, Selection

MODEL_KEYS = {"codex": "openai_model", "openrouter": "openrouter_model", "openai-compatible": "openai_compat_model",
              "scripted": "scripted_model"}
EFFORT_KEYS = {"codex": "openai_reasoning_effort", "openrouter": "openrouter_reasoning_effort",
               "openai-compatible": "reasoning_effort", "scripted": "reasoning_effort"}
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,199}$")


def provider_key(label: str, param: str = "provider") -> str:
    """`Codex`, `openrouter`, `OpenAICompatible`, `openai-compatible`, ... -> the selection key."""
    wanted = label.strip().lower().replace("_", "-") if isinstance(label, str) else ""
    for key, shown in LABELS.items():
        if wanted in (key, shown.lower(), key.replace("-", "")):
            return key
    raise InvalidParams(f"Unknown provider {label!r}; use one of: {', '.join(LABELS.values())}",
                        data={"param": param})


def known_entry(selection: Selection) -> ModelEntry | None:
    """The selected model from the built-in tables (the Scripted model, whose levels are
    unknown, always), or None."""
    if selection.key == "scripted":
        from kward.providers.scripted import CONTEXT_WINDOW

        return ModelEntry("Scripted", selection.model, selection.model, CONTEXT_WINDOW, None, None)
    return builtin_entry(selection.label, selection.model)


def bare_entry(selection: Selection) -> ModelEntry:
    """A model nothing is known about: any reasoning level is passed on."""
    return ModelEntry(selection.label, selection.model, selection.model, None, None, None)


def entry_payload(entry: ModelEntry, selection: Selection) -> dict[str, Any]:
    """The wire entry; the current one carries the requested level (`off` when none) and,
    when the model does not offer it, `effectiveReasoningEffort`; others their default."""
    current = entry.provider == selection.label and entry.id == selection.model
    if not current:
        return entry.to_wire()
    requested = selection.reasoning_effort or "off"
    out = entry.to_wire(current=True, reasoning_effort=requested)
    effective = effective_effort(requested, entry) or "off"
    if effective != requested:
        out["effectiveReasoningEffort"] = effective
    return out


def source_fields(listing: ModelList) -> dict[str, Any]:
    """`{source, sourceError?}` of a listing's result."""
    out: dict[str, Any] = {"source": listing.origin}
    if listing.error:
        out["sourceError"] = listing.error
    return out


def _listing_key(selection: Selection) -> tuple[str, Any]:
    """Cache key of a provider's listing: the provider and its configured base URL (read
    from the settings: `OpenAICompatibleProvider.base_url` raises when none is set)."""
    settings = getattr(selection.provider, "settings", None)
    field = {"codex": "codex_base_url", "openrouter": "openrouter_base_url",
             "openai-compatible": "openai_compat_base_url"}.get(selection.key, "")
    return selection.key, getattr(settings, field, None) if field else None


def _catalog_key(provider: Any) -> tuple[str, Any]:
    return "openrouter-catalog", provider.base_url


class ModelService:
    def __init__(self, config: ConfigStore):
        self.config = config
        self.catalog = ModelCatalog()

    def list(self, selection: Selection, refresh: bool = False) -> dict[str, Any]:
        """`{models, source, sourceError?}` for the active provider; the current model is
        added first when the listing lacks it."""
        listing = self._listing(selection, refresh)
        entries = listing.entries
        if find_entry(entries, selection.model) is None:
            entries = [self.describe(selection), *entries]
        return {"models": [entry_payload(e, selection) for e in entries], **source_fields(listing)}

    def _listing(self, selection: Selection, refresh: bool = False, cancel: CancelToken | None = None) -> ModelList:
        from kward.providers import catalog

        if selection.key == "scripted":
            return ModelList([self.describe(selection)], "builtin")
        provider = selection.provider
        loader = {"codex": catalog.codex_models, "openrouter": catalog.openrouter_models,
                  "openai-compatible": catalog.compat_models}[selection.key]
        return self.catalog.get(_listing_key(selection), lambda: loader(provider, cancel), refresh)

    def _catalog_listing(self, provider: Any, cancel: CancelToken | None = None) -> ModelList:
        from kward.providers import catalog

        return self.catalog.get(_catalog_key(provider), lambda: catalog.openrouter_catalog(provider, cancel))

    def _cached_entries(self, selection: Selection) -> list[ModelEntry]:
        """Entries of the fresh cached listings for the selected provider (no I/O)."""
        keys = [_listing_key(selection)]
        if selection.key == "openrouter":
            keys.append(_catalog_key(selection.provider))
        out: list[ModelEntry] = []
        for key in keys:
            listing = self.catalog.peek(key)
            out += listing.entries if listing else []
        return out

    def _loaded_entries(self, selection: Selection, cancel: CancelToken | None) -> list[ModelEntry]:
        """Entries that may describe the selected model, loading listings (cached) as needed."""
        if selection.key == "scripted":
            return []
        entries = list(self._listing(selection, cancel=cancel).entries)
        if selection.key == "openrouter" and find_entry(entries, selection.model) is None:
            entries += self._catalog_listing(selection.provider, cancel).entries  # models the key cannot use yet
        return entries

    def describe(self, selection: Selection, load: bool = False, cancel: CancelToken | None = None) -> ModelEntry:
        """What is known about the selected model (see the module docstring for the order);
        `load` allows network I/O when nothing cached or built in knows the model."""
        entry = find_entry(self._cached_entries(selection), selection.model) or known_entry(selection)
        if entry is None and load:
            entry = find_entry(self._loaded_entries(selection, cancel), selection.model)
        return entry or bare_entry(selection)

    def request_effort(self, selection: Selection, cancel: CancelToken | None = None) -> str | None:
        """The level the next model request carries (None: no reasoning). Worker thread:
        may load the listing when the model is unknown and a level is requested."""
        if selection.reasoning_effort is None:
            return None
        return effective_effort(selection.reasoning_effort, self.describe(selection, load=True, cancel=cancel))

    def openrouter_catalog(self, provider: Any, selection: Selection) -> dict[str, Any]:
        """`{models, source, sourceError?}`: OpenRouter's full public catalog."""
        listing = self._catalog_listing(provider)
        return {"models": [entry_payload(e, selection) for e in listing.entries], **source_fields(listing)}

    def current(self, selection: Selection, load: bool = False) -> dict[str, Any]:
        """The current model entry; no I/O unless `load` (slow methods only)."""
        return entry_payload(self.describe(selection, load), selection)

    def set_model(self, selection: Selection, model: str, provider: str | None) -> None:
        """Write the model (and the provider, for a hint naming another). The stored
        reasoning level is kept: requests map it to what the new model offers."""
        if not _MODEL_ID.match(model):
            raise InvalidParams(f"Invalid model id {model!r}", data={"param": "model"})
        key = provider_key(provider) if provider is not None else selection.key
        values: dict[str, Any] = {MODEL_KEYS[key]: model}
        if key != selection.key:
            values["provider"] = key
        self.config.update(values)

    def set_effort(self, selection: Selection, effort: Any, param: str = "effort") -> str:
        """Store the requested level (any of `EFFORTS`, case-insensitive) for the active
        provider; InvalidParams naming `param` for anything else, writing nothing."""
        value = normalize_effort(effort, param)
        self.config.update({EFFORT_KEYS[selection.key]: value})
        return value

    def set_default_model(self, value: str) -> tuple[str, str]:
        """`Provider/model-id` (slashes after the provider kept) -> writes provider and model."""
        provider, sep, model = value.partition("/") if isinstance(value, str) else ("", "", "")
        if not sep or not model:
            raise InvalidParams("defaultModel must look like Provider/model-id", data={"param": "value"})
        key = provider_key(provider, "value")
        if not _MODEL_ID.match(model):
            raise InvalidParams(f"Invalid model id {model!r}", data={"param": "value"})
        self.config.update({"provider": key, MODEL_KEYS[key]: model})
        return LABELS[key], model
