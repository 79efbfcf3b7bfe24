"""What a compaction reports: its result (the `sessions/compact` result) and the session
events of a compaction, `compactionStart` and `compactionEnd` (their payloads). Plain
values, apart from the summarizer's machinery (`kward.compaction.run`), so that the face
can shape them without loading it. Any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

from kward.errors import KwardError


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction did (the `sessions/compact` result)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, list[str]]
    tokens_after: int = 0  # the estimate of the compacted context
    split_turn: bool = False


@dataclass(frozen=True, slots=True)
class CompactionStart:
    """compactionStart: `reason` is manual, threshold or overflow."""

    reason: str


@dataclass(frozen=True, slots=True)
class CompactionEnd:
    """compactionEnd: the result, or `aborted` with the error's message; `will_retry`
    when the model request that overflowed is sent again."""

    result: CompactionResult | None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    error: KwardError | None = field(default=None, compare=False)


#: A session event of a compaction (its payload).
CompactionEvent = Union[CompactionStart, CompactionEnd]
#: The callback of the session events: ``events("compactionStart", CompactionStart)``,
#: ``events("compactionEnd", CompactionEnd)``.
CompactionEmit = Callable[[str, CompactionEvent], None]
