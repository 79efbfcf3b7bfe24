"""One compaction of an open session: plan the cut, ask the model for the checkpoint,
append the `compaction` record.

`plan` refuses with `AlreadyCompacted` (the last entry is a summary) or
`NothingToCompact` (no entries, or everything after the last summary fits in
`keep_recent_tokens`). `compact` then calls the summarizer (`Summarize`: one model call
without tools, its answer text and usage back) once for the summarized part, and once more for the
prefix of a split turn (appended after ``---`` / ``**Turn Context (split turn):**``),
rewrites the Files & Code lists from the tracked tool calls (`kward.compaction.files`) and
appends ``{type:"compaction", message:{role:"compactionSummary", summary,
first_kept_entry_id, tokens_before, from_hook:false, details:{read_files,
modified_files}, summarizer_usage?}}}`` (`summarizer_usage`: the summed usage its calls
reported, counted in the session's totals). Appending applies the record as a reload would
(`kward.sessions.replay`): the live conversation becomes the summary plus the kept
messages, and the read-before-write state is cleared. Any failure before the append
(the model's error, an empty summary, cancellation) leaves the session unchanged.

`run` wraps `compact` in the `compactionStart` / `compactionEnd` session events (through
`events(type, payload)`, a `CompactionEmit`; none when the plan refuses).

Thread contract: called on a worker thread by a caller that holds the session's turn
lock (no turn appends meanwhile); blocks for the model calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, NamedTuple, Sequence

from kward.cancel import CancelToken
from kward.compaction.cut import Cut, branch_start, find_cut, kept_entry_id
from kward.compaction.estimate import KEPT_MESSAGES, context_tokens
from kward.compaction.events import (
    CompactionEmit,
    CompactionEnd,
    CompactionResult,
    CompactionStart,
)
from kward.compaction.files import file_details, rewrite_files
from kward.compaction.prompt import (
    SPLIT_SEPARATOR,
    SYSTEM_PROMPT,
    Profile,
    split_request,
    summary_request,
)
from kward.compaction.serialize import serialize
from kward.config.settings import CompactionSettings
from kward.errors import (
    AlreadyCompacted,
    EmptySummary,
    InternalError,
    KwardError,
    NothingToCompact,
)
from kward.model import AssistantMessage, CompactionReason, CompactionSummary, Message, Usage, UserMessage, usage_plus
from kward.providers.base import ModelRequest, Provider, QuietSink
from kward.providers.scripted import SUMMARIZED_ASSISTANTS
from kward.sessions.codec import encode, usage_record
from kward.sessions.entries import compacted
from kward.sessions.format import SUMMARIZER_USAGE
from kward.sessions.messages import message_ident, role_of

if TYPE_CHECKING:  # pragma: no cover
    from kward.sessions.handle import SessionHandle

class SummaryAnswer(NamedTuple):
    """One summarizer call's answer: its text and the usage the provider reported (None:
    none)."""

    text: str
    usage: Usage | None = None


#: One summarizer call: (system prompt, user message, max answer tokens) -> its answer.
Summarize = Callable[[str, str, int], SummaryAnswer]

MAIN_SHARE = 0.8  # of reserve_tokens: the main summary's answer cap
SPLIT_SHARE = 0.5  # the split-turn summary's
PROMPT_OVERHEAD_TOKENS = 2_000  # the system prompt and the template
CHARS_PER_TOKEN = 3.5  # a cautious inverse of the chars / 4 estimate, for the prompt budget
MIN_PROMPT_CHARS = 8_000


def prompt_budget(window: int | None, reserve_tokens: int) -> int | None:
    """The characters of conversation one summarizer call may carry in `window` (None:
    no limit, the window is unknown)."""
    if not window:
        return None
    return max(MIN_PROMPT_CHARS, int((window - reserve_tokens - PROMPT_OVERHEAD_TOKENS) * CHARS_PER_TOKEN))




@dataclass(frozen=True)
class Plan:
    entries: Sequence[Message]
    cut: Cut
    previous: CompactionSummary | None
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, list[str]]


def plan(entries: Sequence[Message], settings: CompactionSettings, instructions: str = "") -> Plan:
    """The cut of the live entries (non-system messages) and what the record will say."""
    if not entries:
        raise NothingToCompact()
    if isinstance(entries[-1], CompactionSummary):
        raise AlreadyCompacted()
    start, previous = branch_start(entries)
    cut = find_cut(entries, start, settings.keep_recent_tokens)
    if cut is None or (not cut.summarized(entries) and not cut.turn_prefix(entries)):
        raise NothingToCompact()
    replaced = cut.summarized(entries) + cut.turn_prefix(entries)
    return Plan(entries, cut, previous, kept_entry_id(entries, cut.first_kept), context_tokens(entries, instructions),
                file_details(replaced, previous.details if previous is not None else None))


def _call(summarize: Summarize, system: str, user: str, max_tokens: int, spent: list[Usage]) -> str:
    """The answer's text (EmptySummary when there is none); its usage goes to `spent`."""
    answer = summarize(system, user, max_tokens)
    if answer.usage is not None:
        spent.append(answer.usage)
    text = (answer.text or "").strip()
    if not text:
        raise EmptySummary()
    return text


