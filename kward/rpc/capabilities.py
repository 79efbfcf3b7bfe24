"""The `initialize` capabilities, derived from what is actually implemented.

Every group of the spec (and the legacy compatibility fields) is always present. A group
is `supported: true` only when its methods are in the method table; a method is listed
only when it exists. `tests/rpc/test_capabilities.py` checks both directions. Facts that do
not follow from the method table (e.g. the steering mode of the active provider) are
passed in by the caller: `facts(info)` reads them from what the runtime announces
(`kward.runtime.startup.RuntimeInfo`), for `initialize` and for
`runtime/capabilitiesChanged` alike (`kward.rpc.connection`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, NamedTuple, cast

from kward.config.rules import HOOK_EVENTS
from kward.rpc import experimental
from kward.config.settings import RpcSettings
from kward.limits import (
    EVENT_REPLAY_LIMIT,
    HOOK_OUTPUT_BYTES,
    IMAGE_MIME_TYPES,
    LOG_ROTATION_BYTES,
    MAX_IMAGE_BYTES,
)

if TYPE_CHECKING:  # pragma: no cover
    from kward.runtime.startup import RuntimeInfo
    from kward.rpc.shapes.capabilities import (
        Capabilities,
        CancellationCapability,
        EventReplayCapability,
        QuestionCapability,
        SandboxCapability,
    )
    from kward.sandbox import SandboxStatus

SESSION_METHODS = ("sessions/create", "sessions/resume", "sessions/list", "sessions/rename", "sessions/clone",
                   "sessions/compact", "sessions/forkMessages", "sessions/fork", "sessions/export",
                   "sessions/delete", "sessions/close", "sessions/transcript", "sessions/diff")
MODEL_METHODS = ("models/list", "models/current", "models/set", "reasoning/set", "openrouter/catalog")
RUNTIME_METHODS = ("runtime/state", "runtime/stats")
RUNTIME_SETTING_METHODS = ("runtime/updateSetting", "runtime/reload")
AUTH_METHODS = ("auth/status", "auth/providers", "auth/loginWithApiKey", "auth/logoutProvider",
                "auth/loginWithOAuth", "auth/startOpenAILogin", "auth/submitOpenAICode", "auth/loginStatus")
MEMORY_METHODS = ("memory/status", "memory/enable", "memory/disable", "memory/autoSummary/enable",
                  "memory/autoSummary/disable", "memory/list", "memory/add", "memory/addCore", "memory/forget",
                  "memory/promote", "memory/relax", "memory/inspect", "memory/why", "memory/summarize")
COMMAND_METHODS = ("commands/list", "commands/run")
PROMPT_METHODS = ("prompts/list", "prompts/expand")
CONFIG_METHODS = ("config/read", "config/update")
LOGGING_METHODS = ("logging/stats", "logging/tokenCsv")
# the tools whose results carry `changedFiles` (normalized names; a test runs each): edit and
# write the file they wrote, bash what the command changed (kward.tools.changes)
CHANGED_FILES_TOOLS = ("edit", "write", "bash")
APPROVAL_REQUEST = "tool/requestApproval"  # the server request of kward.rpc.approvals


class RuntimeFacts(NamedTuple):
    """What the method table cannot tell: filled in by the caller."""

    steering: str = "unsupported"  # "native" when the active provider steers in flight
    logs_dir: str = "~/.kward/logs"
    max_frame_bytes: int = RpcSettings().max_frame_bytes
    max_input_chars: int = 0
    tokens_stats: bool = False
    cost_stats: bool = False
    logging_categories: tuple[str, ...] = ()  # the telemetry categories enabled now
    sandbox: SandboxStatus | None = None  # the shell sandbox (None: not known, config.json unreadable)
    approval_mode: str = "off"  # security.approvalMode in force for sessions without an override
    experimental_client: bool = False  # the client passed capabilities.experimentalApi: true
    listening: bool = False  # this client is a connection of a listening server (kward rpc --listen)
    hooks: int = 0  # command hooks configured (config `hooks`)
    hooks_problem: bool = False  # a `hooks.<event>` cannot be used (model turns fail)
    web_search: bool = True  # config web_search.enabled is not false


def facts(info: RuntimeInfo) -> RuntimeFacts:
    """The facts of a runtime that announced `info` (`Runtime.info()`)."""
    return RuntimeFacts(steering="native" if info.steering else "unsupported", tokens_stats=True, cost_stats=True,
                        logs_dir=info.logs_dir, max_frame_bytes=info.max_frame_bytes,
                        max_input_chars=info.max_input_chars, logging_categories=info.logging_categories,
                        sandbox=info.sandbox, hooks=info.hooks, hooks_problem=info.hooks_problem,
                        web_search=info.web_search,
                        approval_mode="invalid" if info.approval_problem else info.approval_mode or "off")


def _sandbox(status: SandboxStatus | None, turns_ok: bool) -> SandboxCapability:
    """The `security.sandbox` capability: {mode, available, inForce, network, reason?}."""
    if status is None:
        return {"mode": "unknown", "available": False, "inForce": False, "network": True,
                "reason": "config.json cannot be read"}
    payload = cast("SandboxCapability", status.wire())  # kward.sandbox's words, the shape's keys
    if not turns_ok:  # no shell commands run here at all
        payload["inForce"] = False
    return payload


def build(methods: Iterable[str], facts: RuntimeFacts = RuntimeFacts()) -> Capabilities:
    served = set(methods)
    # an experimental method is not served to a client that did not ask for them
    names = served if facts.experimental_client else served - experimental.METHODS

    def has(*ms: str) -> bool:
        return all(m in names for m in ms)

    def present(ms: Iterable[str]) -> list[str]:
        return [m for m in ms if m in names]

    sessions = present(SESSION_METHODS)
    turns_ok = has("turns/start")
    approval = facts.approval_mode if turns_ok else "off"
    cancel_ok = has("turns/cancel")
    replay_ok = has("turns/events")
    question_ok = has("ui/answerQuestion")
    steer = facts.steering if turns_ok else "unsupported"
    cancellation: CancellationCapability = {"supported": cancel_ok, "behavior": "best-effort", "queuedTurns": "cancel-before-run",
                    "runningTurns": "interrupt-at-next-safe-point"}
    # (kward's addition: `truncation`, turns/events says `truncated` and `firstSequence`)
    replay: EventReplayCapability = {"supported": replay_ok, "behavior": "recent-in-memory", "persisted": False,
              "limit": EVENT_REPLAY_LIMIT, "truncation": replay_ok}
    question: QuestionCapability = {"supported": question_ok, "notification": "ui/question", "method": "ui/answerQuestion",
                "maxQuestions": 4, "multiSelect": False, "preview": False}
    transcript_ok = has("sessions/transcript")
    diff_ok = turns_ok and has("sessions/diff")  # (turnDiff comes with turns)
    memory = present(MEMORY_METHODS)
    auth = present(AUTH_METHODS)
    caps: Capabilities = {
        "framing": "content-length",
        "asyncTurns": turns_ok,
        "turnCancellation": "best-effort" if cancel_ok else False,
        "turnEventReplay": replay_ok,
        "uiQuestions": question_ok,
        "authLogin": has("auth/startOpenAILogin") or has("auth/loginWithApiKey"),
        "configUpdate": has("config/update"),
        "transcript": {
            "supported": transcript_ok, "format": "tauren-transcript-v1", "messagesNormalized": transcript_ok,
            "supportsImages": transcript_ok, "supportsToolCalls": transcript_ok,
            "supportsToolResults": transcript_ok, "supportsCompactionSummaries": transcript_ok,
            "supportsReasoningRestore": transcript_ok,
        },
        "sessions": {
            "supported": bool(sessions), "mode": "explicit", "persistence": "jsonl", "methods": sessions,
            "list": {"supported": has("sessions/list"), "source": "rpc", "ancestry": has("sessions/list"),
                     "treeFields": has("sessions/list")},
            "fork": {"supported": has("sessions/forkMessages", "sessions/fork"),
                     "methods": present(("sessions/forkMessages", "sessions/fork")),
                     "entryIdFormat": "message-index", "selectedMessage": "excludedFromForkComposerTextReturned"},
            "compact": {"supported": has("sessions/compact"), "method": "sessions/compact",
                        "notification": "session/event", "events": ["compactionStart", "compactionEnd"]},
            "import": {"supported": False},
            "tree": {"supported": False, "labels": False, "navigate": False, "summarize": False},
            # (kward's: the original reserved `session/updated`; these ride on `session/event`)
            "updates": {"supported": bool(sessions), "notification": "session/event",
                        "events": ["sessionUpdated", "usageUpdated"] if sessions else []},
        },
        "turns": {
            "supported": turns_ok, "mode": "async", "perSessionConcurrency": 1,
            "busyInput": {"steer": steer, "followUp": "queue" if turns_ok else "unsupported",
                          "defaultWhenIdle": "newTurn", "defaultWhenBusy": "steer" if steer == "native" else "followUp"},
            "cancellation": cancellation,
            "eventReplay": replay,
        },
        "events": {
            "supported": turns_ok, "notification": "turn/event", "assistantText": "assistantDelta",
            "reasoning": {"start": False, "delta": turns_ok, "end": False},
            "modelRetry": {"supported": turns_ok, "event": "modelRetry"},
            "steering": {"supported": steer == "native", "event": "turnSteered", "mode": steer},
            # (kward's: an automatic compaction inside a turn, also as the turn's events)
            "compaction": {"supported": turns_ok, "events": ["compactionStart", "compactionEnd"] if turns_ok else []},
            # `update`: live output of a running shell command (and plugin command progress) as
            # `toolUpdate` events (`updateEvent` names it), beyond the original (docs/protocol.md
            # "Live tool output"; not produced for a client that opted out of it);
            # `changedFiles` means changed-file detection for every tool that changes files, the
            # shell included (git status or a bounded snapshot before and after each command)
            "tools": {"call": turns_ok, "update": turns_ok, "updateEvent": "toolUpdate", "result": turns_ok,
                      "normalizedMetadata": turns_ok,
                      "diffs": turns_ok, "changedFiles": turns_ok,
                      "changedFilesTools": list(CHANGED_FILES_TOOLS) if turns_ok else []},
            "errors": turns_ok,
            "sessionUpdates": bool(sessions),
        },
        "attachments": {"input": {"supported": turns_ok, "method": "turns/start", "encoding": "base64",
                                  "mimeTypes": list(IMAGE_MIME_TYPES), "maxBytes": MAX_IMAGE_BYTES}},
        "models": {"supported": bool(present(MODEL_METHODS)), "methods": present(MODEL_METHODS),
                   "fields": ["provider", "id", "name", "reasoning", "reasoningEffort", "contextWindow"],
                   "scopedModels": False},
        "runtime": {"supported": bool(present(RUNTIME_METHODS)), "methods": present(RUNTIME_METHODS),
                    "state": {"supported": has("runtime/state")},
                    "stats": {"supported": has("runtime/stats"), "messageCounts": has("runtime/stats"),
                              "tokens": facts.tokens_stats and has("runtime/stats"),
                              "cost": facts.cost_stats and has("runtime/stats"),
                              "contextUsage": has("runtime/stats"), "contextUsageEstimated": has("runtime/stats")}},
        "runtimeSettings": {"supported": bool(present(RUNTIME_SETTING_METHODS)),
                            "methods": present(RUNTIME_SETTING_METHODS),
                            "settings": ["defaultModel", "defaultThinkingLevel", "approvalMode"]
                            if has("runtime/updateSetting") else []},
        "auth": {"supported": bool(auth), "providerFormat": "tauren-auth-v1", "methods": auth,
                 "oauthProviders": ["openai"] if has("auth/startOpenAILogin") or has("auth/loginWithOAuth") else [],
                 "apiKeyProviders": ["openrouter"] if has("auth/loginWithApiKey") else [],
                 "unsupportedOAuthProviders": {"github": "GitHub Copilot login is not offered by this kward."},
                 "logout": has("auth/logoutProvider"),
                 "notification": "auth/loginFinished"},
        "memory": {"supported": bool(memory), "optIn": True, "defaultEnabled": False,
                   "autoSummaryDefaultEnabled": False, "promptInjection": "interactive",
                   "storage": {"core": "json", "soft": "jsonl", "events": "jsonl"}, "methods": memory,
                   "hierarchy": has("memory/list"), "scopes": ["global", "workspace"] if memory else []},
        "commands": {"supported": has("commands/list"), "methods": present(COMMAND_METHODS),
                     "method": "commands/list", "runMethod": "commands/run",
                     "sources": ["prompt", "skill", "plugin"] if has("commands/list") else [],
                     "executableSources": ["plugin"] if has("commands/run") else []},
        "startupResources": {"supported": has("resources/startup"), "method": "resources/startup"},
        "extensionUi": {"question": question, "select": False, "confirm": False, "input": False, "editor": False,
                        "widgets": False, "footer": False, "custom": False, "terminalInput": False},
        # beyond the original: a turn's changes (turnDiff) and the session's (sessions/diff)
        "composer": {"sessionDiff": {"supported": True, "method": "sessions/diff", "event": "turnDiff"} if diff_ok
                     else {"supported": False, "reason": "interactiveComposerOnly"},
                     "copy": {"supported": False, "reason": "clientClipboardOwnedByUi"}},
        # toolApproval: the approval mode (kward.agent.approval) of a session without its own
        # (runtime/updateSetting approvalMode); "invalid": config.json's cannot be used, turns fail
        "security": {"workspaceMutationGuard": "none" if approval == "off" else "approval",
                     "toolApproval": approval,
                     "serverRequests": [APPROVAL_REQUEST] if turns_ok else [],
                     "approvalEvents": ["approvalRequested", "approvalResolved"] if turns_ok else [],
                     "serverRequestResolved": "serverRequest/resolved" if turns_ok else None,
                     "canRunShell": turns_ok, "canWriteFiles": turns_ok,
                     # file tools stay inside the workspace (symlinks resolved); the shell does not
                     "fileToolsConfinedToWorkspace": turns_ok,
                     # the shell: under bwrap with security.sandbox workspace-write (kward.sandbox)
                     "sandbox": _sandbox(facts.sandbox, turns_ok)},
        # beyond the original: command hooks (kward.agent.hooks), their runs reported by notifications
        "hooks": {"supported": turns_ok, "events": list(HOOK_EVENTS) if turns_ok else [],
                  "notifications": ["hook/started", "hook/completed"] if turns_ok else [],
                  "configured": facts.hooks if turns_ok else 0, "invalid": turns_ok and facts.hooks_problem,
                  "blockExitStatus": 2, "maxContextBytes": HOOK_OUTPUT_BYTES},
        "export": {"supported": has("sessions/export"), "formats": ["markdown", "html"] if has("sessions/export") else [],
                   "defaultFormat": "markdown"},
        "logging": {"supported": bool(present(LOGGING_METHODS)), "defaultEnabled": False,
                    "methods": present(LOGGING_METHODS),
                    "stats": {"supported": has("logging/stats"), "method": "logging/stats", "defaultRange": "1 week",
                              "units": ["minutes", "hours", "days", "weeks", "months", "years"]},
                    "usageCsv": {"supported": has("logging/tokenCsv"), "method": "logging/tokenCsv",
                                 "defaultRange": "1 week",
                                 "buckets": ["second", "minute", "hour", "day", "week", "month", "year"]},
                    "config": "logging", "envPrefix": "KWARD_LOGGING",
                    "directory": facts.logs_dir, "format": "jsonl",
                    "categories": ["tokens", "performance", "tools", "errors"],
                    "enabledCategories": list(facts.logging_categories) if has("logging/stats") else [],
                    "rotation": {"maxBytes": LOG_ROTATION_BYTES, "retention": "manual"}, "content": "redacted-metadata-only"},
        # legacy compatibility fields (0.66-era clients)
        "session": {"supported": bool(sessions), "mode": "explicit", "persistence": "jsonl"},
        "cancellation": cancellation,
        "eventReplay": replay,
        "uiQuestion": {"supported": question["supported"], "notification": question["notification"],
                       "method": question["method"], "maxQuestions": question["maxQuestions"],
                       "multiSelect": question["multiSelect"]},
        "prompts": {"supported": has("prompts/list"), "methods": present(PROMPT_METHODS)},
        "skills": {"supported": has("commands/list"), "tool": "read_skill"},
        "tools": {"supported": has("tools/list"), "method": "tools/list", "eventMetadata": turns_ok},
        "mcp": {"discovery": {"supported": has("mcp/status"), "methods": present(("tools/list", "mcp/status")),
                              "toolMetadata": has("tools/list")},
                "transports": ["stdio", "http"], "webSearch": turns_ok and facts.web_search},
        "config": {"supported": bool(present(CONFIG_METHODS)), "methods": present(CONFIG_METHODS)},
        # kward's additions to the protocol (docs/protocol.md)
        "rpc": {"batch": False, "optOutNotificationMethods": True, "optOutNotificationTypes": True,
                # what is sent and served only with capabilities.experimentalApi (kward.rpc.experimental)
                "experimentalApi": {"enabled": facts.experimental_client, "methods": experimental.methods(),
                                    "fields": experimental.fields(), "refusalReason": experimental.REASON},
                "initializedNotification": True,
                "capabilitiesChanged": {"supported": True, "notification": "runtime/capabilitiesChanged"},
                "trace": {"supported": turns_ok, "field": "trace", "forwardedAs": "traceparent"},
                "backpressure": {"supported": turns_ok, "errorCode": -32001, "reason": "overloaded"},
                "inputLimits": {"supported": turns_ok and facts.max_input_chars > 0,
                                "maxChars": facts.max_input_chars},
                "maxFrameBytes": facts.max_frame_bytes,
                "errorReasons": True,
                # the protocol's JSON Schema over the wire (experimental), as `kward rpc --print-schema` prints it
                "schema": {"supported": has("rpc/schema"), "method": "rpc/schema"},
                "heartbeat": {"supported": has("$/ping"), "method": "$/ping"},
                "connection": {"transport": "unix" if facts.listening else "stdio", "severalClients": facts.listening,
                               "attach": has("sessions/attach", "sessions/detach"),
                               "closeBehaviors": ["keepTurns", "cancelTurns"] if facts.listening else []}},
    }
    return caps
