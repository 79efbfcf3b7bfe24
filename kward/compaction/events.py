"""What a compaction reports: its result (the `sessions/compact` result) and the session
events of a compaction, `compactionStart` and `compactionEnd` (their payloads). Plain
values, apart from the summarizer's machinery (`kward.compaction.run`), so that the face
can shape them without loading it. The values themselves are turn event payloads too,
so they live in `kward.model` (imports point down) and are named here as well. Any thread.
"""

from __future__ import annotations

from typing import Callable, Union

from kward.model import CompactionEnd, CompactionResult, CompactionStart

__all__ = ["CompactionResult", "CompactionStart", "CompactionEnd", "CompactionEvent", "CompactionEmit"]


#: A session event of a compaction (its payload).
CompactionEvent = Union[CompactionStart, CompactionEnd]
#: The callback of the session events: ``events("compactionStart", CompactionStart)``,
#: ``events("compactionEnd", CompactionEnd)``.
CompactionEmit = Callable[[str, CompactionEvent], None]
