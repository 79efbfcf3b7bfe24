"""The `memory/*` results of the memory runtime's values (`kward.runtime.memory`). A
memory goes out as the record its file holds (`kward.memory.records.to_record`: the
files' fields, snake_case, as the original kward and Tauren's memory panel read them).
Pure functions, any thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from kward.memory.records import Memory, to_record

if TYPE_CHECKING:  # pragma: no cover
    from kward.rpc.shapes.memory import (
        MemoryInspectResult,
        MemoryListResult,
        MemoryRecord,
        MemoryWhyReason,
        MemoryWhyResult,
    )
    from kward.rpc.shapes.memory import MemoryStatus as MemoryStatusShape
    from kward.runtime.memory import (
        MemoryInspection,
        MemoryListing,
        MemoryStatus,
        MemoryWhy,
    )


def memory(m: Memory) -> MemoryRecord:
    """One memory: its record (an open shape: a hand-edited record's other keys ride along)."""
    return cast("MemoryRecord", to_record(m))


def memories(items: Iterable[Memory]) -> list[MemoryRecord]:
    return [memory(m) for m in items]


def status(s: MemoryStatus) -> MemoryStatusShape:
    """`memory/status`: ``{enabled, autoSummary, paths {core, soft, events}}``."""
    return {"enabled": s.enabled, "autoSummary": s.auto_summary,
            "paths": {"core": str(s.core_path), "soft": str(s.soft_path), "events": str(s.events_path)}}


def listing(m: MemoryListing) -> MemoryListResult:
    """`memory/list`: every memory and the hierarchy of the workspace."""
    return {"core": memories(m.core), "soft": memories(m.soft), "global_core": memories(m.global_core),
            "workspace_core": memories(m.workspace_core), "workspace_soft": memories(m.workspace_soft),
            "global_soft": memories(m.global_soft)}


def inspection(i: MemoryInspection) -> MemoryInspectResult:
    """`memory/inspect`: the status with every memory (forgotten soft ones too)."""
    return {**status(i.status), "core": memories(i.core), "soft": memories(i.soft)}


def why(w: MemoryWhy) -> MemoryWhyResult:
    """`memory/why`: ``{enabled, timestamp?, scopes?, core, soft, reasons, memories, message,
    explanation}``; `timestamp` and `scopes` only when a retrieval with memory on is explained."""
    s = w.state
    if s is None:
        return {"enabled": w.enabled, "core": [], "soft": [], "reasons": [], "memories": [], "message": w.message,
                "explanation": w.explanation}
    core, soft = memories(w.core), memories(w.soft)
    return {"enabled": True, "timestamp": s.timestamp, "scopes": s.scopes, "core": core, "soft": soft,
            "reasons": [cast("MemoryWhyReason", dict(r)) for r in s.reasons], "memories": core + soft, "message": w.message,
            "explanation": w.explanation}
