"""The Scripted provider: an offline, deterministic "model" that plays a script.

It is a real provider behind the same interface as the HTTP ones, for UI development and
demos with no account and no network. The script format is documented in
docs/scripted.md. In short, a JSON file holds `{"steps": [...], "loop": false}`; each model
call plays one step, chosen by how many assistant messages the conversation already holds
(so a tool call and the answer after it are consecutive steps, and a resumed session goes
on where it stopped). A step is a list of events (or `{"events": [...], "usage": {...}}`):

    {"type": "reasoning", "text": "...", "repeat": 1, "interval": 0}
    {"type": "text", "text": "...", "repeat": 1, "interval": 0}
    {"type": "toolCall", "name": "read_file", "arguments": {...} | "raw json", "id": "call_1"}
    {"type": "delay", "seconds": 0.5}
    {"type": "retry", "delaySeconds": 1, "error": "429 Too Many Requests"}
    {"type": "error", "message": "...", "kind": "server", "status": 500}
    {"type": "waitForSteer", "timeout": 30}

A compaction's summarizer call (`ModelRequest.purpose` "compaction") plays the script's
`"compaction"` step instead (same format; every summarizer call plays it), or, without
one, writes a short checkpoint of its own from the conversation it was given. After a
compaction the step count goes on where it was: a summary carries how many assistant
messages it replaced (`SUMMARIZED_ASSISTANTS`).

Fields are type-checked when the script loads (a null field counts as absent) into a
frozen `Script` of `Step`s (each event stays the checked JSON object); a script that is
not JSON or breaks the format fails the turn with a ScriptError naming the file, the step,
the event and the problem.

Without a script it runs a built-in demo that explores the workspace with the real tools
(list the root, read a README-like file) and summarizes what it found.

Thread contract: `complete` runs on the calling turn's thread; the provider holds no
mutable state after construction, so sessions may share it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from kward.cancel import CancelToken
from kward.errors import CONFIG_ERROR, Canceled
from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Message,
    TextPart,
    ToolCall,
    Usage,
    UserMessage,
    content_text,
)
from kward.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    ProviderSetup,
    RetryInfo,
    StreamSink,
)
from kward.providers.catalog import ModelEntry
from kward.providers.scripted_demo import demo_events

NAME = "Scripted"
DEMO_MODEL = "scripted-demo"
CONTEXT_WINDOW = 200_000  # the nominal window of the scripted "model" (for context-usage figures)
EVENT_TYPES = {"reasoning", "text", "toolCall", "delay", "retry", "error", "waitForSteer"}
_CHECK_EVERY = 256  # deltas between cancellation checks in a repeat run

#: One event of a step: the script's JSON object, its fields checked by `validate_script`.
ScriptEvent = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """What one model call plays: its events, and the usage it reports (the fields of
    `_USAGE_FIELDS` it sets; None: estimated from the characters)."""

    events: tuple[ScriptEvent, ...]
    usage: Mapping[str, float] | None = None


@dataclass(frozen=True, slots=True)
class Script:
    """A checked script: the steps in order, whether they start over past the last one,
    the model name it declares, and the step a compaction's summarizer call plays."""

    steps: tuple[Step, ...]
    loop: bool = False
    model: str | None = None
    compaction: Step | None = None


