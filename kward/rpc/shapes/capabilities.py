"""The `capabilities` object of the `initialize` result (built by `kward.rpc.capabilities.build`;
docs/protocol.md "initialize") and `runtime/capabilitiesChanged`, which sends it again
("Capabilities changes").

Every group is always present; a group whose methods are not served says
`supported: false` and lists no methods. Groups and fields the original did not have
(../shared/reference/initialize-original.json) are marked additions.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from kward.rpc.shapes.base import ADDITION, AN_ADDITION, Doc, Entry, Range, shape

# --- transcript ---------------------------------------------------------------------------


class TranscriptCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    format: Annotated[str, Doc("tauren-transcript-v1")]
    messagesNormalized: bool
    supportsImages: bool
    supportsToolCalls: bool
    supportsToolResults: bool
    supportsCompactionSummaries: bool
    supportsReasoningRestore: bool


# --- sessions -----------------------------------------------------------------------------


class SessionsListCapability(TypedDict):
    supported: bool
    source: str
    ancestry: bool
    treeFields: bool


class SessionsForkCapability(TypedDict):
    supported: bool
    methods: list[str]
    entryIdFormat: Annotated[str, Doc("message-index")]
    selectedMessage: str


class SessionsCompactCapability(TypedDict):
    supported: bool
    method: str
    notification: str
    events: list[str]


class SupportedOnly(TypedDict):
    """A feature that is there or not."""

    supported: bool


class SessionsTreeCapability(TypedDict):
    supported: bool
    labels: bool
    navigate: bool
    summarize: bool


class SessionsUpdatesCapability(TypedDict):
    supported: bool
    notification: Annotated[str, Doc("session/event (the original reserved session/updated)")]
    events: Annotated[list[str], AN_ADDITION, Doc("the session/event types: sessionUpdated, usageUpdated")]


# functional syntax: one of its keys is `import`, a Python keyword
SessionsCapability = TypedDict("SessionsCapability", {
    "supported": Annotated[bool, AN_ADDITION],
    "mode": str,
    "persistence": str,
    "methods": list[str],
    "list": SessionsListCapability,
    "fork": SessionsForkCapability,
    "compact": SessionsCompactCapability,
    "import": SupportedOnly,
    "tree": SessionsTreeCapability,
    "updates": SessionsUpdatesCapability,
})


# --- turns --------------------------------------------------------------------------------


class BusyInputCapability(TypedDict):
    steer: Annotated[str, Doc("native when the active provider steers a running turn, else unsupported")]
    followUp: Annotated[str, Doc("queue, or unsupported without turns")]
    defaultWhenIdle: str
    defaultWhenBusy: Annotated[str, Doc("steer or followUp")]


class CancellationCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    behavior: str
    queuedTurns: str
    runningTurns: str


class EventReplayCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    behavior: str
    persisted: bool
    limit: Annotated[int, Range(minimum=1), Doc("the events kept per turn")]
    truncation: Annotated[bool, AN_ADDITION, Doc("turns/events says truncated and firstSequence")]


class TurnsCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    mode: str
    perSessionConcurrency: int
    busyInput: BusyInputCapability
    cancellation: CancellationCapability
    eventReplay: EventReplayCapability


# --- events -------------------------------------------------------------------------------


class ReasoningEventsCapability(TypedDict):
    start: bool
    delta: bool
    end: bool


class ModelRetryCapability(TypedDict):
    supported: bool
    event: str


class SteeringCapability(TypedDict):
    supported: bool
    event: str
    mode: Annotated[str, Doc("native or unsupported")]


@shape(stability=ADDITION)
class CompactionEventsCapability(TypedDict):
    """An automatic compaction inside a turn, as the turn's events."""

    supported: bool
    events: list[str]


