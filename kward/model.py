"""The typed core model: conversation messages, their content parts, tool calls and
results, token usage and turn events.

These flow from the providers through the agent loop into the session store and out to
the faces. Two converters sit at the edges and nowhere else: `kward.sessions.codec` (to
and from the JSONL records of session files) and `kward.rpc.wire` (to the protocol's
payloads, Tauren's legacy shapes included). Core code reads fields, never record keys.

Messages, one class per role (`Message` is their union):

- `UserMessage`: `content` (text, or text and image parts), `display` (what the user
  typed when `content` is its expansion, e.g. a prompt template's `/name args`);
- `AssistantMessage`: text `content` (other writers may have put thinking parts and tool
  call parts in it), the `reasoning` summary, `tool_calls`, `usage`, `provider`, `model`,
  `interrupted` and `error` (a partial answer kept when a model call was cancelled or
  failed), `extras`: provider fields the next request replays (Codex
  `reasoning_items`, OpenRouter `reasoning_details`), and `other_calls` (below);
- `ToolResultMessage`: `tool_call_id`, `name`, `content`, `is_error` (None: derived from
  the text, `is_error_text`, as kward always did), `other_call_id` and `other_name`;
- `CompactionSummary`: `summary`, `first_kept_entry_id`, `tokens_before`, `details`;
- `SystemMessage`: `content` (role `system`, or `developer` from other writers);
- `OtherMessage`: a role kward does not know, kept as it was written.

`role` names the kind: `user`, `assistant`, `tool`, `compactionSummary`, `system` or
`developer`, or the unknown role of an `OtherMessage`.

Every message has `extras` (record keys it does not interpret: a v2 file's `id`,
`from_hook`, provider fields; written back as they were) and `record`, the record it was
decoded from (None for a message built in this process, and for a record of the plain
shapes the codec would write again as it was): the codec writes a loaded message back as
that record, so a clone or fork copies old records byte for byte.
`record` takes no part in equality.

Other writers' names for kward's fields: `other_calls` (a ``toolCalls`` list, read when
there is no ``tool_calls``), `other_call_id` (``toolCallId``, when there is no
``tool_call_id``) and `other_name` (``toolName``/``tool_name``, when there is no
``name``). kward has always shown them (transcripts, via `shown_calls`, `shown_call_id`
and `shown_name`) and tracked reads by the calls, but never sent them to a model, counted
or exported them, since they are not its own: those go by `tool_calls`, `tool_call_id`
and `name` only, and still do, so that no old session shows differently.

Content is a `str` or a tuple of parts: `TextPart`, `ImagePart`, `ThinkingPart`,
`ToolCall` (inside content only from other writers) and `OtherPart` (anything else).

All classes are slotted dataclasses. They are not frozen (a frozen dataclass is built
through `object.__setattr__`, and messages and events are built in the hot paths: a
session load decodes every line, a turn streams thousands of events), but their instances
are values shared between the live conversation, clones, forks and events: nothing
changes one after it was built (the one exception: `Usage` while a provider fills it in,
before its message exists). Pure data, any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, Union

from kward.values import EMPTY

if TYPE_CHECKING:  # pragma: no cover
    from kward.errors import KwardError

# --- content parts -----------------------------------------------------------------------

@dataclass(slots=True)
class TextPart:
    text: str


@dataclass(slots=True)
class ImagePart:
    """An image: raw base64 `data` with its `mime_type`, or a (data:) `url`; `alt` and
    `path` name it for people."""

    data: str | None = None
    mime_type: str | None = None
    alt: str | None = None
    path: str | None = None
    url: str | None = None


@dataclass(slots=True)
class ThinkingPart:
    thinking: str


@dataclass(slots=True)
class OtherPart:
    """A content part kward does not interpret (kept as written); `text` is its text, if
    it has one."""

    value: object
    text: str | None = None


@dataclass(slots=True)
class ToolCall:
    """A tool call of the model. `arguments` is the JSON text as the model produced it (a
    record of another writer may hold the decoded object instead)."""

    id: str
    name: str
    arguments: Any = "{}"


Part = Union[TextPart, ImagePart, ThinkingPart, ToolCall, OtherPart]
Content = Union[str, "tuple[Part, ...]"]


def content_text(content: Content, joiner: str = "") -> str:
    """The text of `content`: the string, or the text of its text parts joined."""
    if isinstance(content, str):
        return content
    return joiner.join(p.text for p in content if isinstance(p, TextPart))


# --- usage -------------------------------------------------------------------------------

@dataclass(slots=True)
class Usage:
    """Token counts of one model call. Input counts include cached tokens, output counts
    include reasoning tokens."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None  # USD, when the provider reports it
    estimated: bool = False  # counted by kward (chars / 4), not reported by the provider
    extras: Mapping[str, Any] = EMPTY  # other keys of a stored usage object


