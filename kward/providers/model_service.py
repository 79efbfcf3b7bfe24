"""The model service: list models and reasoning levels, tell the current one, change them.

The current provider/model/effort always comes from `AgentEngine.selection()` (the
resolved settings); changing them writes config.json (the keys each provider's spec in
`kward.providers.specs` names), after which the next selection picks the change up
(settings are re-resolved when config.json changes). Listings come from the functions the
specs name (`kward.providers.catalog`) through a time-limited `ModelCatalog`; `list_models`
and `openrouter_catalog` say where theirs came from (`source`: api, cache or builtin, and
`sourceError` for a fallback).

Reasoning levels: every level of `EFFORTS` is accepted and stored as requested, for
every model; `request_effort` gives the level a turn's model request carries
(`catalog.effective_effort` for the model, the one place that maps levels), and the
current model entry reports it as `effectiveReasoningEffort` when it differs. `models/set`
keeps the stored level: the mapping adapts it to the new model.

What is known about the current model (name, context window, reasoning levels) comes, in
this order, from a fresh cached listing, the spec's built-in entries, the provider's
listing and then its wider one (only when loading is allowed and the first two do not
know the model), else a bare entry whose levels are unknown.

Thread contract: any thread; `list_models`, `openrouter_catalog`, `describe(load=True)` and
`request_effort` may do network I/O and belong on worker threads. The catalog's lock guards
only its cache; the service holds no other state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Hashable, Sequence

from kward.cancel import CancelToken
from kward.config.store import ConfigStore
from kward.errors import InvalidParams
from kward.providers import specs
from kward.providers.base import Provider
from kward.providers.catalog import (
    ModelCatalog,
    ModelEntry,
    ModelList,
    effective_effort,
    find_entry,
    normalize_effort,
)
from kward.providers.select import Selection
from kward.providers.specs import ProviderSpec

_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,199}$")


def provider_key(label: str, param: str = "provider") -> str:
    """`Codex`, `openrouter`, `OpenAICompatible`, `openai-compatible`, ... -> the selection key."""
    spec = specs.find(label)
    if spec is None:
        raise InvalidParams(f"Unknown provider {label!r}; use one of: {', '.join(s.label for s in specs.PROVIDERS)}",
                            data={"param": param})
    return spec.key


def _model_key(spec: ProviderSpec) -> str:
    """The config key `models/set` writes for a provider (the first of its model keys)."""
    return next(s.key for s in spec.model if s.key)


def _effort_key(spec: ProviderSpec) -> str:
    return next(s.key for s in spec.effort if s.key)


def known_entry(selection: Selection) -> ModelEntry | None:
    """The selected model from the provider's built-in knowledge (the Scripted model,
    whose levels are unknown, always), or None."""
    builtin = selection.spec.builtin
    return specs.builtin(builtin)(selection.model) if builtin else None


def bare_entry(selection: Selection) -> ModelEntry:
    """A model nothing is known about: any reasoning level is passed on."""
    return ModelEntry(selection.label, selection.model, selection.model, None, None, None)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model as a listing shows it: the current one carries the requested level (`off`
    when none) and, when the model does not offer it, the level requests carry
    (`effective_effort`); others their default level."""

    entry: ModelEntry
    current: bool = False
    reasoning_effort: str | None = None
    effective_effort: str | None = None


@dataclass(frozen=True, slots=True)
class ModelListing:
    """`models/list`, `openrouter/catalog`: the models and where they came from (`source`:
    api, cache or builtin; `source_error` why a fallback was used)."""

    models: list[ModelChoice]
    source: str
    source_error: str | None = None


def choice(entry: ModelEntry, selection: Selection) -> ModelChoice:
    """`entry` as listed for `selection` (see ModelChoice)."""
    current = entry.provider == selection.label and entry.id == selection.model
    if not current:
        return ModelChoice(entry, reasoning_effort=entry.default_effort)
    requested = selection.reasoning_effort or "off"
    effective = effective_effort(requested, entry) or "off"
    return ModelChoice(entry, True, requested, effective if effective != requested else None)


def _listed(entries: Sequence[ModelEntry], listing: ModelList, selection: Selection) -> ModelListing:
    return ModelListing([choice(e, selection) for e in entries], listing.origin, listing.error or None)


def _listing_key(selection: Selection) -> tuple[str, str | None]:
    """Cache key of a provider's listing: the provider and its configured base URL."""
    return selection.key, selection.base_url


def _wider_key(spec: ProviderSpec, base_url: str | None) -> tuple[str, str, str | None]:
    return "wider", spec.key, base_url


