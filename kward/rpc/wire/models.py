"""Model entries and listings: `models/list`, `models/current`, `models/set`,
`reasoning/set`, `openrouter/catalog` and the model of `runtime/state`. Pure functions,
any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kward.providers.model_service import ModelChoice
    from kward.providers.model_service import ModelListing as Listing
    from kward.rpc.shapes.models import ModelEntry, ModelListing


def model_entry(choice: ModelChoice) -> ModelEntry:
    """A model entry (`kward.providers.model_service.ModelChoice`), with the legacy `model`
    and the levels it supports."""
    e = choice.entry
    out: ModelEntry = {"provider": e.provider, "id": e.id, "name": e.name, "reasoning": e.reasoning,
                       "reasoningEffort": choice.reasoning_effort, "contextWindow": e.context_window,
                       "current": choice.current, "model": e.id,
                       "reasoningEfforts": list(e.efforts) if e.efforts is not None else None}
    if choice.effective_effort is not None:
        out["effectiveReasoningEffort"] = choice.effective_effort
    return out


def model_listing(listing: Listing) -> ModelListing:
    """``{models, source, sourceError?}`` of a `ModelListing`."""
    out: ModelListing = {"models": [model_entry(c) for c in listing.models], "source": listing.source}
    if listing.source_error:
        out["sourceError"] = listing.source_error
    return out