def usage_plus(a: Usage, b: Usage) -> Usage:
    """The counts and the cost of `a` and `b` added (cost None when neither has one);
    estimated when either is."""
    cost = None if a.cost is None and b.cost is None else (a.cost or 0.0) + (b.cost or 0.0)
    return Usage(a.input_tokens + b.input_tokens, a.output_tokens + b.output_tokens,
                 a.cache_read_tokens + b.cache_read_tokens, a.cache_write_tokens + b.cache_write_tokens,
                 a.reasoning_tokens + b.reasoning_tokens, a.total_tokens + b.total_tokens, cost,
                 a.estimated or b.estimated)


# --- messages ----------------------------------------------------------------------------

@dataclass(slots=True)
class UserMessage:
    content: Content
    display: Content | None = None
    extras: Mapping[str, Any] = EMPTY
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    role = "user"


@dataclass(slots=True)
class AssistantMessage:
    content: Content = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    provider: str | None = None
    model: str | None = None
    interrupted: bool = False
    error: str | None = None
    extras: Mapping[str, Any] = EMPTY
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    other_calls: tuple[ToolCall, ...] = ()

    role = "assistant"

    def shown_calls(self) -> tuple[ToolCall, ...]:
        """The calls a transcript shows: `tool_calls`, else `other_calls`."""
        return self.tool_calls or self.other_calls


@dataclass(slots=True)
class ToolResultMessage:
    tool_call_id: str | None
    name: str | None
    content: Content
    is_error: bool | None = None
    extras: Mapping[str, Any] = EMPTY
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    other_call_id: str | None = None
    other_name: str | None = None

    role = "tool"

    def shown_call_id(self) -> str | None:
        """The id of the call this answers as a transcript shows it."""
        return self.tool_call_id if self.tool_call_id is not None else self.other_call_id

    def shown_name(self) -> str | None:
        """The tool's name as a transcript shows it."""
        return self.name or self.other_name


@dataclass(slots=True)
class CompactionSummary:
    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: object = None
    from_hook: bool | None = None
    details: object = None  # {read_files, modified_files}
    extras: Mapping[str, Any] = EMPTY
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    role = "compactionSummary"


@dataclass(slots=True)
class SystemMessage:
    content: Content
    role: str = "system"  # or "developer" (other writers)
    extras: Mapping[str, Any] = EMPTY
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class OtherMessage:
    """A message of a role kward does not know (`role` "" when it is not a string)."""

    role: str
    content: Content = ""
    extras: Mapping[str, Any] = EMPTY
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)


Message = Union[UserMessage, AssistantMessage, ToolResultMessage, CompactionSummary, SystemMessage, OtherMessage]
MESSAGE_TYPES = (UserMessage, AssistantMessage, ToolResultMessage, CompactionSummary, SystemMessage, OtherMessage)


def message_id(message: Message) -> object:
    """The message's own id (v2 files stamp one), or None."""
    return message.extras.get("id")


# --- tools -------------------------------------------------------------------------------

#: Prefixes that make a tool result text an error (the original's rule).
ERROR_PREFIXES = ("Error:", "Declined:", "Cancelled.")


