"""Models and reasoning efforts: list them, tell the current one, change them in config.

The current provider/model/effort always comes from `AgentEngine.selection()` (config +
environment); changing them writes config.json, after which the next selection picks the
change up (the engine rebuilds its selection when config.json changes). Listings come
from the providers' endpoints through a time-limited `ModelCatalog`, with the fallbacks of
`kward.providers.catalog`.

Thread contract: any thread; network listings belong on worker threads.
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


class ModelService:
    def __init__(self, config: ConfigStore):
        self.config = config
        self.catalog = ModelCatalog()

    def list(self, selection: Selection, refresh: bool = False) -> list[dict[str, Any]]:
        entries = self._listing(selection, refresh)
        if not any(e.id == selection.model for e in entries):
            entries = [current_entry(selection), *entries]
        return [entry_payload(e, selection) for e in entries]

    def _listing(self, selection: Selection, refresh: bool) -> list[ModelEntry]:
        from kward.providers import catalog

        if selection.key == "scripted":
            return [current_entry(selection)]
        provider = selection.provider
        loader = {"codex": catalog.codex_models, "openrouter": catalog.openrouter_models,
                  "openai-compatible": catalog.compat_models}[selection.key]
        key = (selection.key, getattr(provider, "base_url", None))
        return list(self.catalog.get(key, lambda: loader(provider), refresh).entries)

    def openrouter_catalog(self, provider: Any, selection: Selection) -> list[dict[str, Any]]:
        from kward.providers import catalog

        listing = self.catalog.get(("openrouter-catalog", provider.base_url), lambda: catalog.openrouter_catalog(provider))
        return [entry_payload(e, selection) for e in listing.entries]

    def current(self, selection: Selection) -> dict[str, Any]:
        return entry_payload(current_entry(selection), selection)

    def set_model(self, selection: Selection, model: str, provider: str | None) -> None:
        if not _MODEL_ID.match(model):
            raise InvalidParams(f"Invalid model id {model!r}", data={"param": "model"})
        key = provider_key(provider) if provider is not None else selection.key
        values: dict[str, Any] = {MODEL_KEYS[key]: model}
        if key != selection.key:
            values["provider"] = key
        self.config.update(values)

    def set_effort(self, selection: Selection, effort: str, param: str = "effort") -> str:
        try:
            value = validate_effort(effort, current_entry(selection), selection.model)
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