class ScriptError(ProviderError):
    """The script file is unreadable or malformed: a configuration problem (-32002,
    reason invalid_config), reported by every request that needs the provider."""

    code = CONFIG_ERROR

    def __init__(self, message: str):
        super().__init__(message, provider=NAME, kind="bad_request", reason="invalid_config")


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file; ScriptError names the file and the problem."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"Cannot read Scripted provider script {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ScriptError(f"Scripted provider script {path} is not valid JSON: {exc}") from None
    return validate_script(data, str(path))


def _count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _integer(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _seconds(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def _string(v: object) -> bool:
    return isinstance(v, str)


def _arguments(v: object) -> bool:
    return isinstance(v, (dict, str))


# Optional fields of each event type and what they must hold (checked when the script loads).
_FIELDS: dict[str, dict[str, str]] = {
    "reasoning": {"repeat": "count", "interval": "seconds"}, "text": {"repeat": "count", "interval": "seconds"},
    "toolCall": {"arguments": "arguments", "id": "string"},
    "delay": {"seconds": "seconds"}, "waitForSteer": {"timeout": "seconds"},
    "retry": {"delaySeconds": "seconds", "attempt": "count", "maxAttempts": "count", "error": "string"},
    "error": {"message": "string", "kind": "string", "status": "integer"},
}
_KINDS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "count": ("a positive integer", _count),
    "integer": ("an integer", _integer),
    "seconds": ("a number >= 0", _seconds),
    "string": ("a string", _string),
    "arguments": ("an object or a JSON string", _arguments),
}
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
                 "total_tokens", "cost")


def validate_script(data: object, where: str = "script") -> Script:
    """Check a decoded script; ScriptError names `where`, the step, the event and the problem."""
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise ScriptError(f"{where}: expected an object with a non-empty \"steps\" array")
    steps = []
    for i, step in enumerate(data["steps"]):
        if isinstance(step, list):
            step = {"events": step}
        if not isinstance(step, dict) or not isinstance(step.get("events"), list):
            raise ScriptError(f"{where}: steps[{i}] must be an array of events or {{\"events\": [...]}}")
        usage = step.get("usage")
        if usage is not None and not (isinstance(usage, dict) and all(
                _seconds(usage[k]) for k in _USAGE_FIELDS if k in usage)):
            raise ScriptError(f"{where}: steps[{i}].usage must be an object of numbers >= 0 "
                              f"({', '.join(_USAGE_FIELDS)})")
        events = _events(step["events"], f"{where}: steps[{i}]")
        steps.append(Step(events, None if usage is None else {k: usage[k] for k in _USAGE_FIELDS if k in usage}))
    compaction = data.get("compaction")
    if compaction is not None:
        if isinstance(compaction, list):
            compaction = {"events": compaction}
        if not isinstance(compaction, dict) or not isinstance(compaction.get("events"), list):
            raise ScriptError(f"{where}: \"compaction\" must be an array of events or {{\"events\": [...]}}")
        compaction = Step(_events(compaction["events"], f"{where}: compaction"))
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise ScriptError(f"{where}: \"model\" must be a string, not {model!r}")
    return Script(tuple(steps), bool(data.get("loop", False)), model, compaction)


def _events(events: list[object], at: str) -> tuple[ScriptEvent, ...]:
    """The checked events of a step (`at` names the step)."""
    return tuple(_checked_event(event, f"{at}.events[{j}]") for j, event in enumerate(events))


def _opt(event: ScriptEvent, name: str, default: Any) -> Any:
    """An optional event field (validated by `_checked_event`); null means absent."""
    value = event.get(name)
    return default if value is None else value


def _checked_event(event: object, at: str) -> ScriptEvent:
    kind = event.get("type") if isinstance(event, dict) else None
    if not isinstance(event, dict) or not isinstance(kind, str) or kind not in EVENT_TYPES:
        raise ScriptError(f"{at} has unknown type {kind!r}; expected one of {', '.join(sorted(EVENT_TYPES))}")
    if kind == "toolCall" and not isinstance(event.get("name"), str):
        raise ScriptError(f"{at} (toolCall) needs a \"name\"")
    if kind in ("reasoning", "text") and not isinstance(event.get("text"), str):
        raise ScriptError(f"{at} ({kind}) needs a \"text\" string")
    for name, rule in _FIELDS[kind].items():
        if event.get(name) is not None and not _KINDS[rule][1](event[name]):
            raise ScriptError(f"{at} ({kind}) \"{name}\" must be {_KINDS[rule][0]}, not {event[name]!r}")
    return event


def message_chars(message: Message) -> int:
    """The characters a message gives the model (its text, reasoning, tool calls, result or
    summary): what the estimated usage counts, chars / 4."""
    if isinstance(message, CompactionSummary):
        return len(message.summary)
    content = message.content
    size = len(content) if isinstance(content, str) else sum(len(p.text) for p in content if isinstance(p, TextPart))
    if isinstance(message, AssistantMessage):
        size += len(message.reasoning or "") + sum(len(c.name or "") + len(str(c.arguments))
                                                   for c in message.tool_calls)
    return size


#: The key of a compaction summary (an extra field of its record) holding how many
#: assistant messages it replaced, earlier summaries' included.
SUMMARIZED_ASSISTANTS = "summarized_assistant_messages"


def assistant_count(messages: list[Message]) -> int:
    """Assistant messages of the conversation, those compacted into a summary included."""
    count = 0
    for m in messages:
        if isinstance(m, AssistantMessage):
            count += 1
        elif isinstance(m, CompactionSummary):
            replaced = m.extras.get(SUMMARIZED_ASSISTANTS)
            count += replaced if isinstance(replaced, int) and not isinstance(replaced, bool) else 0
    return count


def checkpoint_step(messages: list[Message]) -> Step:
    """The built-in answer to a summarizer call: a checkpoint naming the first request and
    how much was summarized (the caller fills in the files)."""
    last = messages[-1] if messages else None
    prompt = content_text(last.content) if isinstance(last, UserMessage) else ""
    lines = prompt.split("\n")
    first = next((line[len("[User]: "):] for line in lines if line.startswith("[User]: ")), "")
    answers = sum(1 for line in lines if line.startswith("[Assistant"))
    goal = " ".join(first.split())[:200] or "(unknown)"
    text = (f"## Goal\n- {goal}\n\n## Progress\n### Done\n- [x] {answers} assistant entries summarized "
            "(Scripted checkpoint)\n\n## Files & Code\n### Read\n\n### Modified\n\n## Next Steps\n"
            "1. Continue from the kept messages.")
    return Step(({"type": "text", "text": text},))


def model_entry(model_id: str) -> ModelEntry:
    """The catalog entry of the scripted model: its nominal context window, levels unknown."""
    return ModelEntry(NAME, model_id, model_id, CONTEXT_WINDOW, None, None)


class ScriptedProvider(Provider):
    name = NAME
    supports_steering = True

    def __init__(self, script: Script | None = None):
        self.script = script
        self.model = (script.model if script else None) or ("scripted" if script else DEMO_MODEL)

    @classmethod
    def create(cls, setup: ProviderSetup) -> ScriptedProvider:
        """Built by selection: the script of option `scripted_script` (KWARD_SCRIPT wins),
        read and checked now (ScriptError), else the demo."""
        path = setup.options.get("scripted_script")
        return cls(load_script(path) if path else None)

    def complete(self, request: ModelRequest, sink: StreamSink, cancel: CancelToken) -> ModelResponse:
        cancel.raise_if_cancelled()
        if request.purpose == "compaction":
            step = (self.script.compaction if self.script else None) or checkpoint_step(request.messages)
        elif self.script is None:
            step = Step(tuple(demo_events(request.messages)))
        else:
            step = self._step(self.script, request.messages)
        return _Player(self, request, sink, cancel).play(step)

    @staticmethod
    def _step(script: Script, messages: list[Message]) -> Step:
        steps = script.steps
        index = assistant_count(messages)
        if index >= len(steps):
            if not script.loop:
                raise ProviderError(f"The script has no step {index + 1} (it has {len(steps)}); "
                                    "add steps or set \"loop\": true", provider=NAME, kind="bad_request")
            index %= len(steps)
        return steps[index]


class _Player:
    """Plays one step for one request. Lives on the turn's thread for one call."""

    def __init__(self, provider: ScriptedProvider, request: ModelRequest, sink: StreamSink, cancel: CancelToken):
        self.provider = provider
        self.request = request
        self.sink = sink
        self.cancel = cancel
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []

    def play(self, step: Step) -> ModelResponse:
        for event in step.events:
            self.cancel.raise_if_cancelled()
            match event["type"]:
                case "reasoning":
                    self._deltas(event, self.reasoning, self.sink.reasoning_delta)
                case "text":
                    self._deltas(event, self.text, self.sink.text_delta)
                case "toolCall":
                    self._tool_call(event)
                case "delay":
                    self._delay(float(_opt(event, "seconds", 0)))
                case "retry":
                    self._retry(event)
                case "error":
                    self._error(event)
                case "waitForSteer":
                    self._wait_for_steer(event)
        self.cancel.raise_if_cancelled()
        text, reasoning = "".join(self.text), "".join(self.reasoning)
        return ModelResponse(text=text, reasoning=reasoning, tool_calls=self.calls,
                             usage=self._usage(step.usage, text, reasoning),
                             provider=NAME, model=self.request.model or self.provider.model)

    def _deltas(self, event: ScriptEvent, out: list[str], emit: Callable[[str], None]) -> None:
        text, repeat = event["text"], _opt(event, "repeat", 1)
        interval = float(_opt(event, "interval", 0))
        for i in range(repeat):
            if interval and i and self.cancel.wait(interval):  # paced like a model's stream
                raise Canceled("Canceled.")
            if i % _CHECK_EVERY == 0:
                self.cancel.raise_if_cancelled()
            out.append(text)
            emit(text)

    def _tool_call(self, event: ScriptEvent) -> None:
        args = _opt(event, "arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        call_id = event.get("id") or f"call_{len(self.calls) + 1}_{os.urandom(4).hex()}"
        self.calls.append(ToolCall(id=str(call_id), name=event["name"], arguments=raw))

    def _delay(self, seconds: float) -> None:
        if self.cancel.wait(seconds):
            raise Canceled("Canceled.")

    def _retry(self, event: ScriptEvent) -> None:
        delay = float(_opt(event, "delaySeconds", 0))
        self.sink.retry(RetryInfo(provider=NAME, model=self.request.model or self.provider.model,
                                  attempt=_opt(event, "attempt", 2), max_attempts=_opt(event, "maxAttempts", 3),
                                  delay_seconds=delay, error=_opt(event, "error", "Scripted transient error")))
        self._delay(delay)

    def _error(self, event: ScriptEvent) -> None:
        raise ProviderError(_opt(event, "message", "Scripted provider error"), provider=NAME,
                            kind=_opt(event, "kind", "server"), status=event.get("status"))

    def _wait_for_steer(self, event: ScriptEvent) -> None:
        steering = self.request.steering
        if steering is None:
            return

        def wake() -> None:  # a cancel closes the inbox, which ends the wait
            steering.close()

        unregister = self.cancel.on_cancel(wake)
        try:
            steering.wait(float(_opt(event, "timeout", 30)))
        finally:
            unregister()
        self.cancel.raise_if_cancelled()

    def _usage(self, declared: Mapping[str, float] | None, text: str, reasoning: str) -> Usage:
        if declared is not None:
            return _declared_usage(declared)
        prompt_chars = len(self.request.instructions) + sum(message_chars(m) for m in self.request.messages)
        output = (len(text) + len(reasoning) + sum(len(c.arguments) for c in self.calls)) // 4
        return Usage(input_tokens=prompt_chars // 4, output_tokens=output, reasoning_tokens=len(reasoning) // 4,
                     total_tokens=prompt_chars // 4 + output, estimated=True)


def _declared_usage(declared: Mapping[str, float]) -> Usage:
    """The usage a step declares; a missing count is 0, a missing total the sum of input and output."""
    counts = {name: int(declared.get(name, 0)) for name in _USAGE_FIELDS if name != "cost"}
    return Usage(input_tokens=counts["input_tokens"], output_tokens=counts["output_tokens"],
                 cache_read_tokens=counts["cache_read_tokens"], cache_write_tokens=counts["cache_write_tokens"],
                 reasoning_tokens=counts["reasoning_tokens"],
                 total_tokens=counts["total_tokens"] or counts["input_tokens"] + counts["output_tokens"],
                 cost=float(declared["cost"]) if "cost" in declared else None)