class ToolEventsCapability(TypedDict):
    call: bool
    update: Annotated[bool, Doc("live output of a running command as toolUpdate events")]
    updateEvent: Annotated[str, AN_ADDITION]
    result: bool
    normalizedMetadata: bool
    diffs: bool
    changedFiles: bool
    changedFilesTools: Annotated[list[str], AN_ADDITION, Doc("the tools whose results carry changedFiles")]


class EventsCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    notification: str
    assistantText: str
    reasoning: ReasoningEventsCapability
    modelRetry: ModelRetryCapability
    steering: SteeringCapability
    compaction: Annotated[CompactionEventsCapability, AN_ADDITION]
    tools: ToolEventsCapability
    errors: bool
    sessionUpdates: bool


# --- attachments, models, runtime, settings -----------------------------------------------


class InputAttachmentsCapability(TypedDict):
    supported: bool
    method: str
    encoding: str
    mimeTypes: list[str]
    maxBytes: int


class AttachmentsCapability(TypedDict):
    input: InputAttachmentsCapability


class ModelsCapability(TypedDict):
    supported: bool
    methods: list[str]
    fields: list[str]
    scopedModels: bool


class RuntimeStatsCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    messageCounts: bool
    tokens: bool
    cost: bool
    contextUsage: bool
    contextUsageEstimated: bool


class RuntimeCapability(TypedDict):
    supported: bool
    methods: list[str]
    state: SupportedOnly
    stats: RuntimeStatsCapability


class RuntimeSettingsCapability(TypedDict):
    supported: bool
    methods: list[str]
    settings: Annotated[list[str], Doc("the settings runtime/updateSetting changes")]


# --- auth, memory, commands ---------------------------------------------------------------


class AuthCapability(TypedDict):
    supported: bool
    providerFormat: str
    methods: list[str]
    oauthProviders: list[str]
    apiKeyProviders: list[str]
    unsupportedOAuthProviders: Annotated[dict[str, str], Doc("provider -> why it cannot log in here")]
    logout: bool
    notification: Annotated[str, AN_ADDITION, Doc("auth/loginFinished")]


class MemoryStorageCapability(TypedDict):
    core: str
    soft: str
    events: str


class MemoryCapability(TypedDict):
    supported: bool
    optIn: bool
    defaultEnabled: bool
    autoSummaryDefaultEnabled: bool
    promptInjection: str
    storage: MemoryStorageCapability
    methods: list[str]
    hierarchy: Annotated[bool, AN_ADDITION]
    scopes: Annotated[list[str], AN_ADDITION]


class CommandsCapability(TypedDict):
    supported: bool
    methods: list[str]
    method: str
    runMethod: str
    sources: list[str]
    executableSources: list[str]


class StartupResourcesCapability(TypedDict):
    supported: bool
    method: str


# --- extension UI, composer ---------------------------------------------------------------


class QuestionCapability(TypedDict):
    supported: bool
    notification: str
    method: str
    maxQuestions: int
    multiSelect: bool
    preview: bool


class ExtensionUiCapability(TypedDict):
    question: QuestionCapability
    select: bool
    confirm: bool
    input: bool
    editor: bool
    widgets: bool
    footer: bool
    custom: bool
    terminalInput: bool


class _SessionDiffCapabilityRequired(TypedDict):
    supported: bool


class SessionDiffCapability(_SessionDiffCapabilityRequired, total=False):
    """Supported: `method` and `event`; not (a server without turns): `reason`."""

    method: Annotated[str, AN_ADDITION, Doc("sessions/diff")]
    event: Annotated[str, AN_ADDITION, Doc("turnDiff")]
    reason: str


class UnsupportedCapability(TypedDict):
    supported: bool
    reason: str


class ComposerCapability(TypedDict):
    sessionDiff: SessionDiffCapability
    copy: UnsupportedCapability


# --- security, hooks ----------------------------------------------------------------------


class _SandboxCapabilityRequired(TypedDict):
    mode: Annotated[str, Doc("off, workspace-write, invalid, or unknown (config.json cannot be read)")]
    available: Annotated[bool | None, Doc("bwrap works here (null: the sandbox is off, not probed)")]
    inForce: Annotated[bool, Doc("shell commands run sandboxed now")]
    network: bool