def is_error_text(text: str) -> bool:
    """True when a tool result text counts as an error (`Error:`, `Declined:`, `Cancelled.`)."""
    return text.startswith(ERROR_PREFIXES)


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a tool call created, modified or deleted in the workspace.

    `path` is relative to the workspace root, ``/``-separated; `status` is ``added``,
    ``modified`` or ``deleted``; `before` the file's content before this change when it is
    known (``b""`` for an added file; None: not known, e.g. too large or not captured).
    """

    path: str
    status: str
    before: bytes | None = None


@dataclass(slots=True)
class ToolResult:
    """One tool outcome.

    `content` is what the model sees. `is_error` follows the original's rule
    (`is_error_text`) except for `Unknown tool: <name>`, which is an error
    too. `diff` is the unified diff of a write/edit (possibly truncated), `changed_files`
    the paths written (as the model gave them), `images` image parts (always empty for the
    built-in tools), `changes` the workspace files the call changed with their status
    (`FileChange`; what turnDiff and sessions/diff are made of), `changes_complete` False
    when `changes` may miss files (a shell command's detection was capped or failed).
    """

    content: str
    is_error: bool = False
    diff: str | None = None
    changed_files: Sequence[str] | None = None
    images: tuple[ImagePart, ...] = ()
    changes: tuple[FileChange, ...] = ()
    changes_complete: bool = True

    @classmethod
    def text(cls, content: str, **kw: Any) -> "ToolResult":
        """A result whose error flag is derived from the content prefix."""
        return cls(content, is_error_text(content), **kw)

    @classmethod
    def error(cls, message: str) -> "ToolResult":
        """``Error: <message>``."""
        return cls(f"Error: {message}", True)

    def scrubbed(self, scrub: Callable[[str], str] | None) -> "ToolResult":
        """This result with `scrub` applied to the text the model and the client see."""
        if scrub is None:
            return self
        diff = None if self.diff is None else scrub(self.diff)
        return ToolResult(scrub(self.content), self.is_error, diff, self.changed_files, self.images, self.changes,
                          self.changes_complete)


# --- turn events -------------------------------------------------------------------------

@dataclass(slots=True)
class Status:
    """turnQueued, turnStarted."""

    status: str


@dataclass(slots=True)
class Delta:
    """assistantDelta, reasoningDelta."""

    text: str


@dataclass(slots=True)
class RetryInfo:
    """modelRetry: a model request is retried."""

    provider: str
    model: str
    attempt: int  # the attempt about to be made (2 for the first retry)
    max_attempts: int
    delay_seconds: float
    error: str  # redacted, human readable


@dataclass(slots=True)
class ToolOutcome:
    """toolResult: a call and its result."""

    call: ToolCall
    result: ToolResult


@dataclass(slots=True)
class ToolProgress:
    """toolUpdate: live output of a running tool call (`kward.tools.live` coalesces it).

    `stream` is ``stdout`` or ``stderr``; `delta` the text since the previous update of
    the call; `content` the tail of the whole output so far (for clients that redraw);
    `omitted_bytes` the output left out so far (the per-call byte budget ran out), set
    on the last update of a call; `progress` and `total` the figures of a progress report
    (an MCP tool's ``notifications/progress``, whose message is the `delta`), else None."""

    call: ToolCall
    stream: str
    delta: str
    content: str
    omitted_bytes: int = 0
    progress: float | None = None
    total: float | None = None


#: Why a compaction ran: asked for (sessions/compact, /compact), or automatic.
CompactionReason = Literal["manual", "threshold", "overflow"]
#: A changed file's net status against its baseline.
DiffStatus = Literal["added", "deleted", "modified"]
#: Why a changed file's diff is not in a change summary's text.
DiffOmitted = Literal["binary", "tooLarge", "unknownBaseline", "notRegularFile", "unreadable", "capped"]


@dataclass(frozen=True, slots=True)
class DiffFile:
    """One file of a `ChangeSummary`: its net `status` (``added``, ``modified`` or
    ``deleted``) against the baseline, the lines `added` and `removed` (None when not known:
    a binary file, an unknown baseline, a file too large or not a regular file), `binary`,
    and `omitted`: why its diff is not in the summary's diff text (None: it is), one of
    ``binary``, ``tooLarge``, ``unknownBaseline``, ``notRegularFile``, ``unreadable``,
    ``capped``."""

    path: str
    status: DiffStatus
    added: int | None
    removed: int | None
    binary: bool = False
    omitted: DiffOmitted | None = None


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    """turnDiff (and sessions/diff): the files changed against their baseline, one
    unified `diff` of the text files (`truncated` when the caps left something out, said
    in `note`), `complete` False when a tool's list of the files it changed may have
    missed some (said in `note` too) (`kward.agent.diffs`)."""

    files: tuple[DiffFile, ...] = ()
    diff: str = ""
    truncated: bool = False
    note: str | None = None
    complete: bool = True


@dataclass(slots=True)
class Steered:
    """turnSteered: input that joined the running turn."""

    input: str
    created_at: str


@dataclass(slots=True)
class Answer:
    """answer: the turn's final text."""

    content: str


@dataclass(slots=True)
class TurnError:
    """error, and turnFinished's `error`: why a turn failed. `code` is the error's class
    name, `reason` its stable slug, `data` its extra fields."""

    message: str
    code: str
    reason: str
    data: Mapping[str, Any] | None = None


@dataclass(slots=True)
class Finished:
    """turnFinished: the final status (and the error of a failed turn)."""

    status: str
    error: TurnError | None = None


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction did (the `sessions/compact` result, and compactionEnd's)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, list[str]]
    tokens_after: int = 0  # the estimate of the compacted context
    split_turn: bool = False


@dataclass(frozen=True, slots=True)
class CompactionStart:
    """compactionStart (a turn event, and a session event of `kward.compaction.events`):
    `reason` is manual, threshold or overflow."""

    reason: CompactionReason


@dataclass(frozen=True, slots=True)
class CompactionEnd:
    """compactionEnd: the result, or `aborted` with the error's message; `will_retry`
    when the model request that overflowed is sent again."""

    result: CompactionResult | None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    error: KwardError | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ApprovalAsked:
    """approvalRequested: a mutating tool call waits for the client's decision
    (`kward.agent.approval`); `request_id` is the server request that asks."""

    call: ToolCall
    request_id: str
    preview: Mapping[str, Any]


ApprovalDecision = Literal["approve", "approveForSession", "decline"]
ApprovalOutcome = Literal["answered", "session", "readOnly", "unsupported", "timedOut", "canceled", "clientGone",
                          "invalidReply"]


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """approvalResolved: what became of a gated tool call. `decision` is approve,
    approveForSession or decline; `outcome` how it was reached: ``answered`` (the client),
    ``session`` (approved for the session earlier), ``readOnly`` (the policy),
    ``unsupported`` (the client cannot answer), ``timedOut``, ``canceled``, ``clientGone``
    or ``invalidReply``."""

    call: ToolCall
    decision: ApprovalDecision
    reason: str | None
    outcome: ApprovalOutcome


#: The payload class of each event type (toolCall: ToolCall, assistantMessage:
#: AssistantMessage, turnCancelRequested: None).
EventPayload = Union[Status, Delta, AssistantMessage, RetryInfo, ToolCall, ToolOutcome, ToolProgress, Steered, Answer,
                     TurnError, Finished, ChangeSummary, CompactionStart, CompactionEnd, ApprovalAsked,
                     ApprovalDecided, None]


@dataclass(slots=True)
class TurnEvent:
    """One event of a turn, as its EventLog sequenced it (`kward.agent.eventlog`)."""

    sequence: int
    timestamp: str
    session_id: str
    turn_id: str
    type: str
    payload: EventPayload
