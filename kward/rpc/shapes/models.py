"""models/list, models/current, models/set, reasoning/set, openrouter/catalog: model
entries and listings (docs/protocol.md "Models and reasoning"); `ModelEntry` is also the
`model` of `runtime/state`."""

from __future__ import annotations

from typing import Annotated, TypedDict

from kward.rpc.shapes.base import AN_ADDITION, Doc, Entry, Length


class _ModelEntryRequired(TypedDict):
    provider: Annotated[str, Doc("Codex, OpenRouter, OpenAICompatible or Scripted")]
    id: str
    name: Annotated[str, Doc("display name")]
    reasoning: Annotated[bool, Doc("the model offers reasoning (or it is not known)")]
    reasoningEffort: Annotated[str | None, Doc("current entry: the requested level (`off` when none); "
                                               "other entries: the model's default")]
    contextWindow: Annotated[int | None, Doc("tokens")]
    current: Annotated[bool, Doc("the model turns use now")]
    model: Annotated[str, Doc("the same as `id` (for older clients)")]
    reasoningEfforts: Annotated[list[str] | None, AN_ADDITION,
                                Doc("the levels the model offers, lowest first; [] no reasoning, null unknown")]


class ModelEntry(_ModelEntryRequired, total=False):
    """A model as a listing shows it."""

    effectiveReasoningEffort: Annotated[str, AN_ADDITION, Doc("current entry only, when requests carry another "
                                                              "level than the requested one")]


class _ModelListingRequired(TypedDict):
    models: list[ModelEntry]
    source: Annotated[str, AN_ADDITION, Doc("where the entries came from: api, cache or builtin")]


class ModelListing(_ModelListingRequired, total=False):
    """The models of `models/list` and `openrouter/catalog`."""

    sourceError: Annotated[str, AN_ADDITION, Doc("why a fallback was used")]


class ModelsListParams(TypedDict, total=False):
    refresh: Annotated[bool | None, AN_ADDITION, Doc("skip the cache")]


class _ModelsSetParamsRequired(TypedDict):
    model: Annotated[str, Length(minimum=1, maximum=200),
                     Doc("a model id: letters, digits and `._:/@+-`, at most 200 characters")]


class ModelsSetParams(_ModelsSetParamsRequired, total=False):
    provider: Annotated[str | None, Doc("Codex, OpenRouter, OpenAICompatible or Scripted (any case); default: the "
                                        "active provider")]


class ReasoningSetParams(TypedDict):
    effort: Annotated[str, Doc("off, minimal, low, medium, high, xhigh or max (any case)")]


METHODS = {
    "models/list": Entry(ModelsListParams, ModelListing),
    "models/current": Entry(None, ModelEntry),
    "models/set": Entry(ModelsSetParams, ModelEntry),
    "reasoning/set": Entry(ReasoningSetParams, ModelEntry),
    "openrouter/catalog": Entry(None, ModelListing),
}
