"""The `memory/*` results of the memory runtime's values (`kward.runtime.memory`). The
memories themselves go out as the store's records (the files' fields, snake_case, as the
original kward and Tauren's memory panel read them). Pure functions, any thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kward.runtime.memory import (
        MemoryInspection,
        MemoryListing,
        MemoryStatus,
        MemoryWhy,
    )


def status(s: MemoryStatus) -> dict[str, Any]:
    """`memory/status`: ``{enabled, autoSummary, paths {core, soft, events}}``."""
    return {"enabled": s.enabled, "autoSummary": s.auto_summary,
            "paths": {"core": str(s.core_path), "soft": str(s.soft_path), "events": str(s.events_path)}}


def listing(m: MemoryListing) -> dict[str, Any]:
    """`memory/list`: every memory and the hierarchy of the workspace."""
    return {"core": m.core, "soft": m.soft, "global_core": m.global_core, "workspace_core": m.workspace_core,
            "workspace_soft": m.workspace_soft, "global_soft": m.global_soft}


def inspection(i: MemoryInspection) -> dict[str, Any]:
    """`memory/inspect`: the status with every memory (forgotten soft ones too)."""
    return {**status(i.status), "core": i.core, "soft": i.soft}


def why(w: MemoryWhy) -> dict[str, Any]:
    """`memory/why`: ``{enabled, timestamp?, scopes?, core, soft, reasons, memories, message,
    explanation}``; `timestamp` and `scopes` only when a retrieval with memory on is explained."""
    s = w.state
    if s is None:
        return {"enabled": w.enabled, "core": [], "soft": [], "reasons": [], "memories": [], "message": w.message,
                "explanation": w.explanation}
    return {"enabled": True, "timestamp": s.timestamp, "scopes": s.scopes, "core": w.core, "soft": w.soft,
            "reasons": list(s.reasons), "memories": w.core + w.soft, "message": w.message,
            "explanation": w.explanation}
