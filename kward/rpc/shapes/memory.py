"""memory/* (docs/protocol.md "Memory"). A memory goes out as the record its file holds
(`kward.memory.records.to_record`): snake_case, as the original kward's."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from kward.rpc.shapes.base import AN_ADDITION, Doc, Entry, Length, shape


class _MemoryRecordRequired(TypedDict):
    id: Annotated[str, Doc("core_001 ..., soft_001 ...")]


@shape(open=True)
class MemoryRecord(_MemoryRecordRequired, total=False):
    """One memory, as its file holds it: the keys of its layer as kward writes them (core:
    id, text, scope, tags, created_at, updated_at, source, pinned; soft: id, text, scope,
    tags, confidence, hits, created_at, updated_at, last_seen_at, ttl_days, source,
    status), and any other key a hand-edited record holds, as it holds it."""

    text: str
    scope: Annotated[str, Doc("global or workspace:<real path>")]
    tags: list[str]
    created_at: str
    updated_at: str
    source: Annotated[str, Doc("core: explicit_user_instruction or promoted_soft_memory; soft: manual or inferred")]
    pinned: Annotated[bool, Doc("core memories")]
    confidence: Annotated[float, Doc("soft memories: 0 to 1")]
    hits: int
    last_seen_at: str
    ttl_days: float
    status: Annotated[str, Doc("soft memories: active or forgotten")]


class MemoryPaths(TypedDict):
    core: str
    soft: str
    events: str


class MemoryStatus(TypedDict):
    """The memory switches and the store's files."""

    enabled: bool
    autoSummary: bool
    paths: MemoryPaths


class MemoryListParams(TypedDict, total=False):
    workspaceRoot: Annotated[str | None, Doc("the workspace of the hierarchy fields")]
    includeInactive: Annotated[bool | None, Doc("include forgotten soft memories")]


class MemoryListResult(TypedDict):
    core: list[MemoryRecord]
    soft: list[MemoryRecord]
    global_core: list[MemoryRecord]
    workspace_core: list[MemoryRecord]
    workspace_soft: list[MemoryRecord]
    global_soft: Annotated[list[MemoryRecord], AN_ADDITION]


class _MemoryAddParamsRequired(TypedDict):
    text: Annotated[str, Length(maximum=20_000)]


class MemoryAddParams(_MemoryAddParamsRequired, total=False):
    scope: Annotated[str | None, Length(maximum=10_000), Doc("global (the default), workspace or "
                                                             "workspace:<absolute path>")]
    tags: Annotated[list[Annotated[str, Length(maximum=1000)]], Length(maximum=100)] | None
    workspaceRoot: Annotated[str | None, Doc("the workspace of scope `workspace`")]


class MemoryRecordResult(TypedDict):
    memory: MemoryRecord


class MemoryIdParams(TypedDict):
    id: Annotated[str, Length(maximum=100)]


class MemoryRelaxParams(MemoryIdParams, total=False):
    workspaceRoot: Annotated[str | None, Doc("its new scope")]


class MemoryForgetResult(TypedDict):
    forgotten: bool


class MemoryInspectResult(MemoryStatus):
    core: list[MemoryRecord]
    soft: Annotated[list[MemoryRecord], Doc("forgotten ones too")]


class MemoryWhyParams(TypedDict, total=False):
    sessionId: str | None


@shape(open=True)
class MemoryWhyReason(TypedDict, total=False):
    """Why a memory was chosen, as the session file keeps it."""

    id: str
    layer: Annotated[str, Doc("core or soft")]
    score: float
    reasons: list[str]


class _MemoryWhyResultRequired(TypedDict):
    enabled: bool
    core: list[MemoryRecord]
    soft: list[MemoryRecord]
    reasons: list[MemoryWhyReason]
    memories: Annotated[list[MemoryRecord], Doc("core then soft")]
    message: str
    explanation: str


class MemoryWhyResult(_MemoryWhyResultRequired, total=False):
    """The last retrieval explained; `timestamp` and `scopes` only when one with memory on
    is explained."""

    timestamp: Annotated[Any, Doc("as the session file keeps it (kward writes an ISO 8601 time)")]
    scopes: Annotated[Any, Doc("as the session file keeps it (kward writes an array of scopes)")]


class MemorySummarizeParams(TypedDict):
    sessionId: str


class MemorySummarizeResult(TypedDict):
    memories: Annotated[list[MemoryRecord], Doc("the new ones")]


METHODS = {
    "memory/status": Entry(None, MemoryStatus),
    "memory/enable": Entry(None, MemoryStatus),
    "memory/disable": Entry(None, MemoryStatus),
    "memory/autoSummary/enable": Entry(None, MemoryStatus),
    "memory/autoSummary/disable": Entry(None, MemoryStatus),
    "memory/list": Entry(MemoryListParams, MemoryListResult),
    "memory/add": Entry(MemoryAddParams, MemoryRecordResult),
    "memory/addCore": Entry(MemoryAddParams, MemoryRecordResult),
    "memory/forget": Entry(MemoryIdParams, MemoryForgetResult),
    "memory/promote": Entry(MemoryIdParams, MemoryRecordResult),
    "memory/relax": Entry(MemoryRelaxParams, MemoryRecordResult),
    "memory/inspect": Entry(None, MemoryInspectResult),
    "memory/why": Entry(MemoryWhyParams, MemoryWhyResult),
    "memory/summarize": Entry(MemorySummarizeParams, MemorySummarizeResult),
}
