"""Models and reasoning efforts: list them, tell the current one, change them in config.

The current provider/model/effort always comes from `AgentEngine.selection()` (config +
environment); changing them writes config.json, after which the next selection picks the
change up (the engine rebuilds its selection when config.json changes). Listings come
from the providers' endpoints through a time-limited `ModelCatalog`, with the fallbacks of
`kward.providers.catalog`.

What is known about the current model (name, context window, reasoning efforts) comes
from the listings: `current` uses the cached ones only (no I/O, it answers a quick
method), `set_effort` loads them (cached) so that an effort the model cannot use is
refused; a model found in no listing falls back to the built-in tables, then to a bare
entry that accepts any effort.

Thread contract: any thread; `list`, `openrouter_catalog` and `set_effort` may do network
I/O and belong on worker threads.
"""

from __future__ import annotations

import re
from typing import Any

from kward.config import ConfigStore
from kward.errors import InvalidParams
from kward.providers.catalog import ModelCatalog, ModelEntry, builtin_entry, validate_effort
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


def current_entry(selection: Selection, catalog_entries: list[ModelEntry] | None = None) -> ModelEntry:
    """What is known about the selected model (from a fetched listing, the built-in
    tables, or a bare entry when the model is unknown)."""
    for entry in catalog_entries or []:
        if entry.id == selection.model:
            return entry
    if selection.key == "scripted":
        from kward.providers.scripted import CONTEXT_WINDOW

        return ModelEntry("Scripted", selection.model, selection.model, CONTEXT_WINDOW, None, None)
    entry = builtin_entry(selection.label, selection.model)
    return entry or ModelEntry(selection.label, selection.model, selection.model, None, None, None)


def entry_payload(entry: ModelEntry, selection: Selection) -> dict[str, Any]:
    current = entry.provider == selection.label and entry.id == selection.model
    effort = selection.reasoning_effort or "off" if current else None
    out = entry.to_wire(current=current, reasoning_effort=effort)
    out["provider"] = entry.provider
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

    def list(self, selection: Selection, refresh: bool = False) -> list[dict[str, Any]]:
        entries = self._listing(selection, refresh)
        if not any(e.id == selection.model for e in entries):
            entries = [current_entry(selection, self._cached_entries(selection)), *entries]
        return [entry_payload(e, selection) for e in entries]

    def _listing(self, selection: Selection, refresh: bool) -> list[ModelEntry]:
        from kward.providers import catalog

        if selection.key == "scripted":
            return [current_entry(selection)]
        provider = selection.provider
        loader = {"codex": catalog.codex_models, "openrouter": catalog.openrouter_models,
                  "openai-compatible": catalog.compat_models}[selection.key]
        return list(self.catalog.get(_listing_key(selection), lambda: loader(provider), refresh).entries)

    def _catalog_listing(self, provider: Any) -> list[ModelEntry]:
        from kward.providers import catalog

        return list(self.catalog.get(_catalog_key(provider), lambda: catalog.openrouter_catalog(provider)).entries)

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

    def _known_entries(self, selection: Selection) -> list[ModelEntry]:
        """Entries that may describe the selected model, loading listings as needed."""
        if selection.key == "scripted":
            return []
        entries = self._listing(selection, False)
        if selection.key == "openrouter" and not any(e.id == selection.model for e in entries):
            entries += self._catalog_listing(selection.provider)  # models the key cannot use yet
        return entries

    def openrouter_catalog(self, provider: Any, selection: Selection) -> list[dict[str, Any]]:
        return [entry_payload(e, selection) for e in self._catalog_listing(provider)]

    def current(self, selection: Selection) -> dict[str, Any]:
        """The current model entry from what is cached (no I/O)."""
        return entry_payload(current_entry(selection, self._cached_entries(selection)), selection)

    def set_model(self, selection: Selection, model: str, provider: str | None) -> None:
        if not _MODEL_ID.match(model):
            raise InvalidParams(f"Invalid model id {model!r}", data={"param": "model"})
        key = provider_key(provider) if provider is not None else selection.key
        values: dict[str, Any] = {MODEL_KEYS[key]: model}
        if key != selection.key:
            values["provider"] = key
        if key == selection.key and selection.reasoning_effort:
            # keep the effort usable: the new model may not offer the current one
            from dataclasses import replace

            entry = current_entry(replace(selection, model=model), self._known_entries(selection))
            if entry.efforts is not None and selection.reasoning_effort not in entry.efforts:
                values[EFFORT_KEYS[key]] = entry.default_effort if entry.default_effort in entry.efforts else (
                    entry.efforts[0] if entry.efforts else "off")
        self.config.update(values)

    def set_effort(self, selection: Selection, effort: str, param: str = "effort") -> str:
        try:
            value = validate_effort(effort, current_entry(selection, self._known_entries(selection)), selection.model)
        except InvalidParams as exc:
            exc.data["param"] = param
            raise
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
