"""The conversation as the summarizer reads it (the original's serialization).

One block per message, blocks separated by a blank line:

- user: ``[User]: <text>`` (images as ``[mime: path]``);
- assistant: ``[Assistant reasoning]: ...``, ``[Assistant]: <text>``, ``[Assistant tool
  calls]: name(key=<json>, ...); ...`` (a shell call as ``run_shell_command(command=<json>)``);
  ``[Assistant]:`` when it holds none of these;
- tool result: ``[Bash]: <command>`` + ``[Output]: <output>`` for the shell, else
  ``[Tool result <name>]: <output>``; output longer than 2,000 characters is cut, with
  ``...[truncated N bytes]``;
- a compaction summary: ``[Branch summary/context]: <summary>``; another role:
  ``[<role>]: <text>``.

With a `max_chars` budget (what fits the summarizer's context window), the oldest blocks
are left out and ``[... N earlier messages left out to fit the summarizer's context
window ...]`` takes their place.

Pure functions: any thread.
"""

from __future__ import annotations

import json
from typing import Sequence

from kward.model import (
    AssistantMessage,
    CompactionSummary,
    Content,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from kward.toolcalls import parse_arguments

TOOL_OUTPUT_LIMIT = 2_000
SHELL = "run_shell_command"


def content_text(content: Content) -> str:
    if isinstance(content, str):
        return content
    lines = []
    for part in content:
        if isinstance(part, TextPart):
            lines.append(part.text)
        elif isinstance(part, ImagePart):
            lines.append(f"[{part.mime_type or 'image'}{': ' + part.path if part.path else ''}]")
    return "\n".join(lines)


def truncate(text: str, limit: int = TOOL_OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n...[truncated {len(text) - limit} bytes]"


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def call_text(call: ToolCall) -> str:
    args = parse_arguments(call.arguments)
    if call.name == SHELL:
        return f"{SHELL}(command={_dump(args.get('command') or '')})"
    if not args:
        return call.name or "unknown_tool"
    return f"{call.name}({', '.join(f'{k}={_dump(v)}' for k, v in args.items())})"


def _reasoning(message: AssistantMessage) -> str:
    if message.reasoning:
        return message.reasoning
    content = message.content
    if isinstance(content, str):
        return ""
    return "\n".join(p.thinking for p in content if isinstance(p, ThinkingPart))


def _assistant(message: AssistantMessage, calls: dict[str | None, ToolCall]) -> str:
    lines = []
    reasoning = _reasoning(message)
    if reasoning:
        lines.append(f"[Assistant reasoning]: {reasoning}")
    text = content_text(message.content)
    if text:
        lines.append(f"[Assistant]: {text}")
    if message.tool_calls:
        for call in message.tool_calls:
            calls[call.id] = call
        lines.append(f"[Assistant tool calls]: {'; '.join(call_text(c) for c in message.tool_calls)}")
    return "\n".join(lines) if lines else "[Assistant]:"


def _result(message: ToolResultMessage, calls: dict[str | None, ToolCall]) -> str:
    call = calls.get(message.tool_call_id)
    name = call.name if call is not None else (message.name or "tool")
    output = truncate(content_text(message.content))
    if name == SHELL:
        command = parse_arguments(call.arguments).get("command") if call is not None else None
        return f"[Bash]: {command if command is not None else ''}\n[Output]: {output}"
    return f"[Tool result {name}]: {output}"


def serialize(messages: Sequence[Message], max_chars: int | None = None) -> str:
    """The messages as one text for the summarizer (see the module docstring)."""
    calls: dict[str | None, ToolCall] = {}
    blocks = []
    for message in messages:
        if isinstance(message, UserMessage):
            blocks.append(f"[User]: {content_text(message.content)}")
        elif isinstance(message, AssistantMessage):
            blocks.append(_assistant(message, calls))
        elif isinstance(message, ToolResultMessage):
            blocks.append(_result(message, calls))
        elif isinstance(message, CompactionSummary):
            blocks.append(f"[Branch summary/context]: {message.summary}")
        else:
            blocks.append(f"[{message.role or 'Message'}]: {content_text(message.content)}")
    if max_chars is not None:
        total = sum(len(b) + 2 for b in blocks)
        dropped = 0
        while blocks and total > max_chars:
            total -= len(blocks[dropped]) + 2
            dropped += 1
            if dropped == len(blocks):
                break
        if dropped:
            note = f"[... {dropped} earlier messages left out to fit the summarizer's context window ...]"
            blocks = [note] + blocks[dropped:]
    return "\n\n".join(blocks)