@shape(stability=ADDITION)
class SandboxCapability(_SandboxCapabilityRequired, total=False):
    """The shell sandbox now (docs/protocol.md "Shell sandbox")."""

    reason: str


class SecurityCapability(TypedDict):
    workspaceMutationGuard: Annotated[str, Doc("none when toolApproval is off, else approval")]
    toolApproval: Annotated[str, Doc("off, ask, readOnly, or invalid (config.json's cannot be used)")]
    serverRequests: Annotated[list[str], AN_ADDITION]
    approvalEvents: Annotated[list[str], AN_ADDITION]
    serverRequestResolved: Annotated[str | None, AN_ADDITION]
    canRunShell: bool
    canWriteFiles: bool
    fileToolsConfinedToWorkspace: Annotated[bool, AN_ADDITION]
    sandbox: Annotated[SandboxCapability, AN_ADDITION]


@shape(stability=ADDITION)
class HooksCapability(TypedDict):
    """Command hooks (docs/protocol.md "Hooks"), their runs reported by notifications."""

    supported: bool
    events: list[str]
    notifications: list[str]
    configured: Annotated[int, Range(minimum=0), Doc("the hooks config.json configures now")]
    invalid: Annotated[bool, Doc("a hooks list cannot be used (model turns fail)")]
    blockExitStatus: int
    maxContextBytes: int


# --- export, logging ----------------------------------------------------------------------


class ExportCapability(TypedDict):
    supported: bool
    formats: list[str]
    defaultFormat: str


class LoggingStatsCapability(TypedDict):
    supported: bool
    method: str
    defaultRange: str
    units: list[str]


class LoggingUsageCsvCapability(TypedDict):
    supported: bool
    method: str
    defaultRange: str
    buckets: list[str]


class LoggingRotationCapability(TypedDict):
    maxBytes: int
    retention: str


class LoggingCapability(TypedDict):
    supported: bool
    defaultEnabled: bool
    methods: list[str]
    stats: LoggingStatsCapability
    usageCsv: LoggingUsageCsvCapability
    config: str
    envPrefix: str
    directory: str
    format: str
    categories: list[str]
    enabledCategories: Annotated[list[str], AN_ADDITION, Doc("the categories enabled now")]
    rotation: LoggingRotationCapability
    content: str


# --- the legacy fields (0.66-era clients) -------------------------------------------------


class LegacySessionCapability(TypedDict):
    supported: Annotated[bool, AN_ADDITION]
    mode: str
    persistence: str


class LegacyUiQuestionCapability(TypedDict):
    supported: bool
    notification: str
    method: str
    maxQuestions: int
    multiSelect: bool


class MethodsCapability(TypedDict):
    supported: bool
    methods: list[str]


class SkillsCapability(TypedDict):
    supported: bool
    tool: str


class ToolsCapability(TypedDict):
    supported: bool
    method: str
    eventMetadata: bool


class McpDiscoveryCapability(TypedDict):
    supported: Annotated[bool, Doc("mcp/status is served")]
    methods: Annotated[list[str], Doc("tools/list and mcp/status")]
    toolMetadata: Annotated[bool, Doc("tools/list and tool events carry metadata {source, serverName, remoteName}")]


class McpCapability(TypedDict):
    discovery: McpDiscoveryCapability
    transports: Annotated[list[str], Doc("the MCP transports kward's client speaks: stdio, http")]
    webSearch: Annotated[bool, Doc("the web_search tool is the model's (config web_search.enabled)")]


# --- rpc (kward's) ------------------------------------------------------------------------


class CapabilitiesChangedCapability(TypedDict):
    supported: bool
    notification: str


class TraceCapability(TypedDict):
    supported: bool
    field: str
    forwardedAs: str


class BackpressureCapability(TypedDict):
    supported: bool
    errorCode: int
    reason: str


