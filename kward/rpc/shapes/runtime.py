"""runtime/state, runtime/stats, runtime/updateSetting, runtime/reload (docs/protocol.md
"Runtime methods"); the capabilities and `runtime/capabilitiesChanged` are
`kward.rpc.shapes.capabilities`'."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, AN_ADDITION, Doc, Entry, shape
from kward.rpc.shapes.models import ModelEntry


class RuntimeSessionParams(TypedDict):
    sessionId: Annotated[str, Doc("RPC session id")]


class RuntimeSessionIds(TypedDict):
    """The ids of `runtime/state` and `runtime/stats`."""

    sessionFile: Annotated[str, Doc("path of the session file")]
    sessionId: Annotated[str, Doc("the persistent id (legacy name)")]
    sessionName: str | None
    rpcSessionId: str
    persistentSessionId: str


@shape(stability=ADDITION)
class RuntimeProviderError(TypedDict):
    reason: str
    message: str


class _RuntimeStateResultRequired(RuntimeSessionIds):
    isStreaming: Annotated[bool, Doc("a turn of this session's file runs now (through any id)")]
    isCompacting: bool
    followUpMode: Literal["one-at-a-time"]
    autoCompactionEnabled: bool
    autoCompactionReserveTokens: int
    workspaceGuardrailsEnabled: bool
    hideThinkingBlock: bool
    quietStartup: bool
    transport: Literal["kward-rpc"]
    imageAutoResize: bool
    blockImages: bool
    enabledModels: list[str]
    enableSkillCommands: bool
    messageCount: Annotated[int, Doc("live non-system messages")]
    pendingMessageCount: Annotated[int, Doc("turns queued behind the running one")]
    workspaceRoot: Annotated[str, AN_ADDITION]
    model: Annotated[ModelEntry | None, Doc("the current model entry; null when no provider can be set up")]
    thinkingLevel: Annotated[str | None, Doc("the requested reasoning level (`off` when none)")]
    steeringMode: Literal["in-flight", "one-at-a-time"]
    autoRetryEnabled: bool
    defaultProvider: str | None
    defaultModel: Annotated[str | None, Doc("Provider/model-id")]
    defaultThinkingLevel: str | None


class RuntimeStateResult(_RuntimeStateResultRequired, total=False):
    effectiveThinkingLevel: Annotated[str, AN_ADDITION, Doc("the level requests carry, only when it differs")]
    providerReason: Annotated[str, AN_ADDITION, Doc("why this provider was chosen (when one could be)")]
    providerError: Annotated[RuntimeProviderError | None, AN_ADDITION,
                             Doc("why no provider can be set up (the model fields are then null)")]


class RuntimeMessageCounts(TypedDict):
    userMessages: int
    assistantMessages: int
    toolCalls: int
    toolResults: int
    totalMessages: int


class RuntimeTokenTotals(TypedDict):
    """Cumulative provider usage over the whole session."""

    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    reasoning: int
    total: int


class RuntimeContextUsage(TypedDict):
    """An estimate of the next request's size."""

    tokens: int
    contextWindow: int
    percent: float
    estimated: bool


class _RuntimeStatsResultRequired(RuntimeSessionIds, RuntimeMessageCounts):
    tokens: Annotated[RuntimeTokenTotals, AN_ADDITION]
    autoCompactionEnabled: Annotated[bool, AN_ADDITION]


class RuntimeStatsResult(_RuntimeStatsResultRequired, total=False):
    cost: Annotated[float, AN_ADDITION, Doc("cumulative cost in USD, rounded to 6 decimals, when reported")]
    contextUsage: Annotated[RuntimeContextUsage, Doc("absent for an empty conversation or an unknown context window")]


class RuntimeUpdateSettingParams(TypedDict):
    sessionId: Annotated[str, Doc("RPC session id (must be open)")]
    settingId: Annotated[str, Doc("defaultModel, defaultThinkingLevel or (an addition) approvalMode")]
    value: str


class RuntimeUpdateSettingResult(TypedDict):
    applied: Literal["live"]
    message: str


class RuntimeReloadResult(TypedDict):
    ok: bool
    message: str


METHODS = {
    "runtime/state": Entry(RuntimeSessionParams, RuntimeStateResult),
    "runtime/stats": Entry(RuntimeSessionParams, RuntimeStatsResult),
    "runtime/updateSetting": Entry(RuntimeUpdateSettingParams, RuntimeUpdateSettingResult),
    "runtime/reload": Entry(RuntimeSessionParams, RuntimeReloadResult),
}