class ModelService:
    def __init__(self, config: ConfigStore):
        self.config = config
        self.catalog = ModelCatalog()

    def list_models(self, selection: Selection, refresh: bool = False) -> ModelListing:
        """The models of the active provider; the current model is added first when the
        listing lacks it."""
        listing = self._listing(selection, refresh)
        entries = listing.entries
        if find_entry(entries, selection.model) is None:
            entries = [self.describe(selection), *entries]
        return _listed(entries, listing, selection)

    def _listing(self, selection: Selection, refresh: bool = False, cancel: CancelToken | None = None) -> ModelList:
        if selection.spec.listing is None:
            return ModelList([self.describe(selection)], "builtin")
        loader, provider = specs.listing(selection.spec.listing), selection.provider
        return self.catalog.get(_listing_key(selection), lambda: loader(provider, cancel), refresh)

    def _wider_listing(self, spec: ProviderSpec, wider: str, provider: Provider, base_url: str | None,
                       cancel: CancelToken | None = None) -> ModelList:
        loader = specs.listing(wider)
        return self.catalog.get(_wider_key(spec, base_url), lambda: loader(provider, cancel))

    def _cached_entries(self, selection: Selection) -> list[ModelEntry]:
        """Entries of the fresh cached listings for the selected provider (no I/O)."""
        keys: list[Hashable] = [_listing_key(selection)]
        if selection.spec.wider_listing:
            keys.append(_wider_key(selection.spec, selection.base_url))
        out: list[ModelEntry] = []
        for key in keys:
            listing = self.catalog.peek(key)
            out += listing.entries if listing else []
        return out

    def _loaded_entries(self, selection: Selection, cancel: CancelToken | None) -> list[ModelEntry]:
        """Entries that may describe the selected model, loading listings (cached) as needed."""
        spec = selection.spec
        if spec.listing is None:
            return []
        entries = list(self._listing(selection, cancel=cancel).entries)
        if spec.wider_listing and find_entry(entries, selection.model) is None:  # e.g. models the key cannot use yet
            entries += self._wider_listing(spec, spec.wider_listing, selection.provider, selection.base_url,
                                           cancel).entries
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

    def openrouter_catalog(self, provider: Provider, selection: Selection) -> ModelListing:
        """OpenRouter's full public catalog (`provider` is an OpenRouter provider, whichever
        provider is active)."""
        from kward.providers.streaming import (
            StreamingProvider,  # (the HTTP stack: a turn on Scripted never needs it)
        )

        spec = specs.get("openrouter")
        if spec.wider_listing is None or not isinstance(provider, StreamingProvider):
            raise TypeError(f"not an OpenRouter provider: {provider.name}")
        listing = self._wider_listing(spec, spec.wider_listing, provider, provider.settings.base_url)
        return _listed(listing.entries, listing, selection)

    def current(self, selection: Selection, load: bool = False) -> ModelChoice:
        """The current model; no I/O unless `load` (slow methods only)."""
        return choice(self.describe(selection, load), selection)

    def set_model(self, selection: Selection, model: str, provider: str | None) -> None:
        """Write the model (and the provider, for a hint naming another). The stored
        reasoning level is kept: requests map it to what the new model offers."""
        if not _MODEL_ID.match(model):
            raise InvalidParams(f"Invalid model id {model!r}", data={"param": "model"})
        key = provider_key(provider) if provider is not None else selection.key
        values: dict[str, str] = {_model_key(specs.get(key)): model}
        if key != selection.key:
            values["provider"] = key
        self.config.update(values)

    def set_effort(self, selection: Selection, effort: object, param: str = "effort") -> str:
        """Store the requested level (any of `EFFORTS`, case-insensitive) for the active
        provider; InvalidParams naming `param` for anything else, writing nothing."""
        value = normalize_effort(effort, param)
        self.config.update({_effort_key(selection.spec): value})
        return value

    def set_default_model(self, value: object) -> tuple[str, str]:
        """`Provider/model-id` (slashes after the provider kept) -> writes provider and model."""
        provider, sep, model = value.partition("/") if isinstance(value, str) else ("", "", "")
        if not sep or not model:
            raise InvalidParams("defaultModel must look like Provider/model-id", data={"param": "value"})
        spec = specs.get(provider_key(provider, "value"))
        if not _MODEL_ID.match(model):
            raise InvalidParams(f"Invalid model id {model!r}", data={"param": "value"})
        self.config.update({"provider": spec.key, _model_key(spec): model})
        return spec.label, model