class InputLimitsCapability(TypedDict):
    supported: bool
    maxChars: Annotated[int, Range(minimum=0), Doc("0: no limit")]


@shape(stability=ADDITION)
class SchemaCapability(TypedDict):
    supported: bool
    method: Literal["rpc/schema"]


@shape(stability=ADDITION)
class ExperimentalApiCapability(TypedDict):
    """What is sent and served only to a client that passed capabilities.experimentalApi
    (docs/protocol.md "Experimental")."""

    enabled: Annotated[bool, Doc("this client passed experimentalApi: true")]
    methods: list[str]
    fields: Annotated[list[str], Doc("`<notification method> params.<path>`")]
    refusalReason: Literal["experimental_api_required"]


@shape(stability=ADDITION)
class HeartbeatCapability(TypedDict):
    supported: bool
    method: str


class ConnectionCapability(TypedDict):
    transport: Annotated[Literal["stdio", "unix"], Doc("how this client is connected")]
    severalClients: Annotated[bool, Doc("a listening server: other clients may share its runtime")]
    attach: Annotated[bool, Doc("sessions/attach and sessions/detach are served")]
    closeBehaviors: Annotated[list[str], Doc("what initialize's closeBehavior may ask (a listening server only)")]


class RpcCapability(TypedDict):
    """kward's additions to the protocol."""

    batch: bool
    optOutNotificationMethods: bool
    optOutNotificationTypes: bool
    experimentalApi: ExperimentalApiCapability
    initializedNotification: bool
    capabilitiesChanged: CapabilitiesChangedCapability
    trace: TraceCapability
    backpressure: BackpressureCapability
    inputLimits: InputLimitsCapability
    maxFrameBytes: int
    errorReasons: bool
    schema: Annotated[SchemaCapability, Doc("rpc/schema (experimental): the schema over the wire")]
    heartbeat: Annotated[HeartbeatCapability, Doc("$/ping, answered at once even during a busy turn")]
    connection: Annotated[ConnectionCapability, Doc("this client's connection (kward rpc --listen: several clients)")]


# --- the whole object ---------------------------------------------------------------------


class Capabilities(TypedDict):
    """What this server does, derived from its method table (docs/protocol.md "initialize")."""

    framing: Annotated[str, Doc("content-length")]
    asyncTurns: bool
    turnCancellation: Annotated[str | bool, Doc("best-effort, or false without turns/cancel")]
    turnEventReplay: bool
    uiQuestions: bool
    authLogin: bool
    configUpdate: bool
    transcript: TranscriptCapability
    sessions: SessionsCapability
    turns: TurnsCapability
    events: EventsCapability
    attachments: AttachmentsCapability
    models: ModelsCapability
    runtime: RuntimeCapability
    runtimeSettings: RuntimeSettingsCapability
    auth: AuthCapability
    memory: MemoryCapability
    commands: CommandsCapability
    startupResources: StartupResourcesCapability
    extensionUi: ExtensionUiCapability
    composer: ComposerCapability
    security: SecurityCapability
    hooks: Annotated[HooksCapability, AN_ADDITION]
    export: ExportCapability
    logging: LoggingCapability
    session: LegacySessionCapability
    cancellation: CancellationCapability
    eventReplay: EventReplayCapability
    uiQuestion: LegacyUiQuestionCapability
    prompts: MethodsCapability
    skills: SkillsCapability
    tools: ToolsCapability
    mcp: Annotated[McpCapability, AN_ADDITION]
    config: MethodsCapability
    rpc: Annotated[RpcCapability, AN_ADDITION]


@shape(stability=ADDITION)
class RuntimeCapabilitiesChangedParams(TypedDict):
    """What `initialize` would answer now, sent when it differs from what the client last got."""

    capabilities: Capabilities


NOTIFICATIONS = {
    "runtime/capabilitiesChanged": Entry(RuntimeCapabilitiesChangedParams, None, ADDITION),
}