def summary_text(p: Plan, summarize: Summarize, profile: Profile, settings: CompactionSettings,
                 focus: str | None = None, window: int | None = None,
                 spent: list[Usage] | None = None) -> str:
    """The checkpoint of the plan: the model's summary (and split-turn summary), with the
    Files & Code lists rewritten. The conversation each call carries is cut (oldest
    first) to what fits `window` (`prompt_budget`). The usage of each call goes to `spent`."""
    spent = [] if spent is None else spent
    entries, cut = p.entries, p.cut
    main_cap = max(1, int(settings.reserve_tokens * MAIN_SHARE))
    split_cap = max(1, int(settings.reserve_tokens * SPLIT_SHARE))
    previous = p.previous.summary if p.previous is not None else None
    prefix = cut.turn_prefix(entries)
    summarized = cut.summarized(entries)
    budget = prompt_budget(window, settings.reserve_tokens)
    main_budget = None if budget is None else max(MIN_PROMPT_CHARS, budget - len(previous or ""))
    if summarized or previous or not prefix:
        text = _call(summarize, SYSTEM_PROMPT,
                     summary_request(serialize(summarized, main_budget), profile, previous, focus), main_cap, spent)
        if prefix:
            text += SPLIT_SEPARATOR + _call(summarize, SYSTEM_PROMPT,
                                            split_request(serialize(prefix, budget), profile), split_cap, spent)
    else:  # the cut turn is all there is to summarize
        text = _call(summarize, SYSTEM_PROMPT, split_request(serialize(prefix, budget), profile), split_cap, spent)
    text = rewrite_files(text, p.details).strip()
    if not text:
        raise EmptySummary()
    return text


def compact(session: SessionHandle, summarize: Summarize, settings: CompactionSettings, profile: Profile, *,
            instructions: str = "", focus: str | None = None, window: int | None = None) -> CompactionResult:
    """Compact the session (see the module docstring); the session is unchanged on error.
    `window`: the model's context window (settings' `context_window` wins), if known."""
    entries = session.entry_messages()
    p = plan(entries, settings, instructions)
    spent: list[Usage] = []
    text = summary_text(p, summarize, profile, settings, focus, settings.context_window or window, spent)
    replaced = p.cut.summarized(entries) + p.cut.turn_prefix(entries)
    kept = list(entries[p.cut.first_kept:])
    assistants = sum(1 for m in replaced if isinstance(m, AssistantMessage))
    if p.previous is not None:
        earlier = p.previous.extras.get(SUMMARIZED_ASSISTANTS)
        assistants += earlier if isinstance(earlier, int) and not isinstance(earlier, bool) else 0
    details = {"read_files": list(p.details["read_files"]), "modified_files": list(p.details["modified_files"])}
    extras: dict[str, object] = {SUMMARIZED_ASSISTANTS: assistants, KEPT_MESSAGES: len(kept)}
    if spent:
        total = Usage()
        for usage in spent:
            total = usage_plus(total, usage)
        extras[SUMMARIZER_USAGE] = usage_record(total)
    summary = CompactionSummary(text, p.first_kept_entry_id, p.tokens_before, False, details, extras=extras)
    if compacted(entries, summary, p.first_kept_entry_id, role_of, message_ident) != [summary] + kept:
        raise InternalError("Compaction could not name the first kept message unambiguously; "
                            "context was not changed.")  # e.g. two messages with one id
    session.append_record("compaction", message=encode(summary))
    return CompactionResult(text, p.first_kept_entry_id, p.tokens_before, details,
                            context_tokens([summary] + kept, instructions), p.cut.split_turn)


def run(session: SessionHandle, summarize: Summarize, settings: CompactionSettings, profile: Profile,
        events: CompactionEmit, *, reason: CompactionReason, instructions: str = "", focus: str | None = None,
        will_retry: bool = False, window: int | None = None) -> CompactionResult:
    """`compact` between compactionStart and compactionEnd (a refused plan raises before
    any event). Raises what `compact` raised, after an aborted compactionEnd."""
    plan(session.entry_messages(), settings, instructions)  # refuse before announcing anything
    events("compactionStart", CompactionStart(reason))
    try:
        result = compact(session, summarize, settings, profile, instructions=instructions, focus=focus,
                         window=window)
    except BaseException as exc:
        error = exc if isinstance(exc, KwardError) else None
        message = error.message if error is not None else f"Internal error: {type(exc).__name__}"
        events("compactionEnd", CompactionEnd(None, True, False, message, error))
        raise
    events("compactionEnd", CompactionEnd(result, False, will_retry))
    return result


def model_summarizer(provider: Provider, model: str, cancel: CancelToken, *, reasoning_effort: str | None = None,
                     headers: dict[str, str] | None = None, session_key: str | None = None) -> Summarize:
    """A `Summarize` over a provider: the active model, no tools."""

    def summarize(system: str, user: str, max_tokens: int) -> SummaryAnswer:
        request = ModelRequest(instructions=system, messages=[UserMessage(user)], tools=[], model=model,
                               reasoning_effort=reasoning_effort, headers=dict(headers or {}),
                               session_id=session_key, purpose="compaction", max_output_tokens=max_tokens)
        response = provider.complete(request, QuietSink(), cancel)
        return SummaryAnswer(response.text, response.usage)

    return summarize
